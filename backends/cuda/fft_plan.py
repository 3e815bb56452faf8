"""cuFFT plans made once per shape and executed into outputs allocated by the caller.

A transform over the trailing axes of a C-contiguous array (complex to complex over 1 to 3
axes; real to complex and complex to real over the last axis) gets a cuFFT plan from
cupy (`cupyx.scipy.fftpack.get_fft_plan`), kept per (GPU, transform, shape, dtype) in a
least-recently-used cache of `PLANS`; each call is one `plan.fft(x, out, direction)` on
the current stream (so a captured graph records it), plus one in-place scaling where the
norm asks for it. Other layouts return None from `layout` and go through cupy.fft.
`layout`, `scale` and `plans` are pure (no cupy).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Hashable

import numpy as np

from hal import dtypes as dt

PLANS = 64  # plans kept (each holds a cuFFT work area on its GPU)
C2C, R2C, C2R = "C2C", "R2C", "C2R"


def layout(shape: tuple, axes: tuple, kind: str) -> tuple[int, ...] | None:
    """The transform lengths of a planned transform of `kind` over `axes` of an array of
    `shape` (axes trailing and in order: 1 to 3 for C2C, the last one only for R2C and
    C2R), or None where cupy.fft should do it."""
    ndim = len(shape)
    axes = tuple(a % ndim for a in axes) if ndim else ()
    if not axes or axes != tuple(range(ndim - len(axes), ndim)):
        return None
    if len(axes) > (3 if kind == C2C else 1) or 0 in shape:
        return None
    return tuple(shape[a] for a in axes)


def scale(norm: str | None, inverse: bool, n: int) -> float | None:
    """The factor a transform of n points is multiplied by under numpy's `norm` (None:
    none needed)."""
    if norm == "ortho":
        return 1 / math.sqrt(n)
    if (norm == "forward") != inverse:
        return 1 / n
    return None


def plans(make: Callable[[Hashable], object], size: int = PLANS) -> Callable:
    """make(key) memoised for the `size` keys used last (functools.lru_cache)."""
    return functools.lru_cache(maxsize=size)(make)


def _make(key):
    """A cuFFT plan for key = (GPU id, kind, shape, dtype, axes, output lengths on axes)."""
    import cupy
    from cupyx.scipy.fftpack import get_fft_plan

    _, kind, shape, dtype, axes, n = key
    template = cupy.empty(shape, dtype)  # get_fft_plan reads its layout only
    return get_fft_plan(template, shape=n if kind == C2R else None, axes=axes,
                        value_type=kind)


plan = plans(_make)
"""The process's plans: plan(key) -> a cuFFT plan, the PLANS used last kept."""


def execute(x, axes: tuple, kind: str, *, inverse: bool, norm, n: int | None = None):
    """The transform of x (C-contiguous) over `axes`, which `layout` accepted, into a new
    array: complex of x's precision for C2C and R2C, real for C2R with n points on the
    last axis."""
    import cupy
    from cupy.cuda import cufft

    lengths = layout(x.shape, axes, kind)
    axes = tuple(range(x.ndim - len(lengths), x.ndim))
    if kind == C2R:
        shape, out_dtype, lengths = (*x.shape[:-1], n), dt.real_dtype(x.dtype), (n,)
    elif kind == R2C:
        shape, out_dtype = (*x.shape[:-1], x.shape[-1] // 2 + 1), dt.complex_dtype(x.dtype)
    else:
        shape, out_dtype = x.shape, x.dtype
    key = (cupy.cuda.Device().id, kind, tuple(x.shape), x.dtype.str, axes,
           lengths if kind == C2R else None)
    out = cupy.empty(shape, out_dtype)
    plan(key).fft(x, out, cufft.CUFFT_INVERSE if inverse else cufft.CUFFT_FORWARD)
    factor = scale(norm, inverse, math.prod(lengths))
    if factor is not None:
        out *= np.dtype(dt.real_dtype(out_dtype)).type(factor)
    return out
