"""The FFT family with cuFFT through cupy.fft (plans cached per GPU by cupy).

irfftn follows numpy's definition rather than cuFFT's multi-dimensional C2R: complex
inverse transforms over the leading axes, then a 1-d C2R over the last with the
imaginary parts that a real signal cannot have (DC, and Nyquist for even n) set to zero.
cuFFT's C2R assumes a Hermitian input and leaves the answer for any other undefined,
while numpy ignores those parts; zeroing them makes both agree on every input.
"""

from __future__ import annotations

from hal import dtypes as dt

from .table import register


def _one_axis(x, fn1, fnn, axes, norm, **n):
    return fn1(x, axis=axes[0], norm=norm, **n) if len(axes) == 1 else fnn(x, axes=axes,
                                                                          norm=norm)


@register("fftn")
def fftn(x, *, axes, norm=None):
    """Complex forward transform over axes."""
    import cupy

    return _one_axis(x, cupy.fft.fft, cupy.fft.fftn, axes, norm).astype(x.dtype, copy=False)


@register("ifftn")
def ifftn(x, *, axes, norm=None):
    """Complex inverse transform over axes."""
    import cupy

    return _one_axis(x, cupy.fft.ifft, cupy.fft.ifftn, axes, norm).astype(x.dtype, copy=False)


@register("rfftn")
def rfftn(x, *, axes, norm=None):
    """Real-to-complex transform over axes (the last one halved)."""
    import cupy

    out = _one_axis(x, cupy.fft.rfft, cupy.fft.rfftn, axes, norm)
    return out.astype(dt.complex_dtype(x.dtype), copy=False)


@register("irfftn")
def irfftn(x, *, axes, n, norm=None):
    """Complex-to-real inverse transform over axes, n points on the last one."""
    import cupy

    if len(axes) > 1:
        x = cupy.fft.ifftn(x, axes=axes[:-1], norm=norm)
    last = axes[-1] % x.ndim
    x = cupy.array(x, copy=True)  # cuFFT's C2R may also overwrite its input
    edge = [slice(None)] * x.ndim
    for k in (0, n // 2) if n % 2 == 0 else (0,):
        edge[last] = k
        x[tuple(edge)] = x[tuple(edge)].real  # a real value: imaginary part 0
    out = cupy.fft.irfft(x, n=n, axis=last, norm=norm)
    return out.astype(dt.real_dtype(x.dtype), copy=False)
