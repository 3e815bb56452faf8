"""Fused kernels for the composites: one pass per row or per element instead of a chain of ops.

softmax, log_softmax, layer_norm and attention's masked softmax are RawKernels with one
thread block per row: a row is read, reduced (max and sum, or mean and variance) in
shared memory and written by the same kernel, which cupy's ReductionKernel cannot do
(it writes only the reduced values). linear's bias + activation epilogue is an
ElementwiseKernel of the op set's C expression (the activations themselves are
elementwise.py's); linear and attention take their products from cuBLAS, a float16 or
bfloat16 linear from gemmEx on the tensor cores with a float32 result (gemm_ex.py).
float16/bfloat16 run in float32 and round once, as the reference does.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from hal.ops import HALF, in_float32
from hal.ops.expressions import c

from . import gemm_ex
from .dialect import CTYPES, DIALECT
from .table import register

BLOCK = 256  # threads per row; a power of two (the shared-memory tree halves it)

_ROWS = r"""
typedef TYPE T;
#define BLOCK 256

__device__ T block_sum(T v, T* part) {
  part[threadIdx.x] = v;
  __syncthreads();
  for (int s = BLOCK / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
    __syncthreads();
  }
  const T r = part[0];
  __syncthreads();
  return r;
}

__device__ T block_max(T v, T* part) {
  part[threadIdx.x] = v;
  __syncthreads();
  for (int s = BLOCK / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) part[threadIdx.x] = fmax(part[threadIdx.x], part[threadIdx.x + s]);
    __syncthreads();
  }
  const T r = part[0];
  __syncthreads();
  return r;
}

// softmax (or log_softmax) of scale * x along rows of n; with causal, column j of row r is
// masked (-inf) when j > r % lq + shift, as attention's causal mask does.
extern "C" __global__ void softmax_rows(const T* x, T* y, long long n, T scale, T ninf,
                                        int causal, long long lq, long long shift,
                                        int take_log) {
  __shared__ T part[BLOCK];
  const long long row = blockIdx.x;
  const T* xr = x + row * n;
  T* yr = y + row * n;
  const long long last = causal ? row % lq + shift : n - 1;
  T m = ninf;
  for (long long j = threadIdx.x; j < n; j += BLOCK) {
    m = fmax(m, j <= last ? xr[j] * scale : ninf);
  }
  m = block_max(m, part);
  T s = 0;
  for (long long j = threadIdx.x; j < n; j += BLOCK) {
    s += exp((j <= last ? xr[j] * scale : ninf) - m);
  }
  s = block_sum(s, part);
  const T log_s = log(s);
  for (long long j = threadIdx.x; j < n; j += BLOCK) {
    const T v = (j <= last ? xr[j] * scale : ninf) - m;
    yr[j] = take_log ? v - log_s : exp(v) / s;
  }
}

