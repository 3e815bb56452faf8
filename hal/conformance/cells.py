"""The conformance kit: layered checks of a backend, then every op x dtype against the reference.

Layers: discover (the plugin loads, says whether it is available), open (a device and
its capabilities), memory (host round trip of every dtype, allocator accounting),
timing (events bracket work and agree with the host clock), ops (a few large inputs
and hypothesis-drawn ones on the device vs the numpy reference). Each op x dtype cell
ends as pass, fail (with a repro snippet), fallback (correct, but ran on the CPU) or
unsupported (the device declares the dtype unsupported and the op says so with
UnsupportedDType), and records how the op itself ran: the device's kernel, the
composite's decomposition, or the CPU fallback. A cell fails when the result differs
from the reference, when an operand changed during the call, when a kernel raised, and
when the device registers a kernel for the op but something else ran.
"""

from __future__ import annotations

import time
import traceback
from dataclasses import asdict, dataclass, field

import numpy as np

from .. import ops
from ..dispatch import call, fallback_policy, placement
from ..runtime import dtypes as dt
from ..runtime.device import Device
from ..runtime.errors import HalError, KernelError, UnsupportedDType
from ..runtime.registry import registry
from ..tensor import Tensor
from .compare import mismatch
from .strategies import Case, cases, large_cases

PASS, FAIL, FALLBACK, UNSUPPORTED = "pass", "fail", "fallback", "unsupported"


@dataclass
class Cell:
    """The outcome of one op on one dtype."""

    op: str
    dtype: str
    status: str
    examples: int = 0
    seconds: float = 0.0
    error: str = ""
    repro: str = ""
    ran: str = ""  # how the op itself ran: kernel, decomposed or fallback ('' if it never did)


@dataclass
class Layer:
    """The outcome of one runtime-protocol layer."""

    name: str
    ok: bool
    detail: str = ""


@dataclass
class Report:
    """Everything one conformance run found about one backend."""

    backend: str
    device: str | None = None
    layers: list[Layer] = field(default_factory=list)
    cells: list[Cell] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """True when every layer passed and no cell failed."""
        return all(layer.ok for layer in self.layers) and all(c.status != FAIL
                                                              for c in self.cells)

    def counts(self) -> dict[str, int]:
        """Cells per status."""
        out = {PASS: 0, FAIL: 0, FALLBACK: 0, UNSUPPORTED: 0}
        for c in self.cells:
            out[c.status] += 1
        return out

    def to_dict(self) -> dict:
        """A JSON-ready dict."""
        return {"backend": self.backend, "device": self.device, "ok": self.ok,
                "seconds": round(self.seconds, 3), "counts": self.counts(),
                "layers": [asdict(x) for x in self.layers],
                "cells": [asdict(c) for c in self.cells]}


def run(backend: str, *, ops_: list[str] | None = None, dtypes: list[str] | None = None,
        examples: int = 20, index: int = 0, progress=None) -> Report:
    """Certify one backend: the runtime layers, then each op x dtype against the reference."""
    start = time.perf_counter()
    report = Report(backend)
    device = _runtime_layers(report, backend, index)
    if device is not None:
        selected = [ops.spec(n) for n in ops_] if ops_ else ops.specs()
        wanted = {dt.dtype(d) for d in dtypes} if dtypes else None
        todo = [(s, d) for s in selected for d in s.dtypes if wanted is None or d in wanted]
        for i, (s, d) in enumerate(todo):
            if progress:
                progress(i, len(todo), f"{s.name} {d.name}")
            report.cells.append(check_cell(device, s, d, examples))
    report.seconds = time.perf_counter() - start
    return report


