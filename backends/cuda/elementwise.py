"""Elementwise ops with cupy's ufuncs: unary, binary, comparisons, where, casts, complex parts,
floor_divide and remainder.

cupy's ufuncs follow numpy (broadcasting, NaN propagation in maximum/minimum, integer
powers by squaring, float16 computed in float32 and rounded). bfloat16 is computed in
float32 (`in_float32`), and moved or selected as its 16-bit pattern, which is exact.
"""

from __future__ import annotations

import functools

import numpy as np

from hal import dtypes as dt

from .table import HALF, accepted, in_float32, register

UFUNCS = ("negative", "abs", "exp", "log", "sqrt", "sin", "cos", "tanh", "add", "subtract",
          "multiply", "divide", "power", "maximum", "minimum", "equal", "less", "greater")


def ufunc(name: str):
    """The kernel calling cupy's ufunc `name` (cupy imported on the first call)."""

    def call(*args):
        import cupy

        return getattr(cupy, name)(*args)

    call.__doc__ = f"cupy.{name}"
    return call


for _name in UFUNCS:
    register(_name, accepted(_name, [d for d in dt.ALL if d != dt.bfloat16]))(ufunc(_name))
    if dt.bfloat16 in accepted(_name):
        register(_name, [dt.bfloat16])(in_float32(ufunc(_name)))


@register("erf", accepted("erf"))
@in_float32
def erf(x):
    """cupyx.scipy.special.erf in float32/float64."""
    from cupyx.scipy.special import erf as _erf

    return _erf(x)


def bits(x):
    """A bfloat16 array seen as its uint16 bit patterns (other dtypes unchanged)."""
    return x.view(np.uint16) if x.dtype == dt.bfloat16 else x


def from_bits(x, dtype):
    """The inverse of `bits` for an array that should have `dtype`."""
    return x.view(dtype) if dtype == dt.bfloat16 else x


@register("where")
def where(condition, x, y):
    """cupy.where; bfloat16 selected as bit patterns."""
    import cupy

    return from_bits(cupy.where(condition, bits(x), bits(y)), x.dtype)


@register("astype")
def astype(x, *, dtype):
    """x.astype(dtype); to or from float16/bfloat16 through float32, as the reference does."""
    target = dt.dtype(dtype)
    if x.dtype == target:
        return x
    if x.dtype in HALF and target != dt.float32:
        x = x.astype(dt.float32)
    if target in HALF and x.dtype not in (dt.float32, *HALF):
        x = x.astype(dt.float32)
    return x.astype(target)


@register("real")
def real(x):
    """The real part (a view)."""
    import cupy

    return cupy.real(x)


@register("imag")
def imag(x):
    """The imaginary part (a view)."""
    import cupy

    return cupy.imag(x)


@register("conj")
def conj(x):
    """The complex conjugate."""
    import cupy

    return cupy.conj(x)


@functools.cache
def _complex_kernel():
    import cupy

    return cupy.ElementwiseKernel("T re, T im", "C out", "out = C(re, im)", "hal_complex")


@register("complex")
def complex_(re, im):
    """re + i im, broadcast, as complex64 or complex128."""
    import cupy

    out = cupy.empty(cupy.broadcast(re, im).shape, dt.complex_dtype(re.dtype))
    return _complex_kernel()(re, im, out)


# floor_divide and remainder: cupy's ufuncs for integers (numpy's semantics: Python's floor
# and sign of the divisor, division by zero gives 0). For floats cupy computes floor(a / b),
# which differs from numpy where a / b rounds up to an integer (numpy: 1 // 0.1 == 9, 1 % 0.1
# == 0.09999999999999995; cupy: 10 and 0), for -1 // inf (numpy -1, remainder inf) and
# inf // 1 (numpy NaN): this kernel is numpy's npy_divmod, from the exact fmod.
DIVMOD = r"""
template <typename T> __device__ T hal_divmod(T a, T b, T* remainder) {
  T mod = fmod(a, b);
  if (!b) {
    *remainder = mod;
    return a / b;
  }
  T div = (a - mod) / b;
  if (mod) {
    if ((b < 0) != (mod < 0)) {
      mod += b;
      div -= 1;
    }
  } else {
    mod = copysign((T)0, b);
  }
  T floordiv;
  if (div) {
    floordiv = floor(div);
    if (div - floordiv > (T)0.5) floordiv += 1;
  } else {
    floordiv = copysign((T)0, a / b);
  }
  *remainder = mod;
  return floordiv;
}
"""
_DIVMOD_BODY = {"floor_divide": "T r; q = hal_divmod(a, b, &r);",
                "remainder": "hal_divmod(a, b, &q);"}


@functools.cache
def _divmod_kernel(op: str):
    """The float ElementwiseKernel of floor_divide or remainder (operands broadcast)."""
    import cupy

    return cupy.ElementwiseKernel("T a, T b", "T q", _DIVMOD_BODY[op], f"hal_{op}",
                                  preamble=DIVMOD)


def float_divmod(op: str):
    """The float32/float64 kernel of floor_divide or remainder, as numpy computes them."""

    def call(a, b):
        return _divmod_kernel(op)(a, b)

    call.__doc__ = f"{op} by numpy's npy_divmod"
    return call


for _name in ("floor_divide", "remainder"):
    register(_name, dt.INTEGERS)(ufunc(_name))
    register(_name, [dt.float32, dt.float64])(float_divmod(_name))
    register(_name, HALF)(in_float32(float_divmod(_name)))