// (x - mean) / sqrt(var + eps) * w + b along rows of n (two passes: no cancellation).
extern "C" __global__ void layer_norm_rows(const T* x, const T* w, const T* b, T* y,
                                           long long n, T eps, int has_w, int has_b) {
  __shared__ T part[BLOCK];
  const long long row = blockIdx.x;
  const T* xr = x + row * n;
  T* yr = y + row * n;
  T s = 0;
  for (long long j = threadIdx.x; j < n; j += BLOCK) s += xr[j];
  const T mean = block_sum(s, part) / (T)n;
  T q = 0;
  for (long long j = threadIdx.x; j < n; j += BLOCK) {
    const T d = xr[j] - mean;
    q += d * d;
  }
  const T inv = (T)1 / sqrt(block_sum(q, part) / (T)n + eps);
  for (long long j = threadIdx.x; j < n; j += BLOCK) {
    T v = (xr[j] - mean) * inv;
    if (has_w) v *= w[j];
    if (has_b) v += b[j];
    yr[j] = v;
  }
}
"""

_CTYPE = {"float32": "float", "float64": "double"}


@functools.cache
def _row_kernel(name: str, dtype: str):
    """A row kernel for float32 or float64 (compiled by cupy on first launch, per GPU)."""
    import cupy

    return cupy.RawKernel(_ROWS.replace("TYPE", _CTYPE[dtype]), name)


def _softmax(x, axis, *, take_log=False, scale=1.0, causal=False, lq=1, shift=0):
    """softmax or log_softmax along axis by the row kernel (axis moved last, contiguous)."""
    import cupy

    if x.ndim == 0:
        return _softmax(x.reshape(1), 0, take_log=take_log).reshape(())
    rows = cupy.ascontiguousarray(cupy.moveaxis(x, axis, -1))
    out = cupy.empty_like(rows)
    n = rows.shape[-1]
    if out.size:
        t = x.dtype.type
        _row_kernel("softmax_rows", x.dtype.name)(
            (out.size // n,), (BLOCK,),
            (rows, out, np.int64(n), t(scale), t(-np.inf), np.int32(causal), np.int64(lq),
             np.int64(shift), np.int32(take_log)))
    return cupy.moveaxis(out, -1, axis)


@register("softmax")
@in_float32
def softmax(x, *, axis=-1):
    """exp(x - max) / sum along axis, one kernel."""
    return _softmax(x, axis)


@register("log_softmax")
@in_float32
def log_softmax(x, *, axis=-1):
    """(x - max) - log(sum(exp(x - max))) along axis, one kernel."""
    return _softmax(x, axis, take_log=True)


@register("layer_norm")
@in_float32
def layer_norm(x, weight=None, bias=None, *, eps=1e-5):
    """Normalisation over the last axis with optional weight and bias, one kernel."""
    import cupy

    x = cupy.ascontiguousarray(x)
    out = cupy.empty_like(x)
    n = x.shape[-1]
    if out.size:
        w = x if weight is None else cupy.ascontiguousarray(weight)
        b = x if bias is None else cupy.ascontiguousarray(bias)
        _row_kernel("layer_norm_rows", x.dtype.name)(
            (out.size // n,), (BLOCK,),
            (x, w, b, out, np.int64(n), x.dtype.type(eps), np.int32(weight is not None),
             np.int32(bias is not None)))
    return out


@functools.cache
def _epilogue(activation: str | None, d: np.dtype):
    """y = activation(y + bias) in place on a matmul's output, bias broadcast along rows:
    the activation is the op set's C expression (as the eager kernels')."""
    import cupy

    value = "v" if activation is None else c.render(activation, ["v"], d, d, DIALECT)[0]
    return cupy.ElementwiseKernel(f"{d.name} bias", f"{d.name} y",
                                  f"const {CTYPES[d]} v = y + bias; y = {value};",
                                  f"hal_linear_{activation or 'identity'}")


def _finish(y, bias, activation):
    """activation(y + bias) written over y by one epilogue kernel (y itself if neither)."""
    import cupy

    if bias is None and activation is None:
        return y
    return _epilogue(activation, y.dtype)(cupy.zeros((), y.dtype) if bias is None else bias, y)


@in_float32
def _linear_float(x, weight, bias=None, activation=None):
    """cuBLAS, then the epilogue; half precision in float32."""
    import cupy

    return _finish(cupy.matmul(x, weight), bias, activation)


@register("linear")
def linear(x, weight, bias=None, *, activation=None):
    """activation(x @ weight + bias). float16/bfloat16 with a 2-d weight: gemmEx on the
    tensor cores accumulating into float32 (x's leading axes folded into rows), the
    epilogue in float32, one rounding; anything else by `_linear_float`."""
    import cupy

    if x.dtype not in HALF or weight.ndim != 2 or not x.size or not weight.size:
        return _linear_float(x, weight, bias, activation)
    k, n = weight.shape
    rows = cupy.ascontiguousarray(x).reshape(x.size // k, k)
    y = gemm_ex.gemm(rows, cupy.ascontiguousarray(weight)).reshape(*x.shape[:-1], n)
    lifted = None if bias is None else bias.astype(np.float32)
    return _finish(y, lifted, activation).astype(x.dtype)


@register("scaled_dot_product_attention")
@in_float32
def attention(q, k, v, *, causal=False, scale=None):
    """softmax(scale * q @ k^T, masked) @ v: cuBLAS, one masked-softmax kernel, cuBLAS."""
    import cupy

    s = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = cupy.matmul(q, cupy.swapaxes(k, -1, -2))
    lq, lk = q.shape[-2], k.shape[-2]
    probs = _softmax(scores, -1, scale=s, causal=causal, lq=lq, shift=lk - lq)
    return cupy.matmul(probs, v)
