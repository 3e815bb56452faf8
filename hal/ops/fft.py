"""The FFT family (numpy.fft semantics): the n-d transforms fftn, ifftn, rfftn, irfftn over
chosen axes; hal/fft.py builds the 1-d and 2-d functions on them."""

from __future__ import annotations

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
        _check_norm(name, norm)
        ax = shapes.axes(name, axes, x.ndim, allow_none=False)
        if any(x.shape[a] == 0 for a in ax):
            raise ShapeError(f"{name}: empty transform axis in shape {tuple(x.shape)}")
        shape = list(x.shape)
        if name == "rfftn":
            shape[ax[-1]] = x.shape[ax[-1]] // 2 + 1
        return tuple(shape), rule(x.dtype)

    return meta


def _irfftn_meta(x, *, axes, n, norm=None):
    _check_norm("irfftn", norm)
    ax = shapes.axes("irfftn", axes, x.ndim, allow_none=False)
    if n < 1 or x.shape[ax[-1]] != n // 2 + 1:
        raise ShapeError(
            f"irfftn: output length {n} needs {n // 2 + 1} input points on axis {ax[-1]}, "
            f"shape is {tuple(x.shape)}"
        )
    shape = list(x.shape)
    shape[ax[-1]] = n
    return tuple(shape), dt.real_dtype(x.dtype)


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
