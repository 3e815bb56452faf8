"""Elementwise kernels: one scalar function per op, made a numpy ufunc by numba.vectorize.

A kernel allocates its result on the device and calls the ufunc compiled for its
operands' dtypes with that result as `out=`, so numpy broadcasts the (unbroadcast)
operands to out_shape. Semantics are numpy's: NaN-propagating maximum and minimum,
integers wrapping to their dtype, IEEE division and overflow. numba has no half-precision
type on the CPU: float16 and bfloat16 run the float32 ufuncs (`table.register`), `where`
selects their bit patterns, and casts from or to them are numpy's (ml_dtypes').
"""

from __future__ import annotations

import math

import numpy as np

import hal

from . import compiled
from .table import HALF, kernels, register

FLOATS = (hal.float32, hal.float64)
NUMBERS = hal.INTEGERS + FLOATS + hal.COMPLEX  # the dtypes numba computes in, bool aside
ORDERED = hal.INTEGERS + FLOATS


# -- scalar functions (module level, so that numba can cache what it compiles) -----------
def negative(x):
    return -x


def absolute(x):
    return abs(x)


def exp(x):
    return np.exp(x)


def log(x):
    return np.log(x)


def sqrt(x):
    return np.sqrt(x)


def sin(x):
    return np.sin(x)


def cos(x):
    return np.cos(x)


def tanh(x):
    return np.tanh(x)


def erf(x):
    return math.erf(float(x))  # in float64, as the reference


def isnan(x):
    return np.isnan(x)


def isinf(x):
    return np.isinf(x)


def isfinite(x):
    return np.isfinite(x)


def relu(x):
    return x if x >= 0 or x != x else 0  # NaN stays NaN, as numpy's maximum(x, 0)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def silu(x):
    return x / (1.0 + np.exp(-x))


def gelu_erf(x):
    return 0.5 * x * (1.0 + math.erf(x * 0.7071067811865476))


def gelu_tanh(x):
    y = float(x)
    return 0.5 * y * (1.0 + math.tanh(0.7978845608028654 * (y + 0.044715 * y * y * y)))


def add(a, b):
    return a + b


def subtract(a, b):
    return a - b


def multiply(a, b):
    return a * b


def divide(a, b):
    return a / b


def power(a, b):
    return a**b


def maximum(a, b):
    return a if a >= b or a != a else b  # a NaN on either side wins


def minimum(a, b):
    return a if a <= b or a != a else b


def equal(a, b):
    return a == b


def less(a, b):
    return a < b


def greater(a, b):
    return a > b


def select(condition, x, y):
    return x if condition else y


# the rest of the Array API's elementwise functions: numpy's scalar functions, which numba
# compiles (module level, so that numba caches them)
def asin(x):
    return np.arcsin(x)


def acos(x):
    return np.arccos(x)


def atan(x):
    return np.arctan(x)


def tan(x):
    return np.tan(x)


def sinh(x):
    return np.sinh(x)


def cosh(x):
    return np.cosh(x)


def asinh(x):
    return np.arcsinh(x)


def acosh(x):
    return np.arccosh(x)


def atanh(x):
    return np.arctanh(x)


def expm1(x):
    return np.expm1(x)


def log1p(x):
    return np.log1p(x)


def log2(x):
    return np.log2(x)


def log10(x):
    return np.log10(x)


def floor(x):
    return np.floor(x)


def ceil(x):
    return np.ceil(x)


def trunc(x):
    return np.trunc(x)


def rint(x):
    return np.rint(x)  # half to even, as numpy's round


def atan2(a, b):
    return np.arctan2(a, b)


def hypot(a, b):
    return np.hypot(a, b)


def copysign(a, b):
    return np.copysign(a, b)


def bitwise_and(a, b):
    return a & b


def bitwise_or(a, b):
    return a | b


def bitwise_xor(a, b):
    return a ^ b


def cast(x):
    return x  # numba converts to the signature's result type


