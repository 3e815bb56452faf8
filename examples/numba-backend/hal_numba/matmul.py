"""matmul: numba's np.dot (BLAS GEMM) for floats and complex, a parallel loop for integers;
qmatmul (int8 products) as the int32 one.

numpy.matmul's shapes become one batch of 2-d products: a 1-d operand gains the axis it
lacks, and when the second operand is a matrix the first one's batch folds into its rows
(one GEMM); otherwise both are broadcast to their common batch. Integer products wrap to
the dtype as numpy's do (the sum of wrapped products is the wrapped sum).
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


def gemm(a, b, out):
    for i in range(a.shape[0]):
        np.dot(a[i], b[i], out[i])


def integer_gemm(a, b, out):
    batch, m, k = a.shape
    n = b.shape[2]
    for job in numba.prange(batch * m):
        s, r = job // m, job % m
        row = out[s, r]
        row[:] = 0
        for p in range(k):
            scale = a[s, r, p]
            for j in range(n):
                row[j] += scale * b[s, p, j]


@functools.cache
def _compiled(dtype: np.dtype, parallel: bool):
    operand = compiled.array(dtype, 3, readonly=True)
    return compiled.loop(integer_gemm if dtype in hal.INTEGERS else gemm, operand, operand,
                         compiled.array(dtype, 3), parallel=parallel)


def batches(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """C-contiguous (batch, m, k) and (batch, k, n) operands whose products are a @ b."""
    a = a[None] if a.ndim == 1 else a
    b = b[:, None] if b.ndim == 1 else b
    if b.ndim == 2:  # one GEMM: a's batch folds into its rows
        a = a.reshape(1, math.prod(a.shape[:-1]), a.shape[-1])
        return np.ascontiguousarray(a), np.ascontiguousarray(b)[None]
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return tuple(np.ascontiguousarray(np.broadcast_to(x, batch + x.shape[-2:]).reshape(
        math.prod(batch), *x.shape[-2:])) for x in (a, b))


@register("matmul", hal.INTEGERS + FLOATS + hal.COMPLEX)
def _matmul(device, a, b, *, out_shape, out_dtype):
    a3, b3 = batches(a, b)
    out = device.empty((a3.shape[0], a3.shape[1], b3.shape[2]), out_dtype)
    threads = a.dtype in hal.INTEGERS and out.size * a3.shape[2] >= compiled.PARALLEL_MIN
    _compiled(a.dtype, threads)(a3, b3, out)  # BLAS threads the float GEMMs itself
    return out.reshape(out_shape)


@kernels.register("qmatmul", (hal.int8, hal.uint8))
def _qmatmul(device, a, b, *, a_zero_point=0, b_zero_point=0, out_shape, out_dtype):
    """(a - a_zero_point) @ (b - b_zero_point) as an int32 matmul: the differences fit in
    int32, and int32 sums wrap as the reference's int64 ones cast to int32."""
    shifted = (x.astype(np.int32) - np.int32(zero)
               for x, zero in ((a, a_zero_point), (b, b_zero_point)))
    return _matmul(device, *shifted, out_shape=out_shape, out_dtype=out_dtype)
