"""cuBLAS gemmEx through cupy: row-major products on the tensor cores with the input and
output types chosen apart (int8 x int8 -> int32; float16/bfloat16 x same -> float32).

cuBLAS is column-major: a row-major C (m, n) = A (m, k) @ B (k, n) is the column-major
C^T = B^T @ A^T, so the call passes b first, with no transposes and leading dimensions n,
k and n (`row_major`). int8 on the tensor cores needs those leading dimensions to be
multiples of 4 (k % 4 == 0 and n % 4 == 0) and 4-byte aligned data (`int8_layout`); a
product that does not meet them goes to another kernel. `row_major` and `int8_layout` are
pure (no cupy).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hal import dtypes as dt

CUDA_R_16F, CUDA_R_32F, CUDA_R_8I, CUDA_R_32I, CUDA_R_16BF = 2, 0, 3, 10, 14
CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32I = 68, 72
CUBLAS_GEMM_DEFAULT = -1
CUBLAS_OP_N = 0

TYPES = {dt.int8: CUDA_R_8I, dt.int32: CUDA_R_32I, dt.float16: CUDA_R_16F,
         dt.float32: CUDA_R_32F, **({dt.bfloat16: CUDA_R_16BF} if dt.bfloat16 else {})}
"""cudaDataType of each dtype gemmEx takes here."""

ACCUMULATES = {dt.int8: (dt.int32, CUBLAS_COMPUTE_32I), dt.float16: (dt.float32,
               CUBLAS_COMPUTE_32F), **({dt.bfloat16: (dt.float32, CUBLAS_COMPUTE_32F)}
                                       if dt.bfloat16 else {})}
"""Input dtype -> (output dtype, cuBLAS compute type): int8 sums in int32, halves in float32."""


@dataclass(frozen=True)
class Call:
    """gemmEx's column-major arguments for a row-major product: sizes (m, n, k) and leading
    dimensions (the row-major B is passed as cuBLAS's A, the row-major A as its B)."""

    m: int
    n: int
    k: int
    lda: int
    ldb: int
    ldc: int


def row_major(m: int, n: int, k: int) -> Call:
    """The call computing row-major C (m, n) = A (m, k) @ B (k, n): C^T = B^T A^T."""
    return Call(m=n, n=m, k=k, lda=max(n, 1), ldb=max(k, 1),
                ldc=max(n, 1))


def int8_layout(m: int, n: int, k: int, addresses=()) -> str | None:
    """Why an int8 product (m, k) @ (k, n) cannot run on the tensor cores through gemmEx, or
    None when it can: leading dimensions k and n multiples of 4, data 4-byte aligned."""
    if min(m, n, k) == 0:
        return "an empty product"
    if k % 4 or n % 4:
        return f"k={k} and n={n} must be multiples of 4 (int8 leading dimensions)"
    if any(p % 4 for p in addresses):
        return "an operand's data is not 4-byte aligned"
    return None


def gemm(a, b):
    """a (m, k) @ b (k, n), both C-contiguous cupy arrays of one dtype of ACCUMULATES, into a
    new array of its accumulation dtype (int32 or float32), by one gemmEx on the current
    stream."""
    import cupy
    from cupy.cuda import device
    from cupy_backends.cuda.libs import cublas

    (m, k), n = a.shape, b.shape[1]
    out_dtype, compute = ACCUMULATES[a.dtype]
    out = cupy.empty((m, n), out_dtype)
    call = row_major(m, n, k)
    one, zero = np.ones((), out_dtype), np.zeros((), out_dtype)
    handle = device.get_cublas_handle()
    cublas.setStream(handle, cupy.cuda.get_current_stream().ptr)  # a captured graph's stream
    mode = cublas.getPointerMode(handle)
    cublas.setPointerMode(handle, cublas.CUBLAS_POINTER_MODE_HOST)
    try:
        cublas.gemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, call.m, call.n, call.k,
                      one.ctypes.data, b.data.ptr, TYPES[b.dtype], call.lda,
                      a.data.ptr, TYPES[a.dtype], call.ldb,
                      zero.ctypes.data, out.data.ptr, TYPES[out_dtype], call.ldc,
                      compute, CUBLAS_GEMM_DEFAULT)
    finally:
        cublas.setPointerMode(handle, mode)
    return out
