"""sort and argsort with cupy's stable sorts (Thrust), ordered as the op set's reference is.

cupy.sort and cupy.argsort are stable and put NaN last; descending is the reference's flip
of the ascending sort, so equal elements and NaNs land where numpy puts them. A 1-d float
array goes through CUB's radix sort, which orders NaNs by their bit patterns (a NaN with
the sign bit set would come first), so NaNs are made one positive NaN before sorting.
float16/bfloat16 sort as float32 (exact both ways); bool and integers sort as they are. An
empty tensor is answered without a sort (cupy before its #9816 failed on zero-length axes).
"""

from __future__ import annotations

import numpy as np

from hal import dtypes as dt
from hal.ops import in_float32

from .table import register


def _keys(x):
    """x with every NaN replaced by one positive NaN (floats), so all NaNs sort last, in order."""
    import cupy

    if not dt.is_floating(x.dtype):
        return x
    return cupy.where(cupy.isnan(x), x.dtype.type(np.nan), x)


@register("sort")
@in_float32
def sort(x, *, axis=-1, descending=False, stable=True):
    """Elements sorted along axis (always stably), NaN last ascending and first descending."""
    import cupy

    if x.size == 0:
        return x.copy()
    out = cupy.sort(_keys(x), axis=axis)
    return cupy.flip(out, axis) if descending else out


@register("argsort")
@in_float32
def argsort(x, *, axis=-1, descending=False, stable=True):
    """int64 indices that sort x stably along axis; descending keeps equal elements in order
    by sorting the reversed axis and mapping positions back, as the reference does."""
    import cupy

    if x.size == 0:
        return cupy.zeros(x.shape, dt.int64)
    keys = _keys(x)
    if not descending:
        return cupy.argsort(keys, axis=axis).astype(dt.int64, copy=False)
    flipped = cupy.flip(cupy.argsort(cupy.flip(keys, axis), axis=axis), axis)
    return (x.shape[axis] - 1 - flipped).astype(dt.int64, copy=False)
