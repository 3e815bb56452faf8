"""int8 quantization (ONNX QuantizeLinear / DequantizeLinear), per tensor or per channel,
each one cupy ElementwiseKernel with the scale and zero point broadcast along the axis."""

from __future__ import annotations

import functools

import numpy as np

from hal import dtypes as dt

from .table import register


@functools.cache
def _kernels():
    """(quantize, dequantize) ElementwiseKernels."""
    import cupy

    quantize = cupy.ElementwiseKernel(
        "float32 x, float32 scale, Z zero, float32 lo, float32 hi", "Z q",
        "q = (Z)fminf(fmaxf(rintf(x / scale) + (float)zero, lo), hi)", "hal_quantize_linear")
    dequantize = cupy.ElementwiseKernel(
        "Z q, float32 scale, Z zero", "float32 x",
        "x = (float)((int)q - (int)zero) * scale", "hal_dequantize_linear")
    return quantize, dequantize


def _per_channel(p, ndim: int, axis: int):
    """A 0-d parameter as it is; a 1-d one shaped to broadcast along `axis`."""
    if p.ndim == 0:
        return p
    shape = [1] * ndim
    shape[axis % ndim] = -1
    return p.reshape(shape)


@register("quantize_linear")
def quantize_linear(x, scale, zero_point, *, axis=-1):
    """saturate(rint(x / scale) + zero_point) as int8 or uint8, x divided in float32; NaN
    gives the minimum (fmaxf of NaN and lo is lo), as the reference and ONNX Runtime do."""
    import cupy

    info = np.iinfo(zero_point.dtype)
    return _kernels()[0](x.astype(dt.float32, copy=False), _per_channel(scale, x.ndim, axis),
                     _per_channel(zero_point, x.ndim, axis), np.float32(info.min),
                     np.float32(info.max), cupy.empty(x.shape, zero_point.dtype))


@register("dequantize_linear")
def dequantize_linear(q, scale, zero_point, *, axis=-1):
    """(q - zero_point) * scale in float32."""
    return _kernels()[1](q, _per_channel(scale, q.ndim, axis),
                       _per_channel(zero_point, q.ndim, axis))
