"""The n-th derivative of an elementwise function by any of the three modes, for comparison.

Taylor mode takes one pass; nested reverse and nested forward mode differentiate
`order` times over, and their cost grows exponentially with the order.
"""

from __future__ import annotations

from collections.abc import Callable

import hal
from hal import HalError, Tensor

from .forward import jvp
from .reverse import elementwise_grad
from .taylor import derivatives
from .trace import check_order

MODES = ("taylor", "reverse", "forward")


def derivative(f: Callable, order: int, mode: str = "taylor") -> Callable:
    """x -> f^(order)(x) for an elementwise f: one Taylor pass, or nested reverse/forward."""
    k = check_order("derivative", order)
    if mode not in MODES:
        raise HalError(f"derivative: mode {mode!r} is not one of {', '.join(MODES)}")
    if mode == "taylor":
        return lambda x: derivatives(f, x, k)[k]
    d = f
    for _ in range(k):
        d = elementwise_grad(d) if mode == "reverse" else _elementwise_jvp(d)
    return d


def _elementwise_jvp(f: Callable) -> Callable:
    def wrapped(x: Tensor) -> Tensor:
        return jvp(f, (x,), (hal.ones_like(x),))[1]

    return wrapped
