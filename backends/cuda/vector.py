"""Elementwise kernels at memory bandwidth: the op set's C expression over 16-byte vectors.

An eager elementwise op whose operands are C-contiguous arrays of the output's shape (or
0-d values), each aligned to its vector, runs as one RawKernel in which a thread loads a
16-byte vector of each operand (float4 for float32, 8 halves for float16/bfloat16), computes
the lanes and stores one vector; the last partial vector goes element by element. Anything
else (broadcasting, strides, misalignment, complex) takes the strided path: cupy's
ElementwiseKernel of the same expression (elementwise.py).

float16 and bfloat16 are read and written as their 16-bit patterns and computed in float32,
rounding once on the store, as the references do: a bfloat16 add moves 6 bytes an element,
not the 30 that lifting both operands to float32 arrays and rounding the result back costs.
`source` and `choose` are pure (no cupy, no GPU), so their output is checked on the host.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from hal import dtypes as dt
from hal.ops.expressions import c

from .dialect import CTYPES, DIALECT

VECTOR_BYTES = 16  # the widest load a CUDA thread issues (ld.global.v4.b32)
BLOCK = 256  # threads per block

STORAGE = {**CTYPES, **{d: "unsigned short" for d in (dt.float16, dt.bfloat16) if d}}
"""The C type an element is held in: half precision as its 16-bit pattern."""

HALF_HELPERS = {
    dt.float16: """
__device__ __forceinline__ float hal_from_float16(unsigned short b) {
  float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(b)); return f;
}
__device__ __forceinline__ unsigned short hal_to_float16(float f) {
  unsigned short b; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(b) : "f"(f)); return b;
}
""",
    dt.bfloat16: """
__device__ __forceinline__ float hal_from_bfloat16(unsigned short b) {
  return __uint_as_float((unsigned)b << 16);
}
__device__ __forceinline__ unsigned short hal_to_bfloat16(float f) {
  const unsigned u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40);
  return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
""",
}
"""Conversions between a half-precision bit pattern and float (round to nearest even; a NaN
stays a quiet NaN): PTX's cvt for float16, integer arithmetic for bfloat16."""

VECTOR_TYPE = """
template <typename T, int W> struct alignas(sizeof(T) * W) hal_vec { T v[W]; };
"""


def width(dtypes) -> int:
    """Elements per vector: 16 bytes of the widest dtype among operands and result."""
    return VECTOR_BYTES // max(np.dtype(d).itemsize for d in dtypes)


@dataclass(frozen=True)
class VectorSource:
    """A generated vector kernel: CUDA C++, its name, elements per thread, and for each
    operand whether it is a 0-d value (read once) rather than an array of the output's shape.
    Arguments: out, p0, p1, ..., n."""

    text: str
    name: str
    width: int
    scalars: tuple[bool, ...]


def _value(text: str, d: np.dtype) -> str:
    """An element of dtype d as the expression computes it (half precision as float)."""
    return f"hal_from_{d.name}({text})" if d in HALF_HELPERS else text


def _store(text: str, out: np.dtype) -> str:
    return f"hal_to_{out.name}({text})" if out in HALF_HELPERS else f"({CTYPES[out]})({text})"


def lane(op: str, operands: list[str], d: np.dtype, out: np.dtype) -> tuple[str, list[str]]:
    """(the C of out = op(operands) on stored elements of dtype d, the helpers it needs):
    half precision converted to float, computed, and rounded once."""
    compute = dt.float32 if d in HALF_HELPERS else d
    result = dt.float32 if out in HALF_HELPERS else out
    text, helpers = c.render(op, [_value(x, d) for x in operands], compute, result, DIALECT)
    return _store(text, out), [HALF_HELPERS[x] for x in dict.fromkeys((d, out))
                               if x in HALF_HELPERS] + helpers


