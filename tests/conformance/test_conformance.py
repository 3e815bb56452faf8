"""The conformance kit over every registered backend: runtime layers, op x dtype cells, then
the jit cells (the graph workloads through hal.jit).

A backend passes a cell when it computes the reference's answer on the device; the null
backend (no kernels) must run every cell through the CPU fallback, correctly. A backend
that is not available here has its cells skipped with its reason; one that failed to
load fails. Small fake backends show that the kit is not fooled by kernels that only
work on small, tame inputs.
"""

from __future__ import annotations

import functools
import json

import numpy as np
import pytest

import hal
from hal import conformance as kit
from hal import ops
from hal.conformance.graph_workloads import WORKLOADS
from hal.conformance.large_inputs import large_cases
from hal.runtime.registry import registry

pytestmark = pytest.mark.filterwarnings("error::hal.PluginWarning")  # a broken plugin fails

EXAMPLES = 10
# TVM compiles a kernel per new shape (~0.5 s each on 2 cores, cold in CI): fewer examples
# there keep CI in budget; the main job (`hal conformance --examples 10`) runs the full ten
EXAMPLES_PER_BACKEND = {"tvm": 4, "onnxruntime": 4}
BACKENDS = hal.backends()
CELLS = [(b, s, d) for b in BACKENDS for s in ops.specs() for d in s.dtypes]
GRAPHS = [(b, w) for b in BACKENDS for w in WORKLOADS]


@functools.cache
def _why_unavailable(backend: str) -> str | None:
    return registry.get(backend).why_unavailable()  # a plugin that failed to load raises


def _skip_unavailable(backend: str) -> None:
    reason = _why_unavailable(backend)
    if reason is not None:
        pytest.skip(f"{backend} is unavailable here: {reason}")


def test_every_registered_backend_loads():
    for name in BACKENDS:
        registry.get(name)
    assert registry.broken() == {}


@pytest.mark.parametrize("backend", BACKENDS)
def test_runtime_layers(backend):
    _skip_unavailable(backend)
    report = kit.run(backend, ops_=["add"], dtypes=["float32"], examples=2)
    assert [layer.name for layer in report.layers] == ["discover", "open", "memory", "timing"]
    failed = [f"{layer.name}: {layer.detail}" for layer in report.layers if not layer.ok]
    assert failed == []


@pytest.mark.parametrize(("backend", "spec", "dtype"), CELLS,
                         ids=[f"{b}-{s.name}-{d.name}" for b, s, d in CELLS])
def test_cell(backend, spec, dtype):
    _skip_unavailable(backend)
    device = hal.device(backend)
    cell = kit.check_cell(device, spec, dtype, EXAMPLES_PER_BACKEND.get(backend, EXAMPLES))
    assert cell.status != kit.FAIL, f"{cell.error}\n{cell.repro}"
    if backend == "cpu":  # a kernel for every op
        assert (cell.status, cell.ran) == (kit.PASS, "kernel")
    if backend == "null":  # no kernels
        assert cell.status == kit.FALLBACK and cell.ran in ("decomposed", "fallback")
    if cell.status == kit.UNSUPPORTED:
        declared = device.capabilities.unsupported
        assert spec.name in declared or dtype.name in declared or dtype.name not in \
            device.capabilities.dtypes


@pytest.mark.parametrize(("backend", "graph"), GRAPHS, ids=[f"{b}-jit-{w.name}" for b, w in GRAPHS])
def test_graph_cell(backend, graph):
    _skip_unavailable(backend)
    cell = kit.check_graph(hal.device(backend), graph)
    assert cell.status != kit.FAIL, f"{cell.error}\n{cell.repro}"
    if backend == "cpu" and graph.name == "resnet_block":  # one ONNX Runtime session
        assert (cell.status, cell.path) == (kit.PASS, "graph")
    elif backend == "cpu":  # every group of these graphs compiles
        assert (cell.status, cell.path) == (kit.PASS, "fused") and cell.counts["compiled"]
    if backend == "null":  # no kernels, no graph hooks
        assert (cell.status, cell.path) == (kit.FALLBACK, "replay")


# -- fake backends the kit must fail ---------------------------------------------------------
class _HostDevice(hal.Device):
    """Tensors are host numpy arrays."""

    def _upload(self, array):
        return np.array(array)

    def _download(self, native):
        return np.asarray(native)


def _fake_device(name: str, kernels: dict, device_class=_HostDevice) -> hal.Device:
    """A device of a host-memory backend with these float32 kernels (op -> numpy function)."""
    table = hal.KernelTable(name)
    for op, fn in kernels.items():
        table.register(op, dtypes=["float32"], device_arg=False)(fn)

    class Fake(hal.Backend):
        def _open_device(self, index):
            return device_class(self, index)

    Fake.name, Fake.kernels = name, table
    return Fake().open()


def _reduction(fn):
    return lambda x, *, axis=None, keepdims=False: np.asarray(fn(x, axis=axis,
                                                                 keepdims=keepdims))


# Kernels right on every input: the primitives softmax and log_softmax decompose into.
_PRIMITIVES = {"exp": np.exp, "log": np.log, "subtract": np.subtract, "divide": np.divide,
               "max": _reduction(np.max), "sum": _reduction(np.sum)}


def _naive_softmax(x, *, axis=-1):
    """exp(x) / sum(exp(x)) without subtracting the max: overflows for inputs past ~88."""
    e = np.exp(x)
    return e / np.sum(e, axis=axis, keepdims=True)


def _one_work_group_sum(x, *, axis=None, keepdims=False):
    """Sums only the first 1024 elements (one work-group's worth) of a longer input."""
    x = np.array(x)
    x.reshape(-1)[1024:] = 0
    return np.asarray(np.sum(x, axis=axis, keepdims=keepdims))


