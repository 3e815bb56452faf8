"""Backend plugins: entry points, lazy loading, broken plugins, API versions, order."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import tomllib
import types
import warnings
from importlib.metadata import EntryPoint
from pathlib import Path

import numpy as np
import pytest

import hal
from hal.runtime.registry import GROUP, Registry


@pytest.fixture
def plugin_module(monkeypatch):
    """A module of test plugins: good, raising on import-time factory call, wrong version."""
    module = types.ModuleType("hal_test_plugins")

    class Good(hal.Backend):
        name = "good"

        def _open_device(self, index):
            return hal.Device(self, index)

    class Old(Good):
        name = "old"
        api_version = 0

    def broken():
        raise RuntimeError("vendor driver crashed")

    module.Good, module.Old, module.broken = Good, Old, broken
    module.not_a_backend = lambda: object()
    monkeypatch.setitem(sys.modules, "hal_test_plugins", module)
    return module


def _points(**targets):
    return [EntryPoint(name, value, GROUP) for name, value in targets.items()]


def test_good_plugin_loads_lazily(plugin_module):
    registry = Registry(_points(good="hal_test_plugins:Good"))
    assert registry.names() == ["good"]
    assert registry.available() == ["good"]
    assert registry.get("good").open().name == "good:0"


@pytest.mark.parametrize(
    ("target", "words"),
    [
        ("hal_test_plugins:broken", "vendor driver crashed"),
        ("hal_test_plugins:Old", "protocol version 0"),
        ("hal_test_plugins:not_a_backend", "not a Backend"),
        ("hal_test_plugins_missing:Thing", "ModuleNotFoundError"),
    ],
)
def test_broken_plugin_is_a_warning_never_a_crash(plugin_module, target, words):
    registry = Registry(_points(bad=target, good="hal_test_plugins:Good"))
    with pytest.warns(hal.PluginWarning, match="'bad'"):
        assert registry.available() == ["good"]
    assert words in registry.broken()["bad"]
    with pytest.raises(hal.BackendUnavailable, match=words.split()[0]):
        registry.get("bad")


def test_unknown_backend_lists_registered_ones():
    with pytest.raises(hal.BackendUnavailable, match="registered: cpu"):
        hal.backend("tpu")
    with pytest.raises(hal.BackendUnavailable, match="index"):
        hal.device("cpu:x")


def test_hal_backends_sets_the_order(plugin_module, monkeypatch):
    registry = Registry(_points(good="hal_test_plugins:Good", cpu="backends.cpu:CpuBackend"))
    assert registry.names() == ["cpu", "good"]
    monkeypatch.setattr(hal.settings, "backends", ("good",))
    assert registry.names() == ["good", "cpu"]


def test_in_tree_backends_register_through_entry_points():
    assert {"cpu", "null"} <= set(hal.backends())
    assert hal.default_device().name == "cpu:0"
    assert "cpu:0" in hal.devices()


def test_the_default_device_is_cpu_unless_one_is_named(plugin_module, monkeypatch):
    registry = Registry(_points(good="hal_test_plugins:Good", cpu="backends.cpu:CpuBackend"))
    monkeypatch.setattr(hal.runtime.registry, "registry", registry)
    monkeypatch.setattr(hal.runtime.registry, "_default", [])
    monkeypatch.setattr(hal.settings, "device", None)
    monkeypatch.setattr(hal.settings, "backends", ())
    assert hal.default_device().name == "cpu:0" and list(registry._backends) == ["cpu"]
    monkeypatch.setattr(hal.runtime.registry, "_default", [])
    monkeypatch.setattr(hal.settings, "backends", ("good",))
    assert hal.default_device().name == "good:0"


def test_no_default_device_says_to_name_one(plugin_module, monkeypatch):
    monkeypatch.setattr(hal.runtime.registry, "registry",
                        Registry(_points(good="hal_test_plugins:Good")))
    monkeypatch.setattr(hal.runtime.registry, "_default", [])
    monkeypatch.setattr(hal.settings, "device", None)
    monkeypatch.setattr(hal.settings, "backends", ())
    with pytest.raises(hal.BackendUnavailable, match=r"no default device: none of cpu.*HAL_DEV"):
        hal.default_device()


def test_settings_read_the_environment():
    s = hal.settings.from_env({"HAL_BACKENDS": "opencl, cpu", "HAL_FALLBACK": "ERROR",
                               "HAL_CACHE_DIR": "/tmp/x", "HAL_DEVICE": "cpu:0"})
    assert s.backends == ("opencl", "cpu") and s.fallback == "error"
    assert str(s.cache_dir) == "/tmp/x" and s.device == "cpu:0"
    with pytest.raises(hal.HalError, match="HAL_FALLBACK"):
        hal.settings.from_env({"HAL_FALLBACK": "maybe"})
    assert hal.settings.from_env({"HAL_PROBE_TIMEOUT": "2.5"}).probe_timeout == 2.5
    for bad in ("soon", "0", "-1", "nan"):
        with pytest.raises(hal.HalError, match="HAL_PROBE_TIMEOUT"):
            hal.settings.from_env({"HAL_PROBE_TIMEOUT": bad})


# -- plugins cannot take hal down ---------------------------------------------------------------
def _failing_backends():
    """Backend classes that fail in each way a plugin's code can, by the hook that fails."""
    hang = threading.Event()

    class Base(hal.Backend):
        def _open_device(self, index):
            return hal.Device(self, index)

    def raising(exc):
        def hook(self, *args):
            raise exc

        return hook

    def hanging(self, *args):
        hang.wait(30)

    made = {
        "why_raises": {"why_unavailable": raising(RuntimeError("probe crashed"))},
        "why_exits": {"why_unavailable": raising(SystemExit(3))},
        "count_raises": {"device_count": raising(OSError("no /dev/chip"))},
        "open_raises": {"_open_device": raising(ValueError("firmware mismatch"))},
        "why_hangs": {"why_unavailable": hanging},
        "count_hangs": {"device_count": hanging},
    }
    return {name: type(name, (Base,), {"name": name, **hooks}) for name, hooks in made.items()}


