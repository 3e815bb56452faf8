"""The Array API's statistical functions beyond sum, max, min, mean and var: prod and std."""

from __future__ import annotations

from . import ops
from .dispatch import call
from .functions import astype, sqrt
from .nn import var
from .tensor import Tensor

_PROD = ops.spec("prod")


def prod(x, /, *, axis=None, dtype=None, keepdims: bool = False) -> Tensor:
    """Product over axes (all by default); integers and bool multiply in int64 unless dtype
    is given, which sets the dtype to accumulate in and of the result; empty: 1."""
    if dtype is None:
        return call(_PROD, x, axis=axis, keepdims=keepdims)
    return astype(call(_PROD, astype(x, dtype), axis=axis, keepdims=keepdims), dtype)


def std(x, /, *, axis=None, correction: float = 0, keepdims: bool = False) -> Tensor:
    """Standard deviation over axes: the square root of var (same correction rule)."""
    return sqrt(var(x, axis=axis, correction=correction, keepdims=keepdims))
