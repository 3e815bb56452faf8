"""The CUDA backend's tensor-core products: int8 (backends/cuda/int8.py) and float16/bfloat16
linear, both through gemmEx (gemm_ex.py).

Without a GPU: the column-major gemmEx call is evaluated on flat buffers the way cuBLAS
reads them and must give the row-major product; the int8 layout rules; and the kernels'
C (dynamic quantization, rescale, zero-point offsets) compiled for the host, with numpy's
int32 product standing in for the GEMM, against the ops' references. With a GPU (marked
`gpu`, skipped with the backend's reason elsewhere) qmatmul and quantized_linear run on
cuda:0 through gemmEx and through the int32 fallback, and a half-precision linear.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

import hal
from backends.cuda import gemm_ex, int8
from hal.conformance.compare import mismatch
from tests.backends.cuda_host import SHIM, compile_library

RNG = np.random.default_rng(26)


def _column_major(buffer, rows, cols, ld):
    """A (rows, cols) matrix read from a flat buffer column by column, ld apart (cuBLAS)."""
    return np.array([[buffer[c * ld + r] for c in range(cols)] for r in range(rows)])


@pytest.mark.parametrize("m, n, k", [(3, 8, 4), (5, 2, 7), (1, 1, 1)])
def test_row_major_call_computes_a_at_b_as_cublas_reads_it(m, n, k):
    a, b = RNG.integers(-9, 9, (m, k)), RNG.integers(-9, 9, (k, n))
    call = gemm_ex.row_major(m, n, k)
    first = _column_major(b.ravel(), call.m, call.k, call.lda)  # cuBLAS's A is our b
    second = _column_major(a.ravel(), call.k, call.n, call.ldb)
    c = np.zeros(m * n, a.dtype)
    product = first @ second
    for col in range(call.n):
        c[col * call.ldc:col * call.ldc + call.m] = product[:, col]
    assert np.array_equal(c.reshape(m, n), a @ b)


def test_int8_layout_rules():
    assert gemm_ex.int8_layout(4096, 3072, 768) is None
    assert "multiples of 4" in gemm_ex.int8_layout(8, 8, 6)
    assert "multiples of 4" in gemm_ex.int8_layout(8, 6, 8)
    assert "aligned" in gemm_ex.int8_layout(8, 8, 8, (0, 2))
    assert gemm_ex.int8_layout(0, 8, 8) == "an empty product"


def test_accumulation_types():
    assert gemm_ex.ACCUMULATES[hal.int8] == (hal.int32, gemm_ex.CUBLAS_COMPUTE_32I)
    assert gemm_ex.ACCUMULATES[hal.float16][0] == hal.float32  # halves round once, after


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    """The int8 kernels' C compiled for the host, each over a whole array."""
    text = SHIM % 256 + f"""
#include <math.h>
extern "C" void quantize(const float* X, const float* lo, const float* hi, signed char* Q,
                         long n) {{
  for (long j = 0; j < n; j++) {{ const float x = X[j]; signed char q; {{ {int8.QUANTIZE} }}
                                  Q[j] = q; }}
}}
extern "C" void rescale(const int* ACC, const int* COL, const float* SCALE, const float* BIAS,
                        const float* lo, const float* hi, float* Y, long m, long n) {{
  for (long i = 0; i < m; i++) for (long j = 0; j < n; j++) {{
    const int raw_acc = ACC[i * n + j], col = COL[j];
    const float scale = SCALE[j], bias = BIAS[j];
    float y; {{ {int8.RESCALE} }} Y[i * n + j] = y;
  }}
}}
extern "C" void offsets(int* ACC, const int* COL, const int* ROW, int ca, int cb, int kcc,
                        long m, long n) {{
  for (long i = 0; i < m; i++) for (long j = 0; j < n; j++) {{
    const int acc = ACC[i * n + j], col = COL[j], row = ROW[i];
    ACC[i * n + j] = (int)({int8.OFFSETS});
  }}
}}
"""
    return compile_library(tmp_path_factory.mktemp("int8"), "int8", text)


def _p(a):
    return ctypes.c_void_p(a.ctypes.data)