# -- runtime layers ---------------------------------------------------------------------
def _runtime_layers(report: Report, name: str, index: int) -> Device | None:
    stage = "discover"
    try:
        backend = registry.get(name)
        reason = backend.why_unavailable()
        report.layers.append(Layer(stage, reason is None,
                                   reason or f"{backend.device_count()} device(s)"))
        if reason is not None:
            return None
        stage = "open"
        device = backend.open(index)
        caps = device.capabilities
        ok = bool(caps.name) and bool(caps.dtypes)
        report.device = device.name
        report.layers.append(Layer(stage, ok, f"{caps.name}; dtypes {', '.join(caps.dtypes)}"))
    except Exception as e:  # a plugin or device that fails is a finding, not a crash of the kit
        report.layers.append(Layer(stage, False, str(e) if isinstance(e, HalError) else
                                   f"{type(e).__name__}: {e}"))
        return None
    for layer in (_memory_layer, _timing_layer):
        try:
            report.layers.append(layer(device))
        except Exception as e:  # a broken layer is a finding, not a crash of the kit
            report.layers.append(Layer(layer.__name__.strip("_").replace("_layer", ""), False,
                                       f"{type(e).__name__}: {e}"))
    return device


def _memory_layer(device: Device) -> Layer:
    rng = np.random.default_rng(0)
    for d in dt.ALL:
        if not device.supports_dtype(d):
            continue
        host = (rng.standard_normal((3, 5)) * 10).astype(d)
        back = Tensor.from_host(host, device).numpy()
        if back.dtype != d or not np.array_equal(back.view(np.uint8), host.view(np.uint8)):
            return Layer("memory", False, f"{d.name} round trip changed the bytes")
    stats = device.memory_stats()
    detail = f"round trip of {len(device.capabilities.dtypes)} dtypes exact"
    if stats.allocated is not None:
        before = stats.allocated
        t = Tensor.from_host(np.zeros(1 << 16, np.uint8), device)
        during = device.memory_stats().allocated
        del t
        after = device.memory_stats().allocated
        if not (during >= before + (1 << 16) and after <= during):
            return Layer("memory", False, f"allocated {before} -> {during} -> {after} bytes")
        detail += f"; accounting {before} -> {during} -> {after} bytes"
    return Layer("memory", True, detail)


def _timing_layer(device: Device) -> Layer:
    n = 64  # small: simulators (Oclgrind) run it too
    a = Tensor.from_host(np.ones((n, n), np.float32), device)
    wall = time.perf_counter()
    start = device.record_event()
    with fallback_policy("allow"):
        for _ in range(3):
            call(ops.spec("matmul"), a, a)
    end = device.record_event()
    seconds = device.elapsed(start, end)
    wall = time.perf_counter() - wall
    ok = 0 <= seconds <= wall * 1.05 + 1e-4
    return Layer("timing", ok, f"{seconds * 1e3:.3f} ms by {device.timer}; host "
                               f"{wall * 1e3:.3f} ms")


# -- ops ----------------------------------------------------------------------------------
_HOW = ("kernel", "decomposed", "fallback")  # how an op ran, best first


def check_cell(device: Device, spec: ops.OpSpec, d: np.dtype, examples: int = 20) -> Cell:
    """Run the large inputs and hypothesis-drawn ones of one op x dtype on the device and
    classify the cell; `ran` says how the op itself ran (the worst over the inputs)."""
    from hypothesis import HealthCheck, example, given, settings

    start = time.perf_counter()
    why = device.capabilities.unsupported.get(spec.name)
    if why is not None:
        return Cell(spec.name, d.name, UNSUPPORTED, 0, time.perf_counter() - start,
                    f"{spec.name}: {device.name} declares it unsupported ({why})")
    if not device.supports_dtype(d):
        return _unsupported_cell(device, spec, d, start)
    state = {"n": 0, "fallback": False, "ran": set(), "last": None}
    device_dtypes = tuple(x for x in dt.ALL if device.supports_dtype(x))

    def prop(case: Case) -> None:
        state["last"] = case
        state["n"] += 1
        problem, ran, fell_back = _check_case(device, spec, case)
        state["ran"] |= ran
        state["fallback"] |= fell_back
        if problem:
            raise AssertionError(problem)

    for case in large_cases(spec, d):  # explicit examples: they run whatever `examples` is
        prop = example(case)(prop)
    prop = settings(max_examples=examples, deadline=None, database=None, derandomize=True,
                    suppress_health_check=list(HealthCheck), print_blob=False)(
        given(cases(spec, d, device_dtypes))(prop))

    def finish(status: str, error: str = "", snippet: str = "") -> Cell:
        ran = next((how for how in reversed(_HOW) if how in state["ran"]), "")
        return Cell(spec.name, d.name, status, state["n"], time.perf_counter() - start, error,
                    snippet, ran)

    try:
        prop()
    except Exception as e:  # hypothesis re-raises the shrunk failure; report, don't crash
        while isinstance(e, ExceptionGroup):
            e = e.exceptions[0]
        message = str(e) if isinstance(e, AssertionError) else \
            "".join(traceback.format_exception_only(e)).strip()
        return finish(FAIL, message.splitlines()[0][:500], repro(device, spec, state["last"]))
    return finish(FALLBACK if state["fallback"] else PASS)


