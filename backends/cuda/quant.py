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


@register("quantized_linear")
def quantized_linear(x, weight, weight_scale, bias=None):
    """x quantized to uint8 with its own range (hal.ops.dynamic_qparams, on the GPU, in
    float32), times the int8 weight with int32 accumulation, rescaled per output channel."""
    import cupy

    f32 = np.float32
    x = x.astype(f32, copy=False)
    if x.size:
        lo, hi = cupy.minimum(x.min(), f32(0)), cupy.maximum(x.max(), f32(0))
    else:
        lo = hi = cupy.zeros((), f32)
    scale = (hi - lo) / f32(255)
    scale = cupy.where(scale == 0, f32(1), scale).astype(f32)
    zero = cupy.clip(cupy.rint(-lo / scale), 0, 255)
    q = cupy.clip(cupy.rint(x / scale) + zero, 0, 255).astype(np.int32) - zero.astype(np.int32)
    y = cupy.matmul(q, weight.astype(np.int32)).astype(f32) * (scale * weight_scale)
    return y if bias is None else y + bias
