"""Reductions with cupy (CUB where it applies): sum, max, min, the mean/var composites, and
the cumulative_sum scan.

Integers and bool sum to int64; float16/bfloat16 accumulate in float32 (`in_float32`).
"""

from __future__ import annotations

import math

from hal import dtypes as dt
from hal import shapes
from hal.ops import in_float32

from .table import register


@register("sum")
@in_float32
def sum_(x, *, axis=None, keepdims=False):
    """Sum over axes; int64 for integers and bool."""
    import cupy

    wide = dt.int64 if x.dtype.kind in "biu" else None
    return cupy.sum(x, axis=axis, dtype=wide, keepdims=keepdims)


@register("max")
@in_float32
def max_(x, *, axis=None, keepdims=False):
    """Maximum over axes (NaN propagates)."""
    import cupy

    return cupy.max(x, axis=axis, keepdims=keepdims)


@register("min")
@in_float32
def min_(x, *, axis=None, keepdims=False):
    """Minimum over axes (NaN propagates)."""
    import cupy

    return cupy.min(x, axis=axis, keepdims=keepdims)


@register("mean")
@in_float32
def mean(x, *, axis=None, keepdims=False):
    """Arithmetic mean over axes."""
    import cupy

    return cupy.mean(x, axis=axis, keepdims=keepdims)


@register("var")
@in_float32
def var(x, *, axis=None, keepdims=False, correction=0):
    """Variance over axes, dividing by max(N - correction, 0) as numpy does: inf (NaN for a
    constant input) when correction >= N."""
    import cupy

    n = math.prod(x.shape[a] for a in shapes.axes("var", axis, x.ndim))
    if correction < n:
        return cupy.var(x, axis=axis, ddof=correction, keepdims=keepdims)
    return cupy.var(x, axis=axis, keepdims=keepdims) / x.dtype.type(0)


@register("cumulative_sum")
@in_float32
def cumulative_sum(x, *, axis=None, include_initial=False):
    """Running sums along axis (the only axis of a 1-d x when None), int64 for integers and
    bool, led by a zero when include_initial; an empty x gives zeros (cupy's batched scan
    would launch an empty grid)."""
    import cupy

    a = 0 if axis is None else axis % x.ndim
    wide = dt.int64 if x.dtype.kind in "biu" else x.dtype
    if x.size == 0:
        shape = list(x.shape)
        shape[a] += bool(include_initial)
        return cupy.zeros(tuple(shape), wide)
    out = cupy.cumsum(x, axis=a, dtype=wide)
    if not include_initial:
        return out
    width = [(0, 0)] * x.ndim
    width[a] = (1, 0)
    return cupy.pad(out, width)
