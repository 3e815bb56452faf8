"""Bugs planted in the cpu backend, one kind each: the kit must catch every one.

Each plant is a copy of the cpu backend with one hook or kernel broken the way a backend
under bring-up gets it wrong; the kit runs on it pointed at what the bug touches (the
runtime layers always run) and must not pass. `test_the_kit_catches_every_planted_bug`
asserts the catch rate is all of them.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pytest

import hal
from backends import cpu_fused
from backends.cpu import CpuBackend, CpuDevice
from hal import conformance as kit
from hal.compile.executable import Executable
from hal.compile.passes import optimize


@dataclass
class Plant:
    """A bug: a cpu backend with `backend` and `device` overrides and kernels replaced
    (op -> fn for `dtypes`), and the kit's selection that must catch it."""

    name: str
    backend: dict = field(default_factory=dict)
    device: dict = field(default_factory=dict)
    kernels: dict[str, Callable] = field(default_factory=dict)
    dtypes: tuple[str, ...] = ("float32",)
    ops: tuple[str, ...] = ()
    graphs: tuple[str, ...] = ()
    where: str = ""  # what must fail: a layer's name, "cell" or "graph"

    def open(self) -> hal.Device:
        """A device of a fresh cpu backend with this bug."""
        device_class = type(f"{self.name}Device", (CpuDevice,), dict(self.device))
        overrides = {"name": self.name, **self.backend,
                     "_open_device": lambda backend, index: device_class(backend, index)}
        device = type(f"{self.name}Backend", (CpuBackend,), overrides)().open()
        for op, fn in self.kernels.items():
            for d in self.dtypes:
                device.kernels[(op, hal.dtype(d))] = fn
        return device


class Negated:
    """hal's own executable of the graph, every output negated."""

    def __init__(self, graph, device):
        self.executable = Executable(optimize(graph, device), device)

    def __call__(self, *inputs):
        return [-t for t in self.executable(*inputs)]

    def counts(self):
        return self.executable.counts()


def _negated_fused(body):
    fn = cpu_fused.compile_body(body)
    if fn is None:
        return None
    if getattr(fn, "takes_out", False):
        def negated(*natives, out):
            fn(*natives, out=out)
            np.negative(out, out=out)
            return out

        negated.takes_out = True
        return negated
    return lambda *natives: np.negative(fn(*natives))


def _upload_0d_as_1d(device, array):
    return np.array(array).reshape(-1) if np.ndim(array) == 0 else np.array(array)


def _download_ignoring_strides(device, native):
    base = native.base if native.base is not None else native
    flat = np.frombuffer(np.ascontiguousarray(base).tobytes(), native.dtype)
    return flat[:native.size].reshape(native.shape).copy()


def _naive_abs(x):
    return np.sqrt(x.real * x.real + x.imag * x.imag)


def _widened_naive_abs(x):
    """Squares in float64 (no overflow for complex64), but inf + NaN j gives NaN."""
    wide = x.astype(np.complex128)
    return np.sqrt(wide.real**2 + wide.imag**2).astype(x.real.dtype)


def _tanh_gelu(x, *, approximate="none"):
    y = x.astype(np.float32)
    inner = math.sqrt(2 / math.pi) * (y + 0.044715 * y**3)
    return (0.5 * y * (1 + np.tanh(inner))).astype(x.dtype)


def _sum_off_by_one(x, *, axis=None, keepdims=False):
    """Each reduced axis loses its last element."""
    axes = range(x.ndim) if axis is None else np.atleast_1d(axis) % max(x.ndim, 1)
    trimmed = x[tuple(slice(0, -1) if i in axes and x.shape[i] > 1 else slice(None)
                      for i in range(x.ndim))]
    return np.asarray(np.sum(trimmed, axis=axis, keepdims=keepdims), dtype=x.dtype)


def _sum_in_float64(x, *, axis=None, keepdims=False):
    """Accumulates in float64 and returns that, not the operand's dtype."""
    return np.asarray(np.sum(x, axis=axis, keepdims=keepdims, dtype=np.float64))


def _add_leading_aligned(a, b):
    """Broadcasts by padding the shorter shape at the end instead of the front."""
    n = max(a.ndim, b.ndim)
    return np.add(a.reshape(a.shape + (1,) * (n - a.ndim)),
                  b.reshape(b.shape + (1,) * (n - b.ndim)))


def _nan_skipping_max(x, *, axis=None, keepdims=False):
    return np.asarray(np.nanmax(x, axis=axis, keepdims=keepdims), dtype=x.dtype)


class _CountsAsList(Negated):
    """Right results, but counts() is not a mapping."""

    def __call__(self, *inputs):
        return self.executable(*inputs)

    def counts(self):
        return list(self.executable.counts().items())


def _capture_once(backend, device, run):
    run()
    return "recorded"


