"""Start-up: `import hal` and a first op load the default device's backend alone; other
backends are loaded when they are named or asked for. Each case is a fresh interpreter."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import pytest

LIBRARIES = ("pyopencl", "tvm", "onnxruntime", "onnx", "numba", "cupy", "torch", "scipy")

REPORT = """
import json, sys
from hal.runtime import registry
print(json.dumps({"loaded": sorted(registry.registry._backends),
                  "libraries": [m for m in LIBRARIES if m in sys.modules],
                  "default": registry._default[0].name if registry._default else None,
                  "values": values}))
"""


def _fresh(code: str, **env: str) -> dict:
    """Run `code` (which sets `values`) in a new interpreter with HAL_DEVICE and
    HAL_BACKENDS unset unless given; what it loaded and imported, as a dict."""
    clean = {k: v for k, v in os.environ.items() if k not in ("HAL_DEVICE", "HAL_BACKENDS")}
    program = f"LIBRARIES = {LIBRARIES!r}\n" + textwrap.dedent(code) + REPORT
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=300, env={**clean, **env})
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_import_and_a_first_op_load_only_the_cpu_backend():
    out = _fresh("""
        import hal
        x = hal.asarray([1.0, 2.0])
        values = (x + 1).numpy().tolist()
    """)
    assert out["values"] == [2.0, 3.0]
    assert out["default"] == "cpu:0"
    assert out["loaded"] == ["cpu"]
    assert out["libraries"] == []


def test_a_first_op_on_the_embedded_cpu_reads_no_installed_distribution():
    """The cpu backend loads without importlib.metadata's scan; plugin probing's hashing
    and the graph's keys wait until asked for (start-up memory)."""
    out = _fresh("""
        import sys
        import hal
        values = [(hal.asarray([1.0]) * 3).numpy().tolist(),
                  [m for m in ("importlib.metadata", "hashlib") if m in sys.modules]]
    """)
    assert out["values"] == [[3.0], []]
    assert out["loaded"] == ["cpu"]


def test_the_embedded_cpu_entry_point_is_the_registered_one():
    from importlib.metadata import entry_points

    from hal.runtime.registry import GROUP, _Embedded

    (point,) = [p for p in entry_points(group=GROUP) if p.name == _Embedded.name]
    assert point.value == _Embedded.value
    assert _Embedded().load() is point.load()


def test_import_alone_loads_no_backend():
    out = _fresh("import hal\nvalues = None")
    assert out["loaded"] == [] and out["libraries"] == []


def test_a_named_device_loads_its_backend():
    out = _fresh("""
        import hal
        x = hal.asarray([1.0, 2.0], device="null:0")
        values = [x.device.name, hal.multiply(x, x).numpy().tolist()]
    """)
    assert out["values"] == ["null:0", [1.0, 4.0]]
    assert out["loaded"] == ["null"] and out["libraries"] == []


@pytest.mark.parametrize(("env", "default"), [({"HAL_DEVICE": "null:0"}, "null:0"),
                                              ({"HAL_BACKENDS": "null,cpu"}, "null:0"),
                                              ({"HAL_BACKENDS": "no_such_backend"}, "cpu:0")])
def test_the_default_device_is_the_one_named_else_cpu(env, default):
    out = _fresh("""
        import hal
        values = hal.add(hal.ones(2), hal.ones(2)).numpy().tolist()
    """, **env)
    assert out["values"] == [2.0, 2.0]
    assert out["default"] == default
    assert out["loaded"] == [default.split(":")[0]]
    assert out["libraries"] == []


def test_asking_for_every_backend_loads_them_all():
    out = _fresh("""
        import hal
        values = [hal.available_backends(), hal.backends()]
    """)
    available, registered = out["values"]
    assert set(available) <= set(out["loaded"]) == set(registered)


@pytest.mark.skipif(importlib.util.find_spec("pyopencl") is None, reason="no pyopencl")
def test_naming_an_accelerator_imports_its_library():
    out = _fresh("""
        import hal
        try:
            values = hal.device("opencl:0").name
        except hal.BackendUnavailable as e:  # pyopencl without an OpenCL platform
            values = str(e)
    """)
    assert out["loaded"] == ["opencl"] and out["libraries"] == ["pyopencl"]
