"""The FFT family with cuFFT: transforms over trailing axes by plans of hal's own, made
once per shape and executed into outputs allocated here (fft_plan.py: C2C, and R2C/C2R
for real signals over the last axis); other layouts through cupy.fft and
cupyx.scipy.fft (plans cached by cupy's plan cache, cupy.fft.config).

irfftn follows numpy's definition rather than cuFFT's multi-dimensional C2R: complex
inverse transforms over the leading axes, then a 1-d C2R over the last with the
imaginary parts that a real signal cannot have (DC, and Nyquist for even n) set to zero.
cuFFT's C2R assumes a Hermitian input and leaves the answer for any other undefined,
while numpy ignores those parts; zeroing them makes both agree on every input.
"""

from __future__ import annotations

from hal import dtypes as dt

from . import fft_plan
from .fft_plan import C2C, C2R, R2C
from .table import register


def _one_axis(x, fn1, fnn, axes, norm, **n):
    return fn1(x, axis=axes[0], norm=norm, **n) if len(axes) == 1 else fnn(x, axes=axes,
                                                                          norm=norm)


@register("fftn")
def fftn(x, *, axes, norm=None):
    """Complex forward transform over axes."""
    import cupy

    if fft_plan.layout(x.shape, axes, C2C):
        return fft_plan.execute(cupy.ascontiguousarray(x), axes, C2C, inverse=False, norm=norm)
    return _one_axis(x, cupy.fft.fft, cupy.fft.fftn, axes, norm).astype(x.dtype, copy=False)


@register("ifftn")
def ifftn(x, *, axes, norm=None):
    """Complex inverse transform over axes."""
    import cupy

    if fft_plan.layout(x.shape, axes, C2C):
        return fft_plan.execute(cupy.ascontiguousarray(x), axes, C2C, inverse=True, norm=norm)
    return _one_axis(x, cupy.fft.ifft, cupy.fft.ifftn, axes, norm).astype(x.dtype, copy=False)


@register("rfftn")
def rfftn(x, *, axes, norm=None):
    """Real-to-complex transform over axes (the last one halved)."""
    import cupy

    if fft_plan.layout(x.shape, axes, R2C):
        return fft_plan.execute(cupy.ascontiguousarray(x), axes, R2C, inverse=False, norm=norm)
    out = _one_axis(x, cupy.fft.rfft, cupy.fft.rfftn, axes, norm)
    return out.astype(dt.complex_dtype(x.dtype), copy=False)


@register("irfftn")
def irfftn(x, *, axes, n, norm=None):
    """Complex-to-real inverse transform over axes, n points on the last one: the C2R
    overwrites an array of hal's own (the leading axes' transform, or one copy of x), so
    cupy copies nothing more, and the parts numpy ignores are zeroed in one strided fill."""
    import cupy
    from cupyx.scipy import fft

    last = axes[-1] % x.ndim
    if len(axes) > 1:
        x = cupy.fft.ifftn(x, axes=axes[:-1], norm=norm)
    else:
        x = cupy.array(x, copy=True, order="C")  # the caller's: cuFFT's C2R overwrites it
    edge = [slice(None)] * x.ndim
    edge[last] = slice(0, n // 2 + 1, n // 2) if n % 2 == 0 else slice(0, 1)  # DC, Nyquist
    x.imag[tuple(edge)] = 0  # (a Nyquist beyond x's length is a zero that n pads in)
    if len(axes) == 1 and x.shape[last] == n // 2 + 1 and fft_plan.layout(x.shape, axes, C2R):
        return fft_plan.execute(x, axes, C2R, inverse=True, norm=norm, n=n)
    out = fft.irfft(x, n=n, axis=last, norm=norm, overwrite_x=True)
    return out.astype(dt.real_dtype(x.dtype), copy=False)