WHY = {"why_raises": "probe crashed", "why_exits": "SystemExit", "count_raises": "no /dev/chip",
       "open_raises": "firmware mismatch", "why_hangs": "did not answer within 0.2 s",
       "count_hangs": "did not answer within 0.2 s"}


@pytest.fixture
def failing(monkeypatch):
    """A registry of cpu and one plugin per failure mode, installed as hal's registry."""
    module = types.ModuleType("hal_failing_plugins")
    classes = _failing_backends()
    for name, cls in classes.items():
        setattr(module, name, cls)
    module.exits_at_import = lambda: sys.exit("plugin called sys.exit at import")
    monkeypatch.setitem(sys.modules, "hal_failing_plugins", module)
    monkeypatch.setattr(hal.settings, "probe_timeout", 0.2)
    points = _points(cpu="backends.cpu:CpuBackend",
                     exits_at_import="hal_failing_plugins:exits_at_import",
                     **{name: f"hal_failing_plugins:{name}" for name in classes})
    registry = Registry(points)
    monkeypatch.setattr(hal.runtime.registry, "registry", registry)
    monkeypatch.setattr(hal.runtime.registry, "_default", [])
    monkeypatch.setattr(hal.settings, "backends", tuple(sorted(classes)))  # ahead of cpu
    return registry