# -- kernels ------------------------------------------------------------------------------
def _elementwise(op: str, fn, dtypes, *, compares: bool = False) -> None:
    """Register the ufunc of `fn` as the kernel of `op` on `dtypes`. numba's float
    comparisons raise the invalid flag on NaN, which numpy's are silent about: an op that
    `compares` ignores it (NaN operands give their numpy answer all the same)."""
    quiet = "ignore" if compares else None

    @register(op, dtypes)
    def kernel(device, *operands, out_shape, out_dtype):
        out = device.empty(out_shape, out_dtype)
        with np.errstate(invalid=quiet):
            compiled.ufunc(fn, out_dtype, *(x.dtype for x in operands))(*operands, out=out)
        return out


for _op, _fn, _dtypes in (
        ("negative", negative, NUMBERS), ("abs", absolute, ORDERED), ("exp", exp, FLOATS),
        ("log", log, FLOATS), ("sqrt", sqrt, FLOATS), ("sin", sin, FLOATS),
        ("cos", cos, FLOATS), ("tanh", tanh, FLOATS), ("erf", erf, FLOATS),
        ("isnan", isnan, FLOATS), ("isinf", isinf, FLOATS), ("isfinite", isfinite, FLOATS),
        ("sigmoid", sigmoid, FLOATS), ("silu", silu, FLOATS), ("add", add, NUMBERS),
        ("subtract", subtract, NUMBERS), ("multiply", multiply, NUMBERS),
        ("divide", divide, FLOATS), ("power", power, FLOATS)):
    _elementwise(_op, _fn, _dtypes)
for _op, _fn in (
        ("asin", asin), ("acos", acos), ("atan", atan), ("tan", tan), ("sinh", sinh),
        ("cosh", cosh), ("asinh", asinh), ("acosh", acosh), ("atanh", atanh),
        ("expm1", expm1), ("log1p", log1p), ("log2", log2), ("log10", log10),
        ("floor", floor), ("ceil", ceil), ("trunc", trunc), ("round", rint),
        ("atan2", atan2), ("hypot", hypot), ("copysign", copysign)):
    _elementwise(_op, _fn, FLOATS)
for _op, _fn in (("bitwise_and", bitwise_and), ("bitwise_or", bitwise_or),
                 ("bitwise_xor", bitwise_xor)):
    _elementwise(_op, _fn, hal.INTEGERS)
for _op, _fn, _dtypes in (
        ("relu", relu, ORDERED), ("maximum", maximum, ORDERED), ("minimum", minimum, ORDERED),
        ("equal", equal, hal.BOOL + NUMBERS), ("less", less, ORDERED),
        ("greater", greater, ORDERED)):
    _elementwise(_op, _fn, _dtypes, compares=True)


@register("gelu", FLOATS)
def _gelu(device, x, *, approximate="none", out_shape, out_dtype):
    out = device.empty(out_shape, out_dtype)
    fn = gelu_tanh if approximate == "tanh" else gelu_erf
    compiled.ufunc(fn, out_dtype, x.dtype)(x, out=out)
    return out


@kernels.register("where")  # every dtype: selection copies bits (half precision as uint16)
def _where(device, condition, x, y, *, out_shape, out_dtype):
    out = device.empty(out_shape, out_dtype)
    if out_dtype in HALF:  # numba has no half type: select the 16-bit patterns
        x, y, out_bits = x.view(np.uint16), y.view(np.uint16), out.view(np.uint16)
    else:
        out_bits = out
    compiled.ufunc(select, out_bits.dtype, hal.bool_, out_bits.dtype, out_bits.dtype)(
        condition, x, y, out=out_bits)
    return out


@kernels.register("astype")  # every dtype
def _astype(device, x, *, dtype, out_shape, out_dtype):
    out = device.empty(out_shape, out_dtype)
    if x.dtype in HALF or out_dtype in HALF:  # numba has no half type
        np.copyto(out, x, casting="unsafe")
    else:
        compiled.ufunc(cast, out_dtype, x.dtype)(x, out=out)
    return out