def source(op: str, d: np.dtype, out: np.dtype, scalars: tuple[bool, ...]) -> VectorSource:
    """The vector kernel of `op` (a name of the C table, or an activation such as gelu_tanh)
    over operands of real dtype d, one per entry of `scalars`, with result dtype out."""
    w = width((d, out))
    t, o = STORAGE[d], STORAGE[out]
    vin, vout = f"hal_vec<{t}, {w}>", f"hal_vec<{o}, {w}>"
    name = f"hal_vec_{op}_{d.name}_{out.name}_{''.join('s' if s else 'v' for s in scalars)}"
    values, loads, lanes, tails = [], [], [], []
    for k, scalar in enumerate(scalars):
        if scalar:
            values.append(f"const {t} s{k} = p{k}[0];")
            lanes.append(f"s{k}")
            tails.append(f"s{k}")
        else:
            loads.append(f"  const {vin} x{k} = *reinterpret_cast<const {vin}*>(p{k} + base);")
            lanes.append(f"x{k}.v[k]")
            tails.append(f"p{k}[j]")
    vector, helpers = lane(op, lanes, d, out)
    tail, _ = lane(op, tails, d, out)
    params = [f"{o}* __restrict__ out"] + [f"const {t}* __restrict__ p{k}"
                                          for k in range(len(scalars))] + ["long long n"]
    body = [f"const long long base = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * {w};",
            "if (base >= n) return;", *values,
            f"if (base + {w} <= n) {{", *loads,
            f"  {vout} y;",
            "  #pragma unroll",
            f"  for (int k = 0; k < {w}; k++) y.v[k] = {vector};",
            f"  *reinterpret_cast<{vout}*>(out + base) = y;",
            "} else {",
            f"  for (long long j = base; j < n; j++) out[j] = {tail};",
            "}"]
    text = ("".join(dict.fromkeys(helpers)) + VECTOR_TYPE + f'extern "C" __global__ '
            f"void {name}(" + ", ".join(params) + ") {\n  " + "\n  ".join(body) + "\n}\n")
    return VectorSource(text, name, w, scalars)


def choose(arrays, out_shape: tuple, out_dtype: np.dtype) -> tuple[bool, ...] | None:
    """The vector path's operand kinds (True: a 0-d value) when it applies: real dtypes with
    at least two elements to a vector, every array C-contiguous of the output's shape or 0-d,
    and every array's data aligned to its vector; None: the strided path. `arrays` need
    only .dtype, .shape, .flags.c_contiguous and .data.ptr (numpy's .ctypes.data or
    cupy's .data.ptr: see `address`)."""
    dtypes = [a.dtype for a in arrays] + [np.dtype(out_dtype)]
    if any(dt.is_complex(d) for d in dtypes) or len({a.dtype for a in arrays}) != 1:
        return None
    w = width(dtypes)
    if w < 2 or math.prod(out_shape) < w:
        return None
    scalars = tuple(a.ndim == 0 for a in arrays)
    for a, scalar in zip(arrays, scalars):
        if scalar:
            continue
        if tuple(a.shape) != tuple(out_shape) or not a.flags.c_contiguous \
                or address(a) % (w * a.dtype.itemsize):
            return None
    return scalars if not all(scalars) else None


def address(a) -> int:
    """The address of an array's first element (cupy or numpy)."""
    data = a.data
    return data.ptr if hasattr(data, "ptr") else a.ctypes.data


# -- launching (cupy) --------------------------------------------------------------------------
@functools.cache
def kernel(op: str, d: np.dtype, out: np.dtype, scalars: tuple[bool, ...]):
    """(the cupy RawKernel, elements per thread) of `source(op, d, out, scalars)`."""
    import cupy

    generated = source(op, d, out, scalars)
    return cupy.RawKernel(generated.text, generated.name), generated.width


def run(op: str, arrays, out_shape: tuple, out_dtype: np.dtype, scalars: tuple[bool, ...]):
    """op over `arrays` by its vector kernel into a new array of out_shape and out_dtype."""
    import cupy

    out_dtype = np.dtype(out_dtype)
    fn, w = kernel(op, arrays[0].dtype, out_dtype, scalars)
    out = cupy.empty(out_shape, out_dtype)
    n = out.size
    threads = -(-n // w)
    fn((-(-threads // BLOCK),), (BLOCK,), (out, *arrays, np.int64(n)))
    return out
