"""The FFT family (numpy.fft semantics): the n-d transforms fftn, ifftn, rfftn, irfftn over
chosen axes; hal/fft.py builds the 1-d and 2-d functions on them."""

from __future__ import annotations

import functools

import numpy as np

from ..runtime import dtypes as dt
from ..runtime.errors import ShapeError
from . import shapes
from .spec import EXTENDED, LOOSE, declare, same

NORMS = (None, "backward", "ortho", "forward")


def _check_norm(op, norm):
    if norm not in NORMS:
        raise ShapeError(f"{op}: norm {norm!r} is not one of backward, ortho, forward")


def _fft_meta(name, rule):
    def meta(x, *, axes, norm=None):
        try:
            return _cached_meta(name, rule, x.shape, x.dtype, axes, norm, _kinds(axes))
        except TypeError:  # unhashable axes or norm: checked without the cache
            return _checked_meta(name, rule, x.shape, x.dtype, axes, norm)

    return meta


def _kinds(value):
    """The types of value's items (so that axis 1.0 or True is not taken for 1)."""
    return tuple(map(type, value)) if isinstance(value, tuple) else type(value)


@functools.lru_cache(maxsize=1024)
def _cached_meta(name, rule, shape, dtype, axes, norm, kinds):
    """_checked_meta, kept per call shape: the rule costs more than the transform's call."""
    return _checked_meta(name, rule, shape, dtype, axes, norm)


def _checked_meta(name, rule, shape, dtype, axes, norm):
    _check_norm(name, norm)
    ax = shapes.axes(name, axes, len(shape), allow_none=False)
    if any(shape[a] == 0 for a in ax):
        raise ShapeError(f"{name}: empty transform axis in shape {tuple(shape)}")
    out = list(shape)
    if name == "rfftn":
        out[ax[-1]] = shape[ax[-1]] // 2 + 1
    return tuple(out), rule(dtype)


def _irfftn_meta(x, *, axes, n, norm=None):
    try:
        return _cached_irfftn_meta(x.shape, x.dtype, axes, n, norm, _kinds(axes), type(n))
    except TypeError:  # unhashable axes or norm: checked without the cache
        return _checked_irfftn_meta(x.shape, x.dtype, axes, n, norm)


@functools.lru_cache(maxsize=1024)
def _cached_irfftn_meta(shape, dtype, axes, n, norm, kinds, n_kind):
    return _checked_irfftn_meta(shape, dtype, axes, n, norm)


def _checked_irfftn_meta(shape, dtype, axes, n, norm):
    _check_norm("irfftn", norm)
    ax = shapes.axes("irfftn", axes, len(shape), allow_none=False)
    if n < 1 or shape[ax[-1]] != n // 2 + 1:
        raise ShapeError(
            f"irfftn: output length {n} needs {n // 2 + 1} input points on axis {ax[-1]}, "
            f"shape is {tuple(shape)}"
        )
    out = list(shape)
    out[ax[-1]] = n
    return tuple(out), dt.real_dtype(dtype)


def _fft_bound(x, **params):
    return np.full(1, np.sum(np.abs(x)) + 1.0)


_FFT_TOL = LOOSE
declare(
    "fftn", EXTENDED, "fft", dt.COMPLEX,
    lambda x, *, axes, norm=None: np.fft.fftn(x, axes=axes, norm=norm),
    _fft_meta("fftn", same), tolerance=_FFT_TOL, bound=_fft_bound,
)
declare(
    "ifftn", EXTENDED, "fft", dt.COMPLEX,
    lambda x, *, axes, norm=None: np.fft.ifftn(x, axes=axes, norm=norm),
    _fft_meta("ifftn", same), tolerance=_FFT_TOL, bound=_fft_bound,
)
declare(
    "rfftn", EXTENDED, "fft", (dt.float32, dt.float64),
    lambda x, *, axes, norm=None: np.fft.rfftn(x, axes=axes, norm=norm),
    _fft_meta("rfftn", dt.complex_dtype), tolerance=_FFT_TOL, bound=_fft_bound,
)


def _irfftn_ref(x, *, axes, n, norm=None):
    s = [x.shape[a] for a in axes[:-1]] + [n]
    return np.fft.irfftn(x, s=s, axes=axes, norm=norm)


declare(
    "irfftn", EXTENDED, "fft", dt.COMPLEX, _irfftn_ref, _irfftn_meta, tolerance=_FFT_TOL,
    bound=_fft_bound,
)
