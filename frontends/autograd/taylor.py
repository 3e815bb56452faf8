"""Taylor mode: every derivative up to order k along a direction, in one forward pass.

Each op maps the truncated Taylor series of its operands to that of its result (Cauchy
products, the standard recurrences for divide, exp, log, sqrt, sin/cos, tanh, erf and
power; linear ops act on each coefficient), so the cost is O(k^2) per op, not the
exponential growth of nested first-order differentiation (Bettencourt, Johnson and
Duvenaud 2019; JAX's `jax.experimental.jet`).
"""

from __future__ import annotations

from collections.abc import Callable

import hal
from hal import HalError, Tensor

from . import series as S
from .forward import propagate
from .pytree import flatten, unflatten
from .trace import check_order


def jet(f: Callable, primals, series):
    """(f(*primals), [d1, ..., dk]) for input curves given by their derivatives (JAX's jet).

    The input curve of primal i is x_i(t) = x_i + sum_n series[i][n-1] t^n / n!; the
    result lists the derivatives d_n = d^n/dt^n f(x(t)) at t = 0, in f's output structure.
    An entry of series may be None for a zero term.
    """
    leaves, _ = flatten(tuple(primals), "primal")
    if len(series) != len(leaves):
        raise HalError(f"jet: {len(series)} series for {len(leaves)} primals")
    orders = {len(s) for s in series}
    if len(orders) != 1:
        raise HalError(f"jet: every series needs the same number of terms, got {sorted(orders)}")
    k = check_order("jet", orders.pop())
    for x, terms in zip(leaves, series, strict=False):
        for t in terms:
            if t is not None and (tuple(t.shape) != tuple(x.shape) or t.dtype != x.dtype):
                raise HalError(
                    f"jet: series term {t.dtype.name}{list(t.shape)} does not match primal "
                    f"{x.dtype.name}{list(x.shape)}; give it the primal's shape and dtype"
                )
    if k == 0:
        result = f(*primals)
        return result, []
    coefficients = [S.coefficients(list(terms)) for terms in series]
    result, structure, outs, out_coefficients = propagate(f, tuple(primals), coefficients, k,
                                                          "jet")
    per_output = [[hal.zeros_like(o) if d is None else d for d in S.derivatives([o, *cs])[1:]]
                  for o, cs in zip(outs, out_coefficients, strict=True)]
    return result, [unflatten(structure, [ds[n] for ds in per_output]) for n in range(k)]


def derivatives(f: Callable, x: Tensor, order: int, direction: Tensor | None = None) -> list:
    """[f(x), D f(x), ..., D^order f(x)]: derivatives of f along direction (ones by default).

    For an elementwise f and the default direction these are the elementwise derivatives
    f^(n)(x). One pass of Taylor mode; `order` must be a non-negative integer.
    """
    k = check_order("derivatives", order)
    v = hal.ones_like(x) if direction is None else direction
    value, terms = jet(f, (x,), ([v] + [None] * (k - 1) if k else [],))
    return [value, *terms]
