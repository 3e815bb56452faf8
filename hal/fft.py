"""The FFT family with numpy.fft's names, arguments and norm modes: `hal.fft.fft(x, axis=-1)`.

The op set holds the n-d transforms (fftn, ifftn, rfftn, irfftn over chosen axes);
the 1-d and 2-d functions here are those over one or two axes. Real input to a complex
transform is cast to complex first, float16 to float32, and `n`/`s` crop or zero-pad
the input as numpy does, so backends see only whole complex64/complex128 (or
float32/float64 for rfftn) transforms.
"""

from __future__ import annotations

import numpy as np

from . import functions as F
from . import ops
from .creation import asarray
from .dispatch import call
from .ops import shapes
from .runtime import dtypes as dt
from .runtime.errors import ShapeError, UnsupportedDType
from .tensor import Tensor

_FFTN, _IFFTN, _RFFTN, _IRFFTN = (ops.spec(n) for n in ("fftn", "ifftn", "rfftn", "irfftn"))


def _as_tensor(x) -> Tensor:
    return x if isinstance(x, Tensor) else asarray(x)


def _complex_input(op: str, x: Tensor) -> Tensor:
    if dt.is_integer(x.dtype) or dt.is_bool(x.dtype) or x.dtype == dt.bfloat16:
        raise UnsupportedDType(f"{op}: input dtype {x.dtype.name} is not float16/32/64 or complex")
    return F.astype(x, dt.complex_dtype(x.dtype))


def _real_input(op: str, x: Tensor) -> Tensor:
    if not dt.is_floating(x.dtype) or x.dtype == dt.bfloat16:
        raise UnsupportedDType(f"{op}: input dtype {x.dtype.name} is not float16/32/64")
    return F.astype(x, dt.float64 if x.dtype == dt.float64 else dt.float32)


def _resize(op: str, x: Tensor, axes: tuple, sizes) -> Tensor:
    """Crop or zero-pad x along axes to sizes (numpy's n and s)."""
    if sizes is None:
        return x
    for n in sizes:
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
            raise ShapeError(f"{op}: transform size {n!r} must be an int")
    bounds = [(0, 1, n) for n in x.shape]
    widths = [(0, 0)] * x.ndim
    for a, n in zip(axes, sizes):
        if n < 1:
            raise ShapeError(f"{op}: transform size {n} must be at least 1")
        bounds[a] = (0, 1, min(n, x.shape[a]))
        widths[a] = (0, max(0, n - x.shape[a]))
    if any(b[2] != m for b, m in zip(bounds, x.shape)):
        x = F.slice(x, bounds)
    if any(w != (0, 0) for w in widths):
        x = F.pad(x, widths)
    return x


def _axes(op: str, x: Tensor, s, axes) -> tuple[tuple, tuple | None]:
    """(the axes to transform, the sizes s as a tuple or None), checked: ints, no repeats,
    at least one axis."""
    s = None if s is None else shapes.ints(op, "s", s)
    if axes is None:
        axes = range(x.ndim) if s is None else range(x.ndim - len(s), x.ndim)
    ax = tuple(shapes.axis(op, a, x.ndim) for a in shapes.ints(op, "axes", axes))
    if len(set(ax)) != len(ax):
        raise ShapeError(f"{op}: repeated axis in {axes!r}")
    if not ax:
        raise ShapeError(f"{op}: no axis to transform (input shape {tuple(x.shape)}, s {s})")
    if s is not None and len(s) != len(ax):
        raise ShapeError(f"{op}: {len(s)} sizes for {len(ax)} axes")
    return ax, s


def fftn(x, s=None, axes=None, norm=None) -> Tensor:
    """N-d discrete Fourier transform over axes (all by default)."""
    x = _complex_input("fftn", _as_tensor(x))
    ax, s = _axes("fftn", x, s, axes)
    return call(_FFTN, _resize("fftn", x, ax, s), axes=ax, norm=norm)


def ifftn(x, s=None, axes=None, norm=None) -> Tensor:
    """N-d inverse discrete Fourier transform over axes."""
    x = _complex_input("ifftn", _as_tensor(x))
    ax, s = _axes("ifftn", x, s, axes)
    return call(_IFFTN, _resize("ifftn", x, ax, s), axes=ax, norm=norm)


def rfftn(x, s=None, axes=None, norm=None) -> Tensor:
    """N-d transform of real input; the last axis keeps n//2 + 1 points."""
    x = _real_input("rfftn", _as_tensor(x))
    ax, s = _axes("rfftn", x, s, axes)
    return call(_RFFTN, _resize("rfftn", x, ax, s), axes=ax, norm=norm)


def irfftn(x, s=None, axes=None, norm=None) -> Tensor:
    """Inverse of rfftn: real output; s gives the output sizes (last: 2*(m-1) by default)."""
    x = _complex_input("irfftn", _as_tensor(x))
    ax, s = _axes("irfftn", x, s, axes)
    sizes = list(s) if s is not None else [x.shape[a] for a in ax[:-1]] + [
        2 * (x.shape[ax[-1]] - 1)]
    n = sizes[-1]
    inner = [*sizes[:-1], n // 2 + 1]
    return call(_IRFFTN, _resize("irfftn", x, ax, inner), axes=ax, n=n, norm=norm)


def fft(x, n=None, axis=-1, norm=None) -> Tensor:
    """1-d discrete Fourier transform along axis."""
    return fftn(x, None if n is None else (n,), (axis,), norm)


def ifft(x, n=None, axis=-1, norm=None) -> Tensor:
    """1-d inverse discrete Fourier transform along axis."""
    return ifftn(x, None if n is None else (n,), (axis,), norm)


def rfft(x, n=None, axis=-1, norm=None) -> Tensor:
    """1-d transform of real input (n//2 + 1 points)."""
    return rfftn(x, None if n is None else (n,), (axis,), norm)


def irfft(x, n=None, axis=-1, norm=None) -> Tensor:
    """Inverse of rfft: n real points (2*(m-1) by default)."""
    return irfftn(x, None if n is None else (n,), (axis,), norm)


def fft2(x, s=None, axes=(-2, -1), norm=None) -> Tensor:
    """2-d discrete Fourier transform."""
    return fftn(x, s, axes, norm)


def ifft2(x, s=None, axes=(-2, -1), norm=None) -> Tensor:
    """2-d inverse discrete Fourier transform."""
    return ifftn(x, s, axes, norm)


def rfft2(x, s=None, axes=(-2, -1), norm=None) -> Tensor:
    """2-d transform of real input."""
    return rfftn(x, s, axes, norm)


def irfft2(x, s=None, axes=(-2, -1), norm=None) -> Tensor:
    """Inverse of rfft2."""
    return irfftn(x, s, axes, norm)
