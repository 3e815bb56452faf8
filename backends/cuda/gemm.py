"""Matrix products: cupy.matmul (cuBLAS for floats, cupy's integer kernel otherwise); the
int8 products are int8.py's."""

from __future__ import annotations

from hal import dtypes as dt

from .table import register


@register("matmul")
def matmul(a, b):
    """numpy.matmul semantics: batched, broadcast, 1-d on either side. float16 goes to cuBLAS
    as it is (float32 accumulation), bfloat16 through `bfloat16_matmul`, float32 without
    TF32 unless cupy's CUPY_TF32=1 asks for it."""
    import cupy

    if a.dtype == dt.bfloat16:
        return bfloat16_matmul(a, b)
    return cupy.matmul(a, b)


def bfloat16_matmul(a, b):
    """a @ b of bfloat16 arrays. cupy 14 multiplies bfloat16 only as one 2-d cuBLAS GEMM (its
    batched path and its vector dot take the dtype by char code, 'E', which numpy does not
    know): a product with a 2-d or 1-d b folds a's leading axes into the GEMM's rows; the
    rest (a batched b, a 1x1 or empty result) computes in float32 and rounds once, as cuBLAS's
    bfloat16 GEMM accumulates in float32."""
    import cupy

    rows = a.size // a.shape[-1] if a.shape[-1] else 0
    cols = 1 if b.ndim == 1 else b.shape[-1]
    if b.ndim > 2 or rows * cols <= 1 or a.shape[-1] == 0:
        return cupy.matmul(a.astype(dt.float32), b.astype(dt.float32)).astype(dt.bfloat16)
    out = cupy.matmul(a.reshape(rows, a.shape[-1]), b)
    return out.reshape(a.shape[:-1] + b.shape[1:])
