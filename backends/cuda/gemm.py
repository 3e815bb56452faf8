"""Matrix products: cupy.matmul (cuBLAS for floats, cupy's integer kernel otherwise) and
qmatmul, the int8 product that accumulates in int32."""

from __future__ import annotations

from hal import dtypes as dt

from .table import register


@register("matmul")
def matmul(a, b):
    """numpy.matmul semantics: batched, broadcast, 1-d on either side. float16 and bfloat16
    go to cuBLAS as they are (float32 accumulation), float32 without TF32 unless cupy's
    CUPY_TF32=1 asks for it."""
    import cupy

    out = cupy.matmul(a, b)
    return out if out.dtype == a.dtype else out.astype(a.dtype)  # bfloat16 stays bfloat16


@register("qmatmul")
def qmatmul(a, b, *, a_zero_point=0, b_zero_point=0):
    """(a - a_zero_point) @ (b - b_zero_point) with int32 operands and int32 accumulation
    (wrapping on overflow, as ONNX MatMulInteger does)."""
    import cupy

    a32 = a.astype(dt.int32) - cupy.int32(a_zero_point)
    b32 = b.astype(dt.int32) - cupy.int32(b_zero_point)
    return cupy.matmul(a32, b32)