def test_failing_plugins_are_warnings_and_unavailable_rows(failing, capsys):
    from hal.cli import main

    with pytest.warns(hal.PluginWarning) as caught:
        assert failing.available() == ["open_raises", "cpu"]  # opening is not probed
        assert main(["devices", "--json"]) == 0
    rows = {r["backend"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["cpu"]["available"] and rows["cpu"]["devices"]
    for name, words in WHY.items():
        assert not rows[name]["available"] and words in rows[name]["reason"], name
    assert "sys.exit at import" in rows["exits_at_import"]["reason"]
    warned = " ".join(str(w.message) for w in caught)
    assert all(f"'{name}'" in warned for name in ("why_raises", "why_hangs", "exits_at_import"))


def test_default_device_skips_a_backend_that_fails_to_open(failing):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hal.PluginWarning)
        failing.available()  # the failing probes are warned about (and remembered) here
    with pytest.warns(hal.PluginWarning, match="open_raises:0 was skipped"):
        assert hal.default_device().name == "cpu:0"
    np.testing.assert_array_equal(hal.add(hal.ones(3), hal.ones(3)).numpy(), [2.0, 2.0, 2.0])


def test_conformance_and_bench_devices_go_on_past_failing_plugins(failing, capsys):
    from benchmarks.plan import resolve_devices
    from hal.cli import main

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hal.PluginWarning)
        assert main(["conformance", "--backend", "cpu", "--ops", "add", "--dtypes", "float32",
                     "--examples", "2", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)[0]["backend"] == "cpu"
        assert "cpu:0" in resolve_devices([])


def test_the_conformance_kit_uses_the_registry_in_place_when_it_runs(plugin_module, monkeypatch):
    from hal.conformance.discovery import open_device  # imported before the registry changes

    monkeypatch.setattr(hal.runtime.registry, "registry",
                        Registry(_points(good="hal_test_plugins:Good")))
    layers, device = open_device("good", 0)
    assert [layer.ok for layer in layers] == [True, True] and device.name == "good:0"


def test_keyboard_interrupt_still_stops_hal(monkeypatch):
    class Interrupted(hal.Backend):
        name = "interrupted"

        def why_unavailable(self):
            raise KeyboardInterrupt

    module = types.ModuleType("hal_interrupted_plugin")
    module.Interrupted = Interrupted
    monkeypatch.setitem(sys.modules, "hal_interrupted_plugin", module)
    registry = Registry(_points(interrupted="hal_interrupted_plugin:Interrupted"))
    with pytest.raises(KeyboardInterrupt):
        registry.available()


def test_every_in_tree_backend_loads():
    """A backend of this project that fails to load fails here, not only as a warning."""
    with open(Path(__file__).parents[2] / "pyproject.toml", "rb") as f:
        declared = tomllib.load(f)["project"]["entry-points"][GROUP]
    registry = Registry(_points(**declared))
    with warnings.catch_warnings():
        warnings.simplefilter("error", hal.PluginWarning)
        for name in declared:
            assert isinstance(registry.get(name), hal.Backend)
            reason = registry.get(name).why_unavailable()
            assert reason is None or "failed" not in reason, reason
    assert registry.broken() == {}


BLOCK = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("tvm", "pyopencl", "cupy"):
            raise ImportError(f"{name} is blocked by the test")
sys.meta_path.insert(0, Block())
"""


def test_backends_without_their_library_say_why():
    code = BLOCK + textwrap.dedent("""
        import json, warnings
        warnings.simplefilter("error")  # a PluginWarning would be a broken plugin
        import hal
        from hal.cli import main
        print(json.dumps({n: hal.backend(n).why_unavailable() for n in ("tvm", "opencl", "cuda")}))
        main(["devices"])
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "COLUMNS": "300"})
    assert done.returncode == 0, done.stderr
    reasons = json.loads(done.stdout.splitlines()[0])
    assert "apache-tvm does not import (ImportError: tvm is blocked" in reasons["tvm"]
    assert "pyopencl is not importable (pyopencl is blocked" in reasons["opencl"]
    assert "cupy is not installed (ImportError: cupy is blocked" in reasons["cuda"]
    assert "pip install -e '.[cuda]'" in done.stdout  # printed verbatim, not as rich markup
    assert "unavailable: apache-tvm does not import" in done.stdout