def _exp_in_place(x):
    """The right values, written over the input."""
    return np.exp(x, out=x)


def _failing_softmax(x, *, axis=-1):
    raise NotImplementedError("this kernel handles no input yet")


def _check(device, op: str, examples: int = 10) -> kit.Cell:
    return kit.check_cell(device, ops.spec(op), hal.float32, examples)


def test_fake_softmax_that_overflows_at_large_inputs_fails():
    cell = _check(_fake_device("naivesoftmax", {**_PRIMITIVES, "softmax": _naive_softmax}),
                  "softmax")
    assert cell.status == kit.FAIL and cell.ran == "kernel"
    assert "NaN placement" in cell.error and "naivesoftmax:0:kernel" in cell.error


def test_fake_sum_wrong_only_past_1024_elements_fails_with_a_repro_that_runs():
    device = _fake_device("shortsum", {"sum": _one_work_group_sum})
    cell = _check(device, "sum")
    assert cell.status == kit.FAIL and "expected" in cell.error
    assert "large_cases(hal.ops.spec('sum'), hal.dtype('float32'))" in cell.repro
    snippet = cell.repro.replace(f"hal.device({device.name!r})", "hal.device('cpu')")
    exec(compile(snippet, "<repro>", "exec"), {})  # the snippet runs as printed
    assert all(max(c.args[0].shape) > 1024 for c in large_cases(ops.spec("sum"), hal.float32))


def test_fake_kernel_that_writes_into_its_input_fails():
    cell = _check(_fake_device("inplace", {"exp": _exp_in_place}), "exp")
    assert cell.status == kit.FAIL
    assert "operand 0 changed during the call" in cell.error


def test_fake_kernel_that_raises_fails():
    cell = _check(_fake_device("raising", {**_PRIMITIVES, "softmax": _failing_softmax}),
                  "softmax")
    assert cell.status == kit.FAIL
    assert "KernelError" in cell.error and "NotImplementedError" in cell.error


class _LostKernelDevice(_HostDevice):
    """Reports a softmax kernel that dispatch never sees, so the decomposition runs instead
    (as when a kernel's error is swallowed and the op decomposed)."""

    def kernel(self, op, dtype):
        return _naive_softmax if op == "softmax" else super().kernel(op, dtype)


def test_fake_registered_kernel_passed_over_for_the_decomposition_fails():
    device = _fake_device("lostkernel", _PRIMITIVES, _LostKernelDevice)
    cell = _check(device, "softmax")
    assert cell.status == kit.FAIL and cell.ran == "decomposed"
    assert "registers a softmax kernel for float32, but the decomposed path ran" in cell.error


def test_fake_cells_say_how_the_op_ran():
    device = _fake_device("decomposing", _PRIMITIVES)
    decomposed, kernel = _check(device, "log_softmax", 5), _check(device, "exp", 5)
    assert (decomposed.status, decomposed.ran) == (kit.PASS, "decomposed")
    assert (kernel.status, kernel.ran) == (kit.PASS, "kernel")
    report = kit.Report(device.backend.name, device.name, cells=[decomposed, kernel])
    assert [c["ran"] for c in json.loads(json.dumps(report.to_dict()))["cells"]] == \
        ["decomposed", "kernel"]
    assert [kit.cell_symbol(c) for c in report.cells] == ["[green]✓d[/]", "[green]✓[/]"]


def test_fake_kernel_wrong_for_large_values_fails_with_a_repro_that_runs():
    class WrongAdd(hal.Backend):
        """A backend whose add is off by one for large values."""

        name = "wrongadd"
        kernels = hal.KernelTable("wrongadd")

        def _open_device(self, index):
            return _HostDevice(self, index)

    @WrongAdd.kernels.register("add", device_arg=False)
    def _wrong_add(a, b):
        out = np.add(a, b)
        return np.where(np.abs(out) > 5, out + 1, out).astype(out.dtype)

    device = WrongAdd().open()
    cell = kit.check_cell(device, ops.spec("add"), hal.float32, examples=50)
    assert cell.status == kit.FAIL
    assert "expected" in cell.error
    assert "call(hal.ops.spec('add')" in cell.repro and "np.float32" in cell.repro
    snippet = cell.repro.replace("hal.device('wrongadd:0')", "hal.device('cpu')")
    exec(compile(snippet, "<repro>", "exec"), {})  # the snippet runs as printed


def test_fake_backend_without_half_precision_is_unsupported():
    class NoHalf(hal.Backend):
        name = "nohalf"
        kernels = hal.KernelTable("nohalf")
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


def test_report_json_and_matrix_on_cpu():
    report = kit.run("cpu", ops_=["exp", "add"], examples=3)
    data = report.to_dict()
    assert data["ok"] and data["counts"]["pass"] == len(report.cells) == 6 + 10
    assert {c["ran"] for c in data["cells"]} == {"kernel"}
    table = kit.matrix(report)
    assert table.row_count == 2 and data["graphs"] == []  # --ops without --graphs: none


def test_jit_cells_in_the_report_with_a_repro_that_runs():
    report = kit.run("cpu", ops_=[], graphs=["random-3", "transformer_block"])
    data = json.loads(json.dumps(report.to_dict()))
    assert [(g["graph"], g["dtype"], g["status"], g["path"]) for g in data["graphs"]] == [
        ("random-3", "float32", "pass", "fused"), ("transformer_block", "float32", "pass",
                                                   "fused")]
    assert kit.graph_table(report).row_count == 2 and report.ok
    exec(compile(report.graphs[0].repro, "<repro>", "exec"), {})  # the snippet runs
    with pytest.raises(hal.HalError, match=r"no graph named 'kdv'.*kdv_step"):
        kit.run("cpu", ops_=[], graphs=["kdv"])