def _unsupported_cell(device: Device, spec: ops.OpSpec, d: np.dtype, start: float) -> Cell:
    try:
        device.check_dtype(d, spec.name)
    except UnsupportedDType as e:
        return Cell(spec.name, d.name, UNSUPPORTED, 0, time.perf_counter() - start, str(e))
    return Cell(spec.name, d.name, FAIL, 0, time.perf_counter() - start,
                "dtype missing from capabilities but check_dtype accepts it")


def _to_device(value, device: Device, as_view: bool) -> tuple:
    """(operand, the tensors that must not change) for a host array; (value, ()) for others.

    A view's operand comes with the tensor it views, whose other elements must not change
    either.
    """
    if not isinstance(value, np.ndarray):
        return value, ()
    if as_view and value.ndim:
        base = np.zeros((*value.shape[:-1], 2 * value.shape[-1]), value.dtype)
        base[..., ::2] = value
        owner = Tensor.from_host(base, device)
        view = owner[..., ::2]
        return view, (view, owner)
    tensor = Tensor.from_host(value, device)
    return tensor, (tensor,)


def _check_case(device: Device, spec: ops.OpSpec, case: Case) -> tuple[str, set[str], bool]:
    """(problem or '', how the op itself ran, whether any op fell back to the CPU) for one case.

    Besides the result, it checks that the operands hold the same bytes afterwards and that
    a kernel the device registers for the op is the one that ran.
    """
    with fallback_policy("allow"), np.errstate(all="ignore"):
        placed = [_to_device(a, device, i in case.views) for i, a in enumerate(case.args)]
        operands = [operand for operand, _ in placed]
        watched = [(i, t, np.array(t.numpy())) for i, (_, held) in enumerate(placed)
                   for t in held]
        expected_error = None
        try:
            expected = spec.evaluate(*_promoted(spec, case.args), **case.params)
        except (HalError, ValueError, ArithmeticError) as e:
            expected_error = e
        with placement() as where:
            try:
                out = call(spec, *operands, **case.params)
            except HalError as e:
                ran = _how_ran(device, spec, where.records)
                if expected_error is not None and not isinstance(e, KernelError):
                    return "", ran, False  # both refuse the input
                return f"raised {type(e).__name__}: {e}", ran, False
        ran = _how_ran(device, spec, where.records)
        if expected_error is not None:
            return f"returned a result where the reference raised {expected_error!r}", ran, False
        actual = out.numpy()
        problem = _bypassed(device, spec, where.records) or _changed(watched)
    if not problem:
        bound = spec.bound(*_promoted(spec, case.args), **case.params) if spec.bound else None
        problem = mismatch(actual, expected, spec.tolerance_for(expected.dtype), bound)
    fell_back = device.backend.name != "cpu" and any(how == "fallback"
                                                      for *_, how in where.records)
    return (f"{problem} (placement {where.to_dict()['ops']})" if problem else ""), ran, fell_back


def _how_ran(device: Device, spec: ops.OpSpec, records: list[tuple]) -> set[str]:
    """How the op itself ran on the device: a subset of kernel, decomposed, fallback."""
    return {how for op, dev, _, how in records if op == spec.name and dev == device.name}


