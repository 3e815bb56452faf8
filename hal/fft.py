"""The FFT family with numpy.fft's names, arguments and norm modes: `hal.fft.fft(x, axis=-1)`.

The op set holds the n-d transforms (fftn, ifftn, rfftn, irfftn over chosen axes);
the 1-d and 2-d functions here are those over one or two axes, and the Array API's
hfft/ihfft, fftfreq/rfftfreq and fftshift/ifftshift are composites of other ops. Real
input to a complex transform is cast to complex first, float16 to float32, and `n`/`s`
crop or zero-pad the input as numpy does, so backends see only whole complex64/complex128
(or float32/float64 for rfftn) transforms.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from . import functions as F
from . import ops
from .creation import arange, asarray
from .dispatch import call
from .ops import arguments, shapes
from .runtime import dtypes as dt
from .runtime.errors import DomainError, ShapeError, UnsupportedDType
from .tensor import Tensor

_FFTN, _IFFTN, _RFFTN, _IRFFTN, _ROLL = (ops.spec(n) for n in ("fftn", "ifftn", "rfftn",
                                                                 "irfftn", "roll"))
_CACHED = 1024  # call shapes whose checked axes and sizes are kept


@functools.lru_cache(maxsize=64)
def _input_dtype(op: str, dtype: np.dtype) -> np.dtype:
    """The dtype op transforms for an input dtype: complex for fftn/ifftn/irfftn (real cast
    up, float16 to complex64), float32/float64 for rfftn."""
    if op == "rfftn":
        if not dt.is_floating(dtype) or dtype == dt.bfloat16:
            raise UnsupportedDType(f"{op}: input dtype {dtype.name} is not float16/32/64")
        return dt.float64 if dtype == dt.float64 else dt.float32
    if dt.is_integer(dtype) or dt.is_bool(dtype) or dtype == dt.bfloat16:
        raise UnsupportedDType(f"{op}: input dtype {dtype.name} is not float16/32/64 or complex")
    return dt.complex_dtype(dtype)


class _Layout(NamedTuple):
    """A call's checked axes, the crop/pad bringing the input to the transform's size (None
    for none), and irfftn's output length n."""

    axes: tuple
    bounds: list | None
    widths: list | None
    n: int | None


def _kinds(value):
    """The types of value's items (so that axis 1.0 or True is not taken for 1)."""
    return tuple(map(type, value)) if isinstance(value, tuple) else type(value)


@functools.lru_cache(maxsize=_CACHED)
def _cached_layout(op, shape, s, axes, s_kinds, axes_kinds) -> _Layout:
    return _checked_layout(op, shape, s, axes)


