"""Optional VkFFT (pyvkfft, the `vkfft` extra): complex transforms along the last axis.

pyvkfft ships as source and needs the OpenCL headers to build, so it is never required:
when it imports, `fft.transform` hands it contiguous last-axis complex transforms on
GPU-like devices and keeps its own Stockham/Bluestein kernels for every other case (on
PoCL they measured 2x faster than VkFFT: batch 4096 x 1024 complex64 50 ms vs 109 ms).
`OpenCLDevice.use_vkfft` switches it per device; the benchmarks compare both.
"""

from __future__ import annotations

import functools


@functools.cache
def available() -> bool:
    """True when pyvkfft's OpenCL backend imports."""
    try:
        import pyvkfft.opencl  # noqa: F401
    except Exception:  # a half-built pyvkfft raises more than ImportError; treat all as absent
        return False
    return True


def run(device, x, sign: float, scale: float):
    """A new array: the transform of x (contiguous, complex) along its last axis, times scale."""
    from pyvkfft.opencl import VkFFTApp

    n = x.shape[-1]
    rows = x.size // n
    key = ("vkfft", rows, n, x.dtype)
    app = device.cache.get(key)
    if app is None:
        app = device.cache[key] = VkFFTApp((rows, n), x.dtype, device.queue, ndim=1,
                                           inplace=False, norm=0)
    out = device.empty(x.shape, x.dtype)
    src, dst = device.view(x, (rows, n)), device.view(out, (rows, n))
    (app.fft if sign < 0 else app.ifft)(src, dst)
    device.opaque_launches += 1
    if scale != 1.0:
        import numpy as np

        from . import cltypes
        from .elementwise import map_arrays

        double = x.dtype == np.complex128
        return map_arrays(device, "fftn", f"{cltypes.cprefix(x.dtype)}_mulr(a0, s0)", [out],
                          x.dtype, scalars=((np.float64 if double else np.float32)(scale),),
                          scalar_types=("double" if double else "float",))
    return out
