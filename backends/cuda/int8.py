"""int8 products on the tensor cores: qmatmul and quantized_linear by cuBLAS's int8 gemmEx
(gemm_ex.py), which multiplies signed int8 only.

A uint8 operand is shifted to int8 (x - 128, its top bit flipped) and the zero points
become constant offsets: (a - za) @ (b - zb) = A'B' + ca colsum(B') + cb rowsum(A') + k ca cb
with A' = a (int8) or a - 128 (uint8), ca = -za or 128 - za, likewise for b (`offsets`),
summed in wrapping int32 as ONNX MatMulInteger does. quantized_linear fuses the dynamic
quantization: two reductions (min, max), one kernel that computes the scale and zero
point on the device and quantizes x straight to the shifted int8, the weight's column
sums, the GEMM, and one epilogue that adds the zero point's term, rescales per output
channel and adds the bias: 6 launches. A product whose layout gemmEx cannot take
(`gemm_ex.int8_layout`) or a batched one multiplies in int32 instead, with the same
kernels around it.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from hal import dtypes as dt

from . import gemm_ex
from .table import register

QPARAMS = """
const float lo32 = fminf(lo[0], 0.0f), hi32 = fmaxf(hi[0], 0.0f);
float s = (hi32 - lo32) / 255.0f;
if (s == 0.0f) s = 1.0f;
const float z = fminf(fmaxf(rintf(-lo32 / s), 0.0f), 255.0f);
"""
"""ONNX DynamicQuantizeLinear's scale s and uint8 zero point z from x's min and max (lo[0],
hi[0]) in float32, as hal.ops.dynamic_qparams computes them."""

QUANTIZE = QPARAMS + "q = (signed char)((int)fminf(fmaxf(rintf(x / s) + z, 0.0f), 255.0f) - 128);"
"""x quantized to uint8 with (s, z), stored shifted to int8 (q - 128)."""

RESCALE = QPARAMS + (
    "const unsigned acc = (unsigned)raw_acc + (unsigned)(128 - (int)z) * (unsigned)col;\n"
    "y = (float)(int)acc * (s * scale) + bias;")
"""y = ((q - z) @ w) * (s * weight_scale) + bias from the shifted product raw_acc = q' @ w:
q - z = q' + (128 - z), so the product gains (128 - z) times w's column sum."""

OFFSETS = ("(unsigned)acc + (unsigned)ca * (unsigned)col + (unsigned)cb * (unsigned)row"
           " + (unsigned)kcc")
"""qmatmul's zero-point terms added to the signed product in wrapping int32."""


def offsets(a_dtype, a_zero_point: int, b_dtype, b_zero_point: int) -> tuple[int, int]:
    """(ca, cb): a - za = A' + ca and b - zb = B' + cb, where A', B' are the int8 operands
    (a uint8 operand shifted by -128)."""

    def one(d, zp):
        return (128 if np.dtype(d) == dt.uint8 else 0) - int(zp)

    return one(a_dtype, a_zero_point), one(b_dtype, b_zero_point)


def wrap32(v: int) -> int:
    """v as a wrapping int32."""
    return (int(v) + 2**31) % 2**32 - 2**31


@functools.cache
def _kernels():
    """(to_signed, quantize, rescale, offsets) ElementwiseKernels."""
    import cupy

    return (
        cupy.ElementwiseKernel("uint8 x", "int8 q", "q = (signed char)(x ^ 0x80)",
                               "hal_uint8_to_shifted_int8"),
        cupy.ElementwiseKernel("float32 x, raw float32 lo, raw float32 hi", "int8 q", QUANTIZE,
                               "hal_dynamic_quantize"),
        cupy.ElementwiseKernel("int32 raw_acc, int32 col, float32 scale, float32 bias, "
                               "raw float32 lo, raw float32 hi", "float32 y", RESCALE,
                               "hal_dynamic_rescale"),
        cupy.ElementwiseKernel("int32 col, int32 row, int32 ca, int32 cb, int32 kcc",
                               "int32 acc", f"acc = (int)({OFFSETS})", "hal_qmatmul_offsets"),
    )


def product(a, b):
    """a (m, k) @ b (k, n) of int8 arrays in int32: gemmEx on the tensor cores where the
    layout allows, else an int32 matmul."""
    import cupy

    a, b = cupy.ascontiguousarray(a), cupy.ascontiguousarray(b)
    (m, k), n = a.shape, b.shape[1]
    if gemm_ex.int8_layout(m, n, k, (a.data.ptr, b.data.ptr)) is None:
        return gemm_ex.gemm(a, b)
    return cupy.matmul(a.astype(np.int32), b.astype(np.int32))


@register("qmatmul")
def qmatmul(a, b, *, a_zero_point=0, b_zero_point=0):
    """(a - a_zero_point) @ (b - b_zero_point) with int32 accumulation, wrapping on overflow
    (ONNX MatMulInteger); a 2-d b (a's leading axes folded into rows) on the tensor cores."""
    import cupy

    to_signed, _, _, add_offsets = _kernels()
    if b.ndim != 2 or a.ndim < 2:  # batched or a vector: int32 matmul
        a32 = a.astype(np.int32) - cupy.int32(a_zero_point)
        return cupy.matmul(a32, b.astype(np.int32) - cupy.int32(b_zero_point))
    ca, cb = offsets(a.dtype, a_zero_point, b.dtype, b_zero_point)
    k, n = b.shape
    a8 = (a if a.dtype == dt.int8 else to_signed(a)).reshape(-1, k)
    acc = product(a8, b)
    if ca or cb:
        col = b.sum(axis=0, dtype=np.int32)
        row = a8.sum(axis=1, dtype=np.int32)[:, None]
        add_offsets(col, row, np.int32(ca), np.int32(cb), np.int32(wrap32(k * ca * cb)), acc)
    return acc.reshape(*a.shape[:-1], n)


@register("quantized_linear")
def quantized_linear(x, weight, weight_scale, bias=None):
    """x quantized to uint8 with its own range (ONNX DynamicQuantizeLinear, on the GPU, in
    float32), times the int8 weight in int32 on the tensor cores, rescaled per output
    channel, plus the bias: 6 kernel launches."""
    import cupy

    _, quantize, rescale, _ = _kernels()
    f32 = np.float32
    k, n = weight.shape
    x2 = cupy.ascontiguousarray(x.astype(f32, copy=False)).reshape(math.prod(x.shape[:-1]), k)
    if x2.size:
        lo, hi = x2.min().reshape(1), x2.max().reshape(1)
    else:
        lo = hi = cupy.zeros(1, f32)
    q = quantize(x2, lo, hi)
    col = weight.sum(axis=0, dtype=np.int32)
    y = rescale(product(q, weight), col, weight_scale,
                cupy.zeros((), f32) if bias is None else bias, lo, hi)
    return y.reshape(*x.shape[:-1], n)