def _replay_ignoring_inputs(backend, device, graph, copies, outputs):
    """Hands out the recorded call's outputs again: the inputs are never copied in."""
    return [np.array(out) for out in outputs]


def _replay_handing_out_buffers(backend, device, graph, copies, outputs):
    """Copies the inputs in and reruns nothing: the output buffers themselves handed out."""
    for source, fixed in copies:
        np.copyto(fixed, source)
    return list(outputs)


PLANTS = [
    Plant("compilenegates", backend={"compile": lambda self, g, d: Negated(g, d)},
          graphs=("random-0", "kdv_step"), dtypes=("float32", "complex64"), where="graph"),
    Plant("fusednegates", backend={"compile_fused": lambda self, body, d: _negated_fused(body)},
          graphs=("random-0",), where="graph"),
    Plant("fusedraises", backend={"compile_fused": lambda self, body, d: 1 / 0},
          graphs=("random-0",), where="graph"),
    Plant("countsaslist", backend={"compile": lambda self, g, d: _CountsAsList(g, d)},
          graphs=("random-1",), where="graph"),
    Plant("replaystale", backend={"capture": _capture_once, "replay": _replay_ignoring_inputs},
          graphs=("random-0",), where="graph"),
    Plant("replaysharesoutputs", backend={"capture": _capture_once,
                                          "replay": _replay_handing_out_buffers},
          graphs=("random-0",), where="graph"),
    Plant("upload0d", device={"_upload": _upload_0d_as_1d}, where="memory"),
    Plant("stridedownload", device={"_download": _download_ignoring_strides},
          where="memory"),
    Plant("naiveabs", kernels={"abs": _naive_abs}, dtypes=("complex64", "complex128"),
          ops=("abs",), where="cell"),
    Plant("wideabs", kernels={"abs": _widened_naive_abs}, dtypes=("complex64",),
          ops=("abs",), where="cell"),
    Plant("tanhgelu", kernels={"gelu": _tanh_gelu}, dtypes=("float16", "bfloat16"),
          ops=("gelu",), where="cell"),
    Plant("nanmax", kernels={"max": _nan_skipping_max}, dtypes=("float32", "float64"),
          ops=("max",), where="cell"),
    Plant("sumoffbyone", kernels={"sum": _sum_off_by_one}, ops=("sum",), where="cell"),
    Plant("dtypedrift", kernels={"sum": _sum_in_float64}, ops=("sum",), where="cell"),
    Plant("broadcastwrong", kernels={"add": _add_leading_aligned}, ops=("add",), where="cell"),
]


def _failures(report: kit.Report, where: str) -> list[str]:
    """What failed at `where`: a layer's detail, a cell's op and dtype, a graph's name."""
    if where == "cell":
        return [f"{c.op} {c.dtype}" for c in report.cells if c.status == kit.FAIL]
    if where == "graph":
        return [f"{g.graph} {g.path}" for g in report.graphs if g.status == kit.FAIL]
    return [layer.detail for layer in report.layers if layer.name == where and not layer.ok]


BY_NAME = {p.name: p for p in PLANTS}


@functools.cache
def _report(name: str) -> kit.Report:
    """The kit's report on the plant's backend, pointed at what the bug touches (once)."""
    plant = BY_NAME[name]
    return kit.check(plant.open(), ops_=list(plant.ops), dtypes=list(plant.dtypes),
                     graphs=list(plant.graphs), examples=5)


@pytest.mark.parametrize("name", BY_NAME)
def test_each_planted_bug_fails_where_it_is(name):
    report = _report(name)
    assert not report.ok and _failures(report, BY_NAME[name].where), report.to_dict()


def test_planted_bugs_fail_every_dtype_and_graph_they_touch():
    assert _failures(_report("tanhgelu"), "cell") == ["gelu float16", "gelu bfloat16"]
    assert _failures(_report("naiveabs"), "cell") == ["abs complex64", "abs complex128"]
    assert _failures(_report("nanmax"), "cell") == ["max float32", "max float64"]
    assert _failures(_report("compilenegates"), "graph") == ["random-0 graph", "kdv_step graph"]
    assert _failures(_report("fusednegates"), "graph") == ["random-0 fused"]
    assert _failures(_report("replaystale"), "graph") == ["random-0 fused+captured"]
    (upload,) = _failures(_report("upload0d"), "memory")
    assert upload.startswith("bool 0-d () round trip: came back bool(1,), sent bool()")
    (download,) = _failures(_report("stridedownload"), "memory")
    assert download.startswith("bool every other (6, 4) round trip: changed the bytes")


def test_the_kit_catches_every_planted_bug():
    caught = [name for name in BY_NAME if not _report(name).ok]
    assert len(PLANTS) >= 10 and caught == list(BY_NAME)
