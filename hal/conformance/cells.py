"""The op cells: one op x dtype on the device against the numpy reference.

A cell runs a few large inputs, a few edge values and hypothesis-drawn ones and ends as
pass, fail (with a repro snippet), fallback (correct, but ran on the CPU) or unsupported
(the device declares the dtype unsupported and the op says so with UnsupportedDType), and
records how the op itself ran: the device's kernel, the composite's decomposition, or the
CPU fallback. A cell fails when the result differs from the reference, when an operand
changed during the call, when a kernel raised, and when the device registers a kernel for
the op but something else ran.
"""

from __future__ import annotations

import time
import traceback

import numpy as np

from .. import ops
from ..dispatch import call, fallback_policy, placement
from ..runtime import dtypes as dt
from ..runtime.device import Device
from ..runtime.errors import HalError, KernelError, UnsupportedDType
from ..tensor import Tensor
from .compare import element_bytes, mismatch
from .edge_inputs import edge_cases
from .inputs import Case
from .large_inputs import large_cases
from .records import FAIL, FALLBACK, PASS, UNSUPPORTED, Cell
from .repro import repro
from .strategies import cases

_HOW = ("kernel", "decomposed", "fallback")  # how an op ran, best first


def check_cell(device: Device, spec: ops.OpSpec, d: np.dtype, examples: int = 20) -> Cell:
    """Run the large inputs, the edge values and hypothesis-drawn inputs of one op x dtype
    on the device and classify the cell; `ran` says how the op itself ran (the worst over
    the inputs)."""
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

    # explicit examples: they run whatever `examples` is
    for case in [*large_cases(spec, d), *edge_cases(spec, d)]:
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
        differs = (element_bytes(old) != element_bytes(new)).any(axis=1)
        if differs.any():
            at = tuple(int(k) for k in np.unravel_index(int(np.argmax(differs)), old.shape))
            return (f"operand {i} changed during the call (at {at}: {old[at]!r} became "
                    f"{new[at]!r}); an op must not write into its inputs")
    return ""


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
