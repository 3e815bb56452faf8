"""Forward mode: series carried alongside the primal values through every op.

A `Forward` level of order k keeps, for each tensor that depends on its inputs, the
Taylor coefficients [x1, ..., xk] (weakly keyed, so they die with the tensor). Order 1
is `jvp`; Taylor mode (`frontends.autograd.taylor`) runs the same level at higher order.
`jacfwd` and `hessian` build on `jvp`.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable

import hal
from hal import HalError, Tensor

from .pytree import flatten, unflatten
from .reverse import fix_others, jacrev, normalize_argnums, unit
from .series_rules import RULES
from .trace import (
    Blocked,
    Level,
    active,
    blocked_output,
    check_flow,
    check_input,
    followed,
    fresh,
)


class Forward(Level):
    """A forward-mode level of a given order: propagates truncated Taylor series."""

    def __init__(self, order: int, mode: str) -> None:
        super().__init__()
        self.order = order
        self.mode = mode
        self.series: dict[int, tuple[weakref.ref, object]] = {}

    def get(self, t):
        """The coefficients [x1..xk] (or a Blocked marker) of t, None for a constant."""
        if t is None:
            return None
        entry = self.series.get(id(t))
        return entry[1] if entry is not None and entry[0]() is t else None

    def put(self, t: Tensor, coefficients) -> None:
        """Attach coefficients (or a Blocked marker) to t for as long as t lives."""
        key, table = id(t), self.series
        table[key] = (weakref.ref(t, lambda _, key=key: table.pop(key, None)), coefficients)

    def record(self, spec, args, params, out) -> None:
        """Compute the series of the op's result from its operands' series."""
        marks = [self.get(a) for a in args]
        if not followed(spec, marks):
            return
        blocked = blocked_output(spec, args, out, marks)
        if blocked is not None:
            self.put(out, blocked)
            return
        check_flow(spec, marks, self.mode)
        rule = RULES.get(spec.name)
        if rule is None:
            raise HalError(f"{self.mode}: op {spec.name} has no forward rule")
        series = [None if m is None or isinstance(m, Blocked) else [a, *m]
                  for a, m in zip(args, marks, strict=True)]
        with self.own_work():
            ys = rule(args, params, out, series)
            coefficients = [_fit(c, out) for c in ys[1:]]
        if any(c is not None for c in coefficients):
            self.put(out, coefficients)

    def result(self, out: Tensor) -> list:
        """The coefficients of a result (zeros-free: None for zero); raises if blocked."""
        m = self.get(out)
        if isinstance(m, Blocked):
            raise m.error(self.mode)
        return [None] * self.order if m is None else list(m)


def _fit(c, out):
    if c is None:
        return None
    if c.shape != out.shape:
        c = hal.broadcast_to(c, out.shape)
    return c if c.dtype == out.dtype else hal.astype(c, out.dtype)


def propagate(f: Callable, primals, coefficients, order: int, mode: str):
    """Run f on primals with input series coefficients; (result, per-output coefficients).

    coefficients holds, per primal leaf, a list of `order` Tensors or None (zero).
    """
    leaves, structure = flatten(primals, "primal")
    xs = [fresh(check_input(x, mode, "primal")) for x in leaves]
    level = Forward(order, mode)
    for x, cs in zip(xs, coefficients, strict=True):
        if any(c is not None for c in cs):
            level.put(x, list(cs))
    with active(level):
        result = f(*unflatten(structure, xs))
    outs, out_structure = flatten(result, "output of the function")
    return result, out_structure, outs, [level.result(o) for o in outs]


def jvp(f: Callable, primals, tangents):
    """(f(*primals), the directional derivative of f along tangents): forward mode.

    primals and tangents are tuples (pytrees) of Tensors of matching shapes and dtypes.
    For holomorphic f on complex inputs the tangent out is f'(z) * t.
    """
    leaves, _ = flatten(tuple(primals), "primal")
    tleaves, _ = flatten(tuple(tangents), "tangent")
    if len(tleaves) != len(leaves):
        raise HalError(f"jvp: {len(tleaves)} tangents for {len(leaves)} primals")
    for x, t in zip(leaves, tleaves, strict=True):
        if tuple(t.shape) != tuple(x.shape) or t.dtype != x.dtype:
            raise HalError(
                f"jvp: tangent {t.dtype.name}{list(t.shape)} does not match primal "
                f"{x.dtype.name}{list(x.shape)}; give it the primal's shape and dtype"
            )
    result, structure, outs, coefficients = propagate(
        f, tuple(primals), [[t] for t in tleaves], 1, "jvp")
    touts = [hal.zeros_like(o) if c[0] is None else c[0]
             for o, c in zip(outs, coefficients, strict=True)]
    return result, unflatten(structure, touts)


def jacfwd(f: Callable, argnums=0) -> Callable:
    """The Jacobian by forward mode: one jvp per input element.

    f returns one Tensor; the Jacobian has shape out.shape + arg.shape (a tuple of them
    when argnums is a tuple).
    """
    def wrapped(*args):
        nums = normalize_argnums("jacfwd", argnums, len(args))
        g = fix_others(f, args, nums)
        primals = tuple(args[i] for i in nums)
        jac = []
        for j, x in enumerate(primals):
            columns = []
            for i in range(x.size):
                tangents = tuple(unit(p, i) if m == j else hal.zeros_like(p)
                                 for m, p in enumerate(primals))
                out, t = jvp(g, primals, tangents)
                if not isinstance(out, Tensor):
                    raise HalError("jacfwd: the function must return one Tensor")
                columns.append(t)
            if columns:
                stacked = hal.stack(columns, axis=-1)
                jac.append(hal.reshape(stacked, (*columns[0].shape, *x.shape)))
            else:
                out = g(*primals)
                jac.append(hal.zeros((*out.shape, *x.shape), dtype=out.dtype, device=x.device))
        return jac[0] if isinstance(argnums, int) else tuple(jac)

    return wrapped


def hessian(f: Callable, argnums=0) -> Callable:
    """The Hessian of a real scalar function: forward over reverse (jacfwd of jacrev)."""
    return jacfwd(jacrev(f, argnums), argnums)
