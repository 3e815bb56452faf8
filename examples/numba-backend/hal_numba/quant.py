"""int8 quantization (ONNX QuantizeLinear, DequantizeLinear) as numba loops over elements.

Per tensor, or per channel along an axis: element e of the C-contiguous input belongs to
channel (e // inner) % channels, inner the size of the axes after it. quantize_linear
computes in float32 as the reference does: saturate(rint(x / scale) + zero_point), halves
to even, NaN to the dtype's minimum; float64 inputs are rounded to float32 first, float16
and bfloat16 widened (`table.register`). dequantize_linear: (q - zero_point) * scale in
float32.
"""

from __future__ import annotations

import functools
import math

import numba
import numpy as np

import hal

from . import compiled
from .elementwise import FLOATS
from .table import kernels, register


def quantize(x, scale, zero, inner, lo, hi, out):
    for e in numba.prange(x.size):
        c = (e // inner) % scale.size
        q = np.rint(np.float32(x[e]) / scale[c]) + np.float32(zero[c])
        if q != q or q < lo:  # NaN saturates to the minimum too
            q = lo
        elif q > hi:
            q = hi
        out[e] = q


def dequantize(q, scale, zero, inner, out):
    for e in numba.prange(q.size):
        c = (e // inner) % scale.size
        out[e] = np.float32(np.int32(q[e]) - np.int32(zero[c])) * scale[c]


@functools.cache
def _quantize(dtype: np.dtype, zero: np.dtype, parallel: bool):
    return compiled.loop(quantize, compiled.array(dtype, 1, readonly=True),
                         compiled.array(hal.float32, 1, readonly=True),
                         compiled.array(zero, 1, readonly=True), numba.int64, numba.float32,
                         numba.float32, compiled.array(zero, 1), parallel=parallel)


@functools.cache
def _dequantize(dtype: np.dtype, parallel: bool):
    return compiled.loop(dequantize, compiled.array(dtype, 1, readonly=True),
                         compiled.array(hal.float32, 1, readonly=True),
                         compiled.array(dtype, 1, readonly=True), numba.int64,
                         compiled.array(hal.float32, 1), parallel=parallel)


def _flat(x: np.ndarray, scale: np.ndarray, zero_point: np.ndarray, axis: int):
    """x, scale and zero_point as C-contiguous vectors, and the size of a channel's run."""
    inner = math.prod(x.shape[axis % x.ndim + 1:]) if scale.ndim else x.size
    return (*(np.ascontiguousarray(a).reshape(-1) for a in (x, scale, zero_point)), inner)


@register("quantize_linear", FLOATS)
def _quantize_linear(device, x, scale, zero_point, *, axis=-1, out_shape, out_dtype):
    out = device.empty(out_shape, out_dtype)
    info = np.iinfo(out_dtype)
    _quantize(x.dtype, out_dtype, x.size >= compiled.PARALLEL_MIN)(
        *_flat(x, scale, zero_point, axis), np.float32(info.min), np.float32(info.max),
        out.reshape(-1))
    return out


@kernels.register("dequantize_linear", (hal.int8, hal.uint8))
def _dequantize_linear(device, q, scale, zero_point, *, axis=-1, out_shape, out_dtype):
    out = device.empty(out_shape, out_dtype)
    _dequantize(q.dtype, q.size >= compiled.PARALLEL_MIN)(*_flat(q, scale, zero_point, axis),
                                                           out.reshape(-1))
    return out
