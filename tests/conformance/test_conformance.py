"""The conformance kit over every available backend: runtime layers, then op x dtype cells.

A backend passes a cell when it computes the reference's answer on the device; the null
backend (no kernels) must run every cell through the CPU fallback, correctly.
"""

from __future__ import annotations

import numpy as np
import pytest

import hal
from hal import conformance as kit
from hal import ops

EXAMPLES = 10
BACKENDS = hal.available_backends()
CELLS = [(b, s, d) for b in BACKENDS for s in ops.specs() for d in s.dtypes]


@pytest.mark.parametrize("backend", BACKENDS)
def test_runtime_layers(backend):
    report = kit.run(backend, ops_=["add"], dtypes=["float32"], examples=2)
    assert [layer.name for layer in report.layers] == ["discover", "open", "memory", "timing"]
    failed = [f"{layer.name}: {layer.detail}" for layer in report.layers if not layer.ok]
    assert failed == []


@pytest.mark.parametrize(("backend", "spec", "dtype"), CELLS,
                         ids=[f"{b}-{s.name}-{d.name}" for b, s, d in CELLS])
def test_cell(backend, spec, dtype):
    device = hal.device(backend)
    cell = kit.check_cell(device, spec, dtype, EXAMPLES)
    assert cell.status != kit.FAIL, f"{cell.error}\n{cell.repro}"
    if backend == "cpu":
        assert cell.status == kit.PASS
    if backend == "null":
        assert cell.status == kit.FALLBACK
    if cell.status == kit.UNSUPPORTED:
        declared = device.capabilities.unsupported
        assert spec.name in declared or dtype.name in declared or dtype.name not in \
            device.capabilities.dtypes


class WrongAdd(hal.Backend):
    """A backend whose add is off by one for large values: the kit must catch and repro it."""

    name = "wrongadd"
    kernels = hal.KernelTable("wrongadd")

    def _open_device(self, index):
        return _HostDevice(self, index)


class _HostDevice(hal.Device):
    def upload(self, array):
        return np.array(array)

    def download(self, native):
        return np.asarray(native)


@WrongAdd.kernels.register("add", device_arg=False)
def _wrong_add(a, b):
    out = np.add(a, b)
    return np.where(np.abs(out) > 5, out + 1, out).astype(out.dtype)


def test_kit_finds_a_wrong_kernel_and_writes_a_repro():
    device = WrongAdd().open()
    cell = kit.check_cell(device, ops.spec("add"), hal.float32, examples=50)
    assert cell.status == kit.FAIL
    assert "expected" in cell.error
    assert "call(hal.ops.spec('add')" in cell.repro and "np.float32" in cell.repro
    namespace: dict = {}
    compiled = compile(cell.repro.replace("hal.device('wrongadd:0')", "hal.device('cpu')"),
                       "<repro>", "exec")
    exec(compiled, namespace)  # the snippet runs as printed (on cpu, where add is right)


def test_kit_classifies_unsupported_dtypes():
    class NoHalf(hal.Backend):
        name = "nohalf"
        kernels = WrongAdd.kernels
        unsupported = {"float16": "no half-precision units"}

        def dtypes(self, device):
            return tuple(d for d in hal.ALL if d != hal.float16)

        def _open_device(self, index):
            return _HostDevice(self, index)

    device = NoHalf().open()
    cell = kit.check_cell(device, ops.spec("exp"), hal.float16)
    assert cell.status == kit.UNSUPPORTED and "no half-precision units" in cell.error
    with pytest.raises(hal.UnsupportedDType, match="no half-precision"):
        hal.Tensor.from_host(np.ones(2, np.float16), device)


def test_report_json_and_matrix():
    report = kit.run("cpu", ops_=["exp", "add"], examples=3)
    data = report.to_dict()
    assert data["ok"] and data["counts"]["pass"] == len(report.cells) == 6 + 10
    table = kit.matrix(report)
    assert table.row_count == 2