def _bypassed(device: Device, spec: ops.OpSpec, records: list[tuple]) -> str:
    """A problem when the op ran other than by the kernel the device registers for it."""
    for op, dev, dtype, how in records:
        if op == spec.name and dev == device.name and how != "kernel" and \
                device.kernel(op, dt.dtype(dtype)) is not None:
            return (f"{device.name} registers a {op} kernel for {dtype}, but the {how} path ran "
                    "instead: a registered kernel must run and pass (did it raise, or is it "
                    "bypassed?)")
    return ""


def _changed(watched: list[tuple]) -> str:
    """A problem naming the first operand whose bytes the call changed."""
    for i, tensor, old in watched:
        new = tensor.numpy()
        differs = (_items(old) != _items(new)).any(axis=1)
        if differs.any():
            at = tuple(int(k) for k in np.unravel_index(int(np.argmax(differs)), old.shape))
            return (f"operand {i} changed during the call (at {at}: {old[at]!r} became "
                    f"{new[at]!r}); an op must not write into its inputs")
    return ""


def _items(a: np.ndarray) -> np.ndarray:
    """The bytes of each element, one row per element (NaN payloads and -0.0 compare too)."""
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8).reshape(a.size, a.dtype.itemsize)


def _promoted(spec: ops.OpSpec, args: list) -> list:
    """Host operands promoted as dispatch promotes them, for the reference."""
    if not spec.promote:
        return [np.asarray(a) if a is not None and not isinstance(a, np.ndarray) else a
                for a in args]
    idx = range(len(args)) if spec.promote == (-1,) else spec.promote
    chosen = [args[i] for i in idx if i < len(args) and args[i] is not None]
    common = dt.result_type(*[a.dtype for a in chosen if isinstance(a, np.ndarray)],
                            *[a for a in chosen if not isinstance(a, np.ndarray)])
    return [np.asarray(a, dtype=common) if i in idx and a is not None else a
            for i, a in enumerate(args)]


def repro(device: Device, spec: ops.OpSpec, case: Case | None) -> str:
    """A Python snippet that replays a failing case and prints actual and expected."""
    if case is None:
        return ""
    lines = ["import numpy as np", "import hal", "from hal.dispatch import call",
             "nan, inf = float('nan'), float('inf')", f"dev = hal.device({device.name!r})"]
    if case.origin:
        lines += ["from hal.conformance.strategies import large_cases",
                  f"hosts = {case.origin}.args"]
    names = []
    for i, a in enumerate(case.args):
        if isinstance(a, np.ndarray):
            host = f"hosts[{i}]" if case.origin else \
                f"np.array({a.tolist()!r}, dtype={_dtype_expr(a.dtype)})"
            lines.append(f"h{i} = {host}")
            if i in case.views and a.ndim:
                lines.append(f"b{i} = np.zeros(h{i}.shape[:-1] + (2 * h{i}.shape[-1],), "
                             f"h{i}.dtype); b{i}[..., ::2] = h{i}")
                lines.append(f"x{i} = hal.asarray(b{i}, device=dev)[..., ::2]")
            else:
                lines.append(f"x{i} = hal.asarray(h{i}, device=dev)")
            names.append(f"x{i}")
        else:
            names.append(repr(a))
    params = ", ".join(f"{k}={_value_expr(v)}" for k, v in case.params.items())
    args = ", ".join(names)
    lines.append(f"out = call(hal.ops.spec({spec.name!r}), {args}{', ' if params else ''}"
                 f"{params})")
    lines.append("print(out.numpy())")
    hosts = ", ".join(f"h{i}" if isinstance(a, np.ndarray) else repr(a)
                      for i, a in enumerate(case.args))
    lines.append(f"print(hal.ops.spec({spec.name!r}).evaluate({hosts}"
                 f"{', ' if params else ''}{params}))  # reference")
    return "\n".join(lines)


def _dtype_expr(d: np.dtype) -> str:
    return "hal.bfloat16" if d == dt.bfloat16 else f"np.{d.name}"


def _value_expr(v) -> str:
    return _dtype_expr(v) if isinstance(v, np.dtype) else repr(v)
