"""The hal command: devices and conformance, exit codes and bad input."""

from __future__ import annotations

import json
import subprocess
import sys
import types
from importlib.metadata import EntryPoint

from hal.cli import main


def test_devices_json_lists_every_backend(capsys):
    assert main(["devices", "--json"]) == 0
    rows = {r["backend"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["cpu"]["available"] and rows["cpu"]["devices"][0]["device"] == "cpu:0"
    assert rows["null"]["ops_with_kernels"].startswith("0/")


def test_devices_prints_install_hints_verbatim(capsys, monkeypatch):
    import hal
    from hal.runtime.registry import Registry

    class Missing(hal.Backend):
        name = "missing"

        def why_unavailable(self):
            return "no chip library; pip install -e '.[cuda]' or '.[cuda13]'"

    module = types.ModuleType("hal_missing_plugin")
    module.Missing = Missing
    monkeypatch.setitem(sys.modules, "hal_missing_plugin", module)
    point = EntryPoint("missing", "hal_missing_plugin:Missing", "hal.backends")
    monkeypatch.setattr(hal.runtime.registry, "registry", Registry([point]))
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["devices"]) == 0
    out = capsys.readouterr().out
    assert "unavailable: no chip library; pip install -e '.[cuda]' or '.[cuda13]'" in out


def test_conformance_passes_on_cpu_and_prints_the_matrix(capsys):
    assert main(["conformance", "--backend", "cpu", "--ops", "add", "exp", "--examples",
                 "3"]) == 0
    out = capsys.readouterr().out
    assert "runtime layers" in out and "pass" in out


def test_conformance_json(capsys):
    assert main(["conformance", "--backend", "null", "--ops", "sqrt", "--dtypes", "float32",
                 "--examples", "2", "--json"]) == 0
    (report,) = json.loads(capsys.readouterr().out)
    assert report["cells"][0]["status"] == "fallback"


def test_unknown_backend_exits_2_with_a_message(capsys):
    assert main(["conformance", "--backend", "tpu"]) == 2
    assert "unknown backend 'tpu'" in capsys.readouterr().err


def test_unknown_graph_exits_2_before_anything_runs(capsys, monkeypatch):
    ran = []
    monkeypatch.setattr("hal.conformance.kit.run", lambda *a, **k: ran.append(a))
    assert main(["conformance", "--backend", "null", "--graphs", "kdv"]) == 2
    err = capsys.readouterr().err
    assert "no graph named 'kdv'" in err and "kdv_step" in err and ran == []


def test_console_script_runs():
    out = subprocess.run([sys.executable, "-m", "hal.cli", "--help"], capture_output=True,
                         text=True, check=True).stdout
    assert "conformance" in out and "devices" in out


def test_conformance_on_a_chosen_device(capsys):
    assert main(["conformance", "--backend", "null:0", "--ops", "add", "--dtypes", "int8",
                 "--examples", "2", "--json"]) == 0
    (report,) = json.loads(capsys.readouterr().out)
    assert report["device"] == "null:0"
    assert main(["conformance", "--backend", "null:x"]) == 2
    assert main(["conformance", "--backend", "null:3", "--ops", "add"]) == 1
    assert "out of range" in capsys.readouterr().out


def test_python_dash_m_hal_is_the_hal_command():
    done = subprocess.run([sys.executable, "-m", "hal", "--help"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "devices" in done.stdout and "bench" in done.stdout
    bad = subprocess.run([sys.executable, "-m", "hal", "nosuch"], capture_output=True,
                         text=True, timeout=120)
    assert bad.returncode == 2 and "nosuch" in bad.stderr