def test_importing_a_backend_does_not_import_its_library():
    code = textwrap.dedent("""
        import sys
        import backends.cpu, backends.cuda, backends.null, backends.opencl, backends.tvm
        print(sorted(m for m in ("tvm", "pyopencl", "cupy") if m in sys.modules))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, check=True)
    assert done.stdout.split() == ["[]"]


# -- plugins that crash the interpreter are probed in a child process first --------------------
def _install(root: Path, dist: str, module: str, code: str) -> None:
    """A distribution as pip leaves it: its module and a *.dist-info naming its entry point."""
    (root / f"{module}.py").write_text(code)
    info = root / f"{module}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{GROUP}]\n{module} = {module}:make\n")


@pytest.mark.slow
def test_a_plugin_that_segfaults_at_import_is_an_unavailable_row(tmp_path):
    _install(tmp_path, "crashy-plugin", "crashy", "import ctypes\nctypes.string_at(0)\n")
    code = textwrap.dedent("""
        import json, warnings
        from importlib.metadata import entry_points
        import hal
        from hal.cli import main
        from hal.runtime import registry
        points = [p for p in entry_points(group=registry.GROUP) if p.name in ("cpu", "crashy")]
        registry.registry = registry.Registry(points)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            print(hal.default_device().name)
            main(["devices"])
        print(json.dumps([str(w.message) for w in caught]))
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.getcwd()]),
           "HAL_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "400"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env=env)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    lines = done.stdout.splitlines()
    assert lines[0] == "cpu:0"
    assert "unavailable: backend 'crashy' failed to load: crashed at import: SIGSEGV" in done.stdout
    assert "pip uninstall crashy-plugin" in done.stdout
    assert "'crashy'" in json.loads(lines[-1])[0]  # and a PluginWarning names it


@pytest.fixture
def probe_runs(tmp_path, monkeypatch):
    """Child probes counted: the list of plugin values probed, under a cache in tmp_path
    (plugin_probe imports subprocess when it probes: its `run` is patched where it lives)."""
    runs, run = [], subprocess.run
    monkeypatch.setattr(hal.settings, "cache_dir", tmp_path / "cache")
    monkeypatch.setattr(subprocess, "run",
                        lambda command, **kw: runs.append(command[-1]) or run(command, **kw))
    monkeypatch.syspath_prepend(tmp_path)
    return runs


def test_a_plugin_is_probed_once_per_version(tmp_path, probe_runs):
    from importlib.metadata import distributions

    _install(tmp_path, "plain-plugin", "plain", "def make():\n    return object()\n")

    def load():
        (dist,) = distributions(path=[str(tmp_path)])
        points = [p for p in dist.entry_points if p.group == GROUP]
        with pytest.warns(hal.PluginWarning, match="not a Backend"):  # loaded here, refused
            assert Registry(points).available() == []

    load()
    load()
    assert probe_runs == ["plain:make"]
    assert len(list((tmp_path / "cache" / "plugins").glob("plain-*.json"))) == 1
    with open(tmp_path / "plain.py", "a") as f:
        f.write("# a new release\n")
    load()
    assert probe_runs == ["plain:make"] * 2


def test_hals_own_backends_are_not_probed(probe_runs):
    from importlib.metadata import entry_points

    cpu = next(p for p in entry_points(group=GROUP) if p.name == "cpu")
    assert Registry([cpu]).get("cpu").open().name == "cpu:0"
    assert probe_runs == []


def test_a_plugin_that_hangs_in_the_probe_is_unavailable_and_probed_again(tmp_path, probe_runs,
                                                                          monkeypatch):
    from importlib.metadata import distributions

    _install(tmp_path, "slow-plugin", "slow", "import time\ntime.sleep(60)\n")
    monkeypatch.setattr(hal.settings, "probe_timeout", 1.0)
    (dist,) = distributions(path=[str(tmp_path)])
    points = [p for p in dist.entry_points if p.group == GROUP]
    with pytest.warns(hal.PluginWarning, match="did not answer within 1 s"):
        assert Registry(points).available() == []
    assert probe_runs == ["slow:make"]
    assert not (tmp_path / "cache" / "plugins").exists()  # a hang may pass: not remembered