def _checked_layout(op: str, shape: tuple, s, axes) -> _Layout:
    """numpy's axes and s for an input shape, checked: ints, no repeats, at least one
    axis, sizes >= 1; irfftn's sizes default to the last axis' 2*(m-1)."""
    ndim = len(shape)
    s = None if s is None else shapes.ints(op, "s", s)
    if axes is None:
        axes = range(ndim) if s is None else range(ndim - len(s), ndim)
    ax = tuple(shapes.axis(op, a, ndim) for a in shapes.ints(op, "axes", axes))
    if len(set(ax)) != len(ax):
        raise ShapeError(f"{op}: repeated axis in {axes!r}")
    if not ax:
        raise ShapeError(f"{op}: no axis to transform (input shape {shape}, s {s})")
    if s is not None and len(s) != len(ax):
        raise ShapeError(f"{op}: {len(s)} sizes for {len(ax)} axes")
    n = None
    if op == "irfftn":
        sizes = list(s) if s is not None else [shape[a] for a in ax[:-1]] + [
            2 * (shape[ax[-1]] - 1)]
        n = sizes[-1]
        s = (*sizes[:-1], n // 2 + 1)
    if s is None:
        return _Layout(ax, None, None, n)
    for size in s:
        if size < 1:
            raise ShapeError(f"{op}: transform size {size} must be at least 1")
    bounds = [(0, 1, m) for m in shape]
    widths = [(0, 0)] * ndim
    for a, size in zip(ax, s):
        bounds[a] = (0, 1, min(size, shape[a]))
        widths[a] = (0, max(0, size - shape[a]))
    return _Layout(ax, bounds if any(b[2] != m for b, m in zip(bounds, shape)) else None,
                   widths if any(w != (0, 0) for w in widths) else None, n)


def _resized(x: Tensor, layout: _Layout) -> Tensor:
    """x cropped or zero-padded to the transform's sizes (numpy's n and s)."""
    if layout.bounds is not None:
        x = F.slice(x, layout.bounds)
    if layout.widths is not None:
        x = F.pad(x, layout.widths)
    return x


@functools.lru_cache(maxsize=_CACHED, typed=True)
def _cached_one_axis(op, shape, n, axis) -> _Layout:
    return _checked_layout(op, shape, None if n is None else (n,), (axis,))


def _transform(spec, x, s, axes, norm, one_axis: bool = False) -> Tensor:
    """The transform of x (made a Tensor of the op's input dtype, cropped or padded) over
    the axes numpy's arguments name: `s`, `axes` of an n-d function, or `n`, `axis` of a
    1-d one (one_axis). Checked axes and sizes are cached per call shape where s and axes
    are hashable; one function, so that a repeated call costs few frames."""
    op = spec.name
    if not isinstance(x, Tensor):
        x = asarray(x)
    target = _input_dtype(op, x.dtype)
    if target is not x.dtype:
        x = F.astype(x, target)
    try:
        layout = _cached_one_axis(op, x.shape, s, axes) if one_axis else \
            _cached_layout(op, x.shape, s, axes, _kinds(s), _kinds(axes))
    except TypeError:  # a list or an array: checked without the cache
        layout = _checked_layout(op, x.shape, None if s is None else (s,), (axes,)) \
            if one_axis else _checked_layout(op, x.shape, s, axes)
    if layout.bounds is not None or layout.widths is not None:
        x = _resized(x, layout)
    if layout.n is None:
        return call(spec, x, axes=layout.axes, norm=norm)
    return call(spec, x, axes=layout.axes, n=layout.n, norm=norm)


def fftn(x, s=None, axes=None, norm=None) -> Tensor:
    """N-d discrete Fourier transform over axes (all by default)."""
    return _transform(_FFTN, x, s, axes, norm)


def ifftn(x, s=None, axes=None, norm=None) -> Tensor:
    """N-d inverse discrete Fourier transform over axes."""
    return _transform(_IFFTN, x, s, axes, norm)


def rfftn(x, s=None, axes=None, norm=None) -> Tensor:
    """N-d transform of real input; the last axis keeps n//2 + 1 points."""
    return _transform(_RFFTN, x, s, axes, norm)


def irfftn(x, s=None, axes=None, norm=None) -> Tensor:
    """Inverse of rfftn: real output; s gives the output sizes (last: 2*(m-1) by default)."""
    return _transform(_IRFFTN, x, s, axes, norm)


def fft(x, n=None, axis=-1, norm=None) -> Tensor:
    """1-d discrete Fourier transform along axis."""
    return _transform(_FFTN, x, n, axis, norm, one_axis=True)


def ifft(x, n=None, axis=-1, norm=None) -> Tensor:
    """1-d inverse discrete Fourier transform along axis."""
    return _transform(_IFFTN, x, n, axis, norm, one_axis=True)


def rfft(x, n=None, axis=-1, norm=None) -> Tensor:
    """1-d transform of real input (n//2 + 1 points)."""
    return _transform(_RFFTN, x, n, axis, norm, one_axis=True)


def irfft(x, n=None, axis=-1, norm=None) -> Tensor:
    """Inverse of rfft: n real points (2*(m-1) by default)."""
    return _transform(_IRFFTN, x, n, axis, norm, one_axis=True)


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


_NORMS = ("backward", "ortho", "forward")


def _hermitian(op: str, x, n, axis, norm) -> tuple[Tensor, str]:
    """x as a Tensor, with n, axis and norm checked for hfft/ihfft, and the norm of the
    opposite direction, which the transform they run takes (numpy's definition)."""
    if not isinstance(x, Tensor):
        x = asarray(x)
    if n is not None:
        arguments.integer(op, "n", n, minimum=1)
    shapes.axis(op, axis, x.ndim)
    if norm not in (None, *_NORMS):
        raise ShapeError(f"{op}: norm {norm!r} is not one of backward, ortho, forward")
    return x, _NORMS[2 - _NORMS.index(norm or "backward")]


def hfft(x, /, *, n=None, axis=-1, norm="backward") -> Tensor:
    """Transform of a Hermitian-symmetric signal given by its first half: n real points
    (2*(m-1) by default)."""
    x, opposite = _hermitian("hfft", x, n, axis, norm)
    return irfft(F.conj(x), n, axis, opposite)


def ihfft(x, /, *, n=None, axis=-1, norm="backward") -> Tensor:
    """Inverse of hfft: the n//2 + 1 points of real input's Hermitian-symmetric transform."""
    x, opposite = _hermitian("ihfft", x, n, axis, norm)
    return F.conj(rfft(x, n, axis, opposite))


def _frequency_args(op: str, n, d, dtype, device) -> tuple[int, float, np.dtype]:
    """n checked, the frequency step 1/(d*n), and the dtype of the frequencies: the default
    real floating dtype, or a real floating dtype given (the Array API 2024.12's dtype=,
    which the vendored suite passes)."""
    n = arguments.integer(op, "n", n, minimum=1)
    d = arguments.real(op, "d", d)
    if d == 0:
        raise DomainError(f"{op}: d (the sample spacing) must not be 0")
    dtype = dt.float64 if dtype is None else dt.dtype(dtype)  # hal.info's default real dtype
    if not dt.is_floating(dtype):
        raise UnsupportedDType(f"{op}: dtype {dtype.name} is not real floating; pass "
                               "float32 or float64")
    return n, 1.0 / (n * d), dtype


def fftfreq(n, /, *, d=1.0, dtype=None, device=None) -> Tensor:
    """The sample frequencies of an n-point transform of sample spacing d:
    [0, 1, ..., -(n//2), ..., -1] / (d*n)."""
    n, step, dtype = _frequency_args("fftfreq", n, d, dtype, device)
    return ifftshift(arange(-(n // 2), (n + 1) // 2, dtype=dtype, device=device)) * step


def rfftfreq(n, /, *, d=1.0, dtype=None, device=None) -> Tensor:
    """The sample frequencies of rfft's n//2 + 1 points: [0, 1, ..., n//2] / (d*n)."""
    n, step, dtype = _frequency_args("rfftfreq", n, d, dtype, device)
    return arange(n // 2 + 1, dtype=dtype, device=device) * step


def _shift(op: str, x, axes, sign: int) -> Tensor:
    """x rolled by sign * (size // 2) along axes (all by default)."""
    if not isinstance(x, Tensor):
        x = asarray(x)
    ax = shapes.axes(op, None if axes is None else shapes.ints(op, "axes", axes), x.ndim)
    shift = tuple(sign * (x.shape[a] // 2) for a in ax)
    return call(_ROLL, x, shift=shift, axis=ax) if ax else x


def fftshift(x, /, *, axes=None) -> Tensor:
    """x with the zero frequency moved to the centre along axes (all by default)."""
    return _shift("fftshift", x, axes, 1)


def ifftshift(x, /, *, axes=None) -> Tensor:
    """Inverse of fftshift (one sample apart on odd-length axes)."""
    return _shift("ifftshift", x, axes, -1)