@pytest.mark.parametrize("scale_x", [3.0, 0.0])  # 0: an all-zero input (scale 1)
def test_dynamic_quantization_kernels_compute_quantized_linear_on_the_host(host, scale_x):
    m, k, n = 16, 24, 12
    x = (RNG.standard_normal((m, k)) * scale_x + scale_x).astype(np.float32)
    w = RNG.integers(-127, 128, (k, n)).astype(np.int8)
    ws = (RNG.random(n) * 0.01 + 1e-3).astype(np.float32)
    bias = RNG.standard_normal(n).astype(np.float32)
    lo, hi = np.array([x.min()], np.float32), np.array([x.max()], np.float32)
    q = np.empty((m, k), np.int8)
    host.quantize(_p(x), _p(lo), _p(hi), _p(q), ctypes.c_long(q.size))
    acc = q.astype(np.int32) @ w.astype(np.int32)  # what gemmEx computes
    col = w.sum(axis=0, dtype=np.int32)
    y = np.empty((m, n), np.float32)
    host.rescale(_p(acc), _p(col), _p(ws), _p(bias), _p(lo), _p(hi), _p(y), ctypes.c_long(m),
                 ctypes.c_long(n))
    spec = hal.ops.spec("quantized_linear")
    problem = mismatch(y, spec.evaluate(x, w, ws, bias), spec.tolerance_for(hal.float32))
    assert not problem, problem


@pytest.mark.parametrize("a_dtype, za, zb", [(np.uint8, 131, -3), (np.int8, -7, 5),
                                              (np.uint8, 0, 0), (np.int8, 127, -128)])
def test_zero_points_as_offsets_of_the_signed_product_on_the_host(host, a_dtype, za, zb):
    m, k, n = 8, 12, 8
    info = np.iinfo(a_dtype)
    a = RNG.integers(info.min, info.max, (m, k), endpoint=True).astype(a_dtype)
    b = RNG.integers(-128, 128, (k, n)).astype(np.int8)
    a[0] = info.max  # large sums: wrapping int32 arithmetic
    ca, cb = int8.offsets(a.dtype, za, b.dtype, zb)
    a8 = (a.view(np.int8) ^ np.int8(-128)) if a_dtype == np.uint8 else a  # the shift kernel
    acc = a8.astype(np.int32) @ b.astype(np.int32)
    col, row = b.sum(axis=0, dtype=np.int32), a8.sum(axis=1, dtype=np.int32)
    host.offsets(_p(acc), _p(col), _p(row), ca, cb, int8.wrap32(k * ca * cb), ctypes.c_long(m),
                 ctypes.c_long(n))
    expected = hal.ops.spec("qmatmul").evaluate(a, b, a_zero_point=za, b_zero_point=zb)
    assert np.array_equal(acc, expected)


# -- on a GPU ------------------------------------------------------------------------------
_REASON = hal.backend("cuda").why_unavailable()
gpu = pytest.mark.skipif(_REASON is not None, reason=f"no CUDA GPU: {_REASON}")


@pytest.mark.gpu
@gpu
@pytest.mark.parametrize("m, k, n", [(64, 128, 96), (10, 6, 7)])  # gemmEx, int32 fallback
@pytest.mark.parametrize("a_dtype, za", [(np.uint8, 128), (np.int8, 0), (np.int8, -3)])
def test_qmatmul_on_the_gpu(m, k, n, a_dtype, za):
    info = np.iinfo(a_dtype)
    a = RNG.integers(info.min, info.max, (2, m, k), endpoint=True).astype(a_dtype)
    b = RNG.integers(-128, 128, (k, n)).astype(np.int8)
    got = hal.op("qmatmul", hal.asarray(a, device="cuda:0"), hal.asarray(b, device="cuda:0"),
                 a_zero_point=za, b_zero_point=2).numpy()
    expected = hal.ops.spec("qmatmul").evaluate(a, b, a_zero_point=za, b_zero_point=2)
    assert np.array_equal(got, expected)


@pytest.mark.gpu
@gpu
@pytest.mark.parametrize("k, n", [(64, 32), (30, 10)])
def test_quantized_linear_on_the_gpu(k, n):
    x = RNG.standard_normal((3, 5, k)).astype(np.float32)
    w = RNG.integers(-127, 128, (k, n)).astype(np.int8)
    ws = (RNG.random(n) * 0.01).astype(np.float32)
    bias = RNG.standard_normal(n).astype(np.float32)
    args = [hal.asarray(v, device="cuda:0") for v in (x, w, ws, bias)]
    spec = hal.ops.spec("quantized_linear")
    problem = mismatch(hal.nn.quantized_linear(*args).numpy(), spec.evaluate(x, w, ws, bias),
                       spec.tolerance_for(hal.float32))
    assert not problem, problem


@pytest.mark.gpu
@gpu
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_linear_on_the_gpu(dtype):
    d = np.dtype(getattr(hal, dtype))
    x = RNG.standard_normal((4, 7, 64)).astype(d)
    w = (RNG.standard_normal((64, 48)) * 0.1).astype(d)
    bias = RNG.standard_normal(48).astype(d)
    got = hal.nn.linear(*[hal.asarray(v, device="cuda:0") for v in (x, w, bias)],
                        activation="gelu")
    spec = hal.ops.spec("linear")
    assert got.dtype == d
    problem = mismatch(got.numpy(), spec.evaluate(x, w, bias, activation="gelu"),
                       spec.tolerance_for(d))
    assert not problem, problem
