"""Differentiation levels on hal's op observer: one level per nested grad, jvp or jet call.

A level watches the ops that run while it is active (`hal.observe`) and follows the
tensors that depend on its inputs, keyed by identity. Levels nest as in HIPS autograd:
the ops a level runs to differentiate (its rules) are observed by the levels around it,
so derivatives of derivatives come out of the same rules. A level never observes its
own rules (it is `busy` while they run). Each level starts from fresh aliases of its
inputs, so a value captured from outside is a constant to it (no perturbation confusion).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np

import hal
from hal import HalError, Tensor
from hal import dtypes as dt

_paused = 0  # > 0 inside stop_gradient: no level records


class Level:
    """Base of a differentiation level: filters the observer calls a subclass records."""

    def __init__(self) -> None:
        self.busy = False

    def observe(self, spec, args, params, out, how) -> None:
        """hal.observe hook: hand every op that is not this level's own work to `record`."""
        if self.busy or _paused or how == "decomposed":
            return  # a decomposed composite was seen op by op already
        self.record(spec, args, params, out)

    def record(self, spec, args, params, out) -> None:
        """Handle one op call (subclasses)."""
        raise NotImplementedError

    @contextlib.contextmanager
    def own_work(self) -> Iterator[None]:
        """Run this level's rules without observing them itself."""
        self.busy = True
        try:
            yield
        finally:
            self.busy = False


@contextlib.contextmanager
def active(level: Level) -> Iterator[Level]:
    """Observe ops with `level` inside the block (after every enclosing level)."""
    with hal.observe(level.observe):
        yield level


def fresh(x: Tensor) -> Tensor:
    """A new tensor object equal to x that enclosing levels see as derived from x."""
    return hal.reshape(x, x.shape)


def stop_gradient(x: Tensor) -> Tensor:
    """x as a constant to every active level: no derivative flows through the result."""
    global _paused
    _paused += 1
    try:
        return fresh(x)
    finally:
        _paused -= 1


def is_float(d) -> bool:
    """True for dtypes that carry derivatives (real floating and complex)."""
    return dt.is_floating(d) or dt.is_complex(d)


def check_input(x, fn: str, what: str = "input") -> Tensor:
    """x if it is a floating or complex Tensor, else a HalError saying what to do."""
    if not isinstance(x, Tensor):
        raise HalError(
            f"{fn}: {what} of type {type(x).__name__} is not a hal Tensor; wrap it with "
            "hal.asarray"
        )
    if not is_float(x.dtype):
        raise HalError(
            f"{fn}: {what} has dtype {x.dtype.name} {tuple(x.shape)}, which carries no "
            "derivative; cast it to a floating dtype with hal.astype first"
        )
    return x


def signature(spec, args, out) -> str:
    """`op(float64[3], float64[]) -> bool[3]`: an op call for error messages."""
    def one(t):
        return "None" if t is None else f"{t.dtype.name}{list(t.shape)}"

    return f"{spec.name}({', '.join(one(a) for a in args)}) -> {one(out)}"


class Blocked:
    """The derivative of a value computed by an op that has none (a comparison, a cast to int)."""

    __slots__ = ("call",)

    def __init__(self, call: str):
        self.call = call

    def error(self, mode: str) -> HalError:
        """The error to raise when a derivative would have to flow through the op."""
        return HalError(
            f"{mode}: cannot differentiate through {self.call} with respect to its input: "
            "comparisons, casts to integer or bool and quantization have no derivative. Use "
            "the result only as a hal.where condition, or wrap the input in "
            "frontends.autograd.stop_gradient(...) if a zero derivative is intended"
        )


def blocked_output(spec, args, out, marks) -> Blocked | None:
    """What the result of a watched op carries when it has no derivative, else None.

    marks[i] is falsy for an input the level does not follow, a Blocked marker for one
    that is blocked already, anything else for one it follows. The op is to blame when
    it turns a followed floating input into a result without a derivative; otherwise the
    result inherits its input's marker (an integer sum of a comparison's result, ...).
    """
    if spec.differentiable and is_float(out.dtype):
        return None
    inherited = None
    for a, m in zip(args, marks, strict=False):
        if m and not isinstance(m, Blocked) and is_float(a.dtype):
            return Blocked(signature(spec, args, out))
        if isinstance(m, Blocked) and inherited is None:
            inherited = m
    return inherited or Blocked(signature(spec, args, out))


def followed(spec, marks) -> bool:
    """True if a derivative can reach the op's result (a where condition never passes one)."""
    return any(m for i, m in enumerate(marks) if not (i == 0 and spec.name == "where"))


def check_flow(spec, marks, mode: str) -> None:
    """Raise if a derivative must flow into a blocked input (a where condition never does)."""
    for i, m in enumerate(marks):
        if isinstance(m, Blocked) and not (spec.name == "where" and i == 0):
            raise m.error(mode)


def check_order(fn: str, order) -> int:
    """order if it is a non-negative int, else a HalError naming fn and the value."""
    if isinstance(order, bool) or not isinstance(order, (int, np.integer)) or order < 0:
        raise HalError(
            f"{fn}: order {order!r} must be a non-negative integer (0 gives the value itself)"
        )
    return int(order)
