"""The op set as functions with Array API / numpy names: `hal.exp(x)`, `hal.sum(x, axis=1)`.

Each function checks nothing itself: the op's declaration (hal/ops/) validates and
dispatch (hal/dispatch.py) places it. A few conveniences (not_equal, logical_not,
squeeze, ...) are compositions of ops and say so.
"""

from __future__ import annotations

import operator
import sys

import numpy as np

from . import dispatch, ops
from .dispatch import call, decomposition
from .ops import arguments, shapes
from .runtime import dtypes as dt
from .runtime.errors import ArgumentError, HalError, ShapeError, UnsupportedDType
from .tensor import Tensor, tensor_argument

ARRAY_API_VERSION = "2023.12"


def op(name: str, /, *args, **params) -> Tensor:
    """Call an op of the set by name: `hal.op("softmax", x, axis=-1)` (as dispatch places it)."""
    return call(ops.spec(name), *args, **params)


def _sequence(op: str, arrays) -> list:
    """The tensors of a concat or stack: a list or tuple, not one tensor or a number."""
    if not isinstance(arrays, (list, tuple)):
        raise ArgumentError(f"{op}: arrays must be a list or tuple of tensors, got "
                            f"{type(arrays).__name__}")
    return list(arrays)


def _unary(name: str, doc: str):
    fn = dispatch.unary(ops.spec(name))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


def _binary(name: str, doc: str):
    fn = dispatch.binary(ops.spec(name))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


negative = _unary("negative", "Elementwise -x.")
abs = _unary("abs", "Elementwise |x| (the modulus, real-valued, for complex x).")
exp = _unary("exp", "Elementwise e**x.")
log = _unary("log", "Elementwise natural logarithm.")
sqrt = _unary("sqrt", "Elementwise square root.")
sin = _unary("sin", "Elementwise sine.")
cos = _unary("cos", "Elementwise cosine.")
tanh = _unary("tanh", "Elementwise hyperbolic tangent.")
erf = _unary("erf", "Elementwise error function (real floating dtypes).")
real = _unary("real", "Real part of a complex tensor.")
imag = _unary("imag", "Imaginary part of a complex tensor.")
_conj = _unary("conj", "Complex conjugate.")


def conj(x, /) -> Tensor:
    """Complex conjugate; a real numeric tensor is its own (the Array API 2023.12's conj)."""
    if isinstance(x, Tensor) and x.dtype in _REAL_NUMERIC:
        return x
    return _conj(x)


_REAL_NUMERIC = frozenset(dt.INTEGERS + dt.REALS)

add = _binary("add", "Elementwise x1 + x2, broadcasting.")
subtract = _binary("subtract", "Elementwise x1 - x2, broadcasting.")
multiply = _binary("multiply", "Elementwise x1 * x2, broadcasting.")
power = _binary("power", "Elementwise x1 ** x2, broadcasting.")
maximum = _binary("maximum", "Elementwise maximum; NaN propagates as in numpy.")
minimum = _binary("minimum", "Elementwise minimum; NaN propagates as in numpy.")
equal = _binary("equal", "Elementwise x1 == x2 (bool).")
less = _binary("less", "Elementwise x1 < x2 (bool).")
greater = _binary("greater", "Elementwise x1 > x2 (bool).")
complex = _binary("complex", "A complex tensor from real and imaginary parts.")
matmul = _binary("matmul", "Matrix product with numpy.matmul's batching and broadcasting.")

_WHERE, _ASTYPE, _SUM, _MAX, _MIN, _DIVIDE = (
    ops.spec(n) for n in ("where", "astype", "sum", "max", "min", "divide")
)
_RESHAPE, _PERMUTE, _BROADCAST, _SLICE, _CONCAT, _PAD = (
    ops.spec(n) for n in ("reshape", "permute_dims", "broadcast_to", "slice", "concat", "pad")
)
_QUANT, _DEQUANT, _QMATMUL = (
    ops.spec(n) for n in ("quantize_linear", "dequantize_linear", "qmatmul")
)


def where(condition, x1, x2, /) -> Tensor:
    """Elements of x1 where condition (a bool tensor) is true, else of x2; broadcasting."""
    return call(_WHERE, condition, x1, x2)


def astype(x, dtype, /, *, copy: bool = True, device=None) -> Tensor:
    """x converted to dtype (a no-op when it has it already), on device when given.

    copy is accepted for the Array API: tensors are immutable, so a copy and x are alike.
    """
    if device is not None:
        x = tensor_argument("astype", x).to(device)
    target = dt.dtype(dtype)
    if isinstance(x, Tensor) and x.dtype == target:
        return x
    return call(_ASTYPE, x, dtype=target)


def sum(x, /, *, axis=None, dtype=None, keepdims: bool = False) -> Tensor:
    """Sum over axes (all by default); integers and bool sum to int64 unless dtype is given,
    which sets the dtype to accumulate in and of the result."""
    if dtype is None:
        return call(_SUM, x, axis=axis, keepdims=keepdims)
    return astype(call(_SUM, astype(x, dtype), axis=axis, keepdims=keepdims), dtype)


def divide(x1, x2, /) -> Tensor:
    """Elementwise true division x1 / x2; integer and bool operands divide as float64."""
    if type(x1) is not Tensor or x1.dtype not in _INEXACT:  # written out: the common case
        x1 = _as_float(x1)                                  # is two float tensors
    if type(x2) is not Tensor or x2.dtype not in _INEXACT:
        x2 = _as_float(x2)
    return _divide(x1, x2)


_divide = dispatch.binary(_DIVIDE)
_INEXACT = frozenset(dt.FLOATS)


def _as_float(x):
    if isinstance(x, Tensor):
        return x if dt.is_floating(x.dtype) or dt.is_complex(x.dtype) else astype(x, dt.float64)
    return float(x) if isinstance(x, int) else x


def max(x, /, *, axis=None, keepdims: bool = False) -> Tensor:
    """Maximum over axes; NaN propagates; an empty axis is an error."""
    return call(_MAX, x, axis=axis, keepdims=keepdims)


def min(x, /, *, axis=None, keepdims: bool = False) -> Tensor:
    """Minimum over axes; NaN propagates; an empty axis is an error."""
    return call(_MIN, x, axis=axis, keepdims=keepdims)


def reshape(x, /, shape, *, copy: bool | None = None) -> Tensor:
    """The same elements in a new shape (one -1 allowed); copy is accepted for the Array API
    (tensors are immutable, so a copy and a view are alike)."""
    return call(_RESHAPE, x, shape=shapes.ints("reshape", "shape", shape))


def permute_dims(x, /, axes) -> Tensor:
    """Axes reordered: result axis i is input axis axes[i]."""
    return call(_PERMUTE, x, axes=shapes.ints("permute_dims", "axes", axes))


def matrix_transpose(x, /) -> Tensor:
    """The last two axes swapped."""
    if tensor_argument("matrix_transpose", x).ndim < 2:
        raise ShapeError(f"matrix_transpose: needs at least 2 axes, shape is {x.shape}")
    axes = list(range(x.ndim))
    axes[-2:] = axes[-1], axes[-2]
    return permute_dims(x, axes)


def broadcast_to(x, /, shape) -> Tensor:
    """x broadcast to shape as numpy broadcasts."""
    return call(_BROADCAST, x, shape=shapes.as_shape("broadcast_to", shape))


def slice(x, /, bounds) -> Tensor:
    """Strided slice: one (start, step, count) per axis; `x[a:b:c]` builds these for you."""
    if not isinstance(bounds, (list, tuple)):
        raise ShapeError(f"slice: bounds must be one (start, step, count) per axis, got "
                         f"{bounds!r}")
    return call(_SLICE, x, bounds=tuple(shapes.ints("slice", "bounds", b) for b in bounds))


def concat(arrays, /, *, axis: int | None = 0) -> Tensor:
    """Tensors joined along an existing axis; axis=None joins them flattened."""
    arrays = _sequence("concat", arrays)
    if axis is None:
        return call(_CONCAT, *(reshape(a, (-1,)) for a in arrays), axis=0)
    return call(_CONCAT, *arrays, axis=axis)


def stack(arrays, /, *, axis: int = 0) -> Tensor:
    """Tensors joined along a new axis (reshape each, then concat)."""
    arrays = [tensor_argument("stack", a, "each of arrays") for a in _sequence("stack", arrays)]
    if not arrays:
        raise ShapeError("stack: needs at least one tensor")
    ndim = arrays[0].ndim + 1
    a = shapes.axis("stack", axis, ndim)
    return concat([reshape(t, (*t.shape[:a], 1, *t.shape[a:])) for t in arrays], axis=a)


def pad(x, /, pad_width, *, mode: str = "constant", value=0) -> Tensor:
    """x padded by (before, after) per axis; modes constant (with value), edge, wrap."""
    x = tensor_argument("pad", x)
    if isinstance(pad_width, (int, np.integer)):
        pad_width = ((pad_width, pad_width),) * x.ndim
    try:
        width = tuple((operator.index(b), operator.index(a)) for b, a in pad_width)
    except (TypeError, ValueError):
        raise ShapeError(f"pad: pad_width {pad_width!r} is neither an int nor one (before, "
                         "after) pair of ints per axis") from None
    return call(_PAD, x, pad_width=width, mode=mode, value=value)


def squeeze(x, /, axis) -> Tensor:
    """x without the given size-1 axes (a reshape)."""
    ax = shapes.axes("squeeze", axis, tensor_argument("squeeze", x).ndim)
    if {x.shape[a] for a in ax} - {1}:
        raise ShapeError(f"squeeze: axes {axis!r} of shape {x.shape} are not all size 1")
    return reshape(x, [n for i, n in enumerate(x.shape) if i not in ax])


def expand_dims(x, /, axis: int = 0) -> Tensor:
    """x with a new size-1 axis at `axis` (a reshape)."""
    a = shapes.axis("expand_dims", axis, tensor_argument("expand_dims", x).ndim + 1)
    return reshape(x, (*x.shape[:a], 1, *x.shape[a:]))


def not_equal(x1, x2, /) -> Tensor:
    """Elementwise x1 != x2 (equal, then logical_not)."""
    return logical_not(equal(x1, x2))


def logical_not(x, /) -> Tensor:
    """Elementwise not of a bool tensor (equal to False)."""
    return equal(x, False)


def less_equal(x1, x2, /) -> Tensor:
    """Elementwise x1 <= x2 (less, or else equal; NaN compares false as in numpy)."""
    return where(less(x1, x2), True, equal(x1, x2))


def greater_equal(x1, x2, /) -> Tensor:
    """Elementwise x1 >= x2 (greater, or else equal; NaN compares false as in numpy)."""
    return where(greater(x1, x2), True, equal(x1, x2))


def square(x, /) -> Tensor:
    """Elementwise x * x."""
    return multiply(x, x)


def quantize_linear(x, scale, zero_point, /, *, axis: int = -1) -> Tensor:
    """ONNX QuantizeLinear: saturate(round_half_even(x / scale) + zero_point) as int8/uint8.

    scale (float32) and zero_point (int8 or uint8, which sets the output dtype) are
    scalars for per-tensor, or 1-d along `axis` for per-channel quantization.
    """
    scale, zero_point = _qparams("quantize_linear", x, scale, zero_point)
    return call(_QUANT, x, scale, zero_point, axis=axis)


def dequantize_linear(q, scale, zero_point, /, *, axis: int = -1) -> Tensor:
    """ONNX DequantizeLinear: (q - zero_point) * scale as float32."""
    scale, zero_point = _qparams("dequantize_linear", q, scale, zero_point)
    return call(_DEQUANT, q, scale, zero_point, axis=axis)


def qmatmul(a, b, /, *, a_zero_point: int = 0, b_zero_point: int = 0) -> Tensor:
    """(a - a_zero_point) @ (b - b_zero_point) accumulated in int32; a int8/uint8, b int8."""
    return call(_QMATMUL, a, b,
                a_zero_point=arguments.integer("qmatmul", "a_zero_point", a_zero_point),
                b_zero_point=arguments.integer("qmatmul", "b_zero_point", b_zero_point))


def _qparams(op: str, x, scale, zero_point):
    """scale (float32) and zero_point (x's int8/uint8, else int8) as tensors on x's device."""
    x = tensor_argument(op, x)
    if not isinstance(scale, Tensor):
        scale = Tensor.from_host(_host_values(op, "scale", scale, dt.float32), x.device)
    if not isinstance(zero_point, Tensor):
        zdtype = x.dtype if x.dtype in (dt.int8, dt.uint8) else dt.int8
        zero_point = Tensor.from_host(_host_values(op, "zero_point", zero_point, zdtype),
                                      x.device)
    return scale, zero_point


def _host_values(op: str, name: str, value, d: np.dtype) -> np.ndarray:
    """A number or a list of numbers as a host array of dtype d."""
    try:
        with np.errstate(all="ignore"):
            return np.asarray(value, dtype=d)
    except (TypeError, ValueError, OverflowError) as e:
        raise ArgumentError(f"{op}: {name} {value!r} is not a number or numbers of {d.name} "
                            f"({e}); pass a number, a list of them or a Tensor") from None


# -- Array API additions: predicates, searching, sorting, scans, take, integer division ------
# (declared in hal/ops/; the composites' decompositions follow their functions)
_ARRAY_API = {n: ops.spec(n) for n in (
    "isnan", "isinf", "isfinite", "all", "any", "argmax", "argmin", "cumulative_sum", "sort",
    "argsort", "take", "clip", "dynamic_update_slice")}


def isnan(x, /) -> Tensor:
    """Elementwise: True where x is NaN (either part, for complex); False for integers."""
    return call(_ARRAY_API["isnan"], x)


def isinf(x, /) -> Tensor:
    """Elementwise: True where x is +-inf (either part, for complex); False for integers."""
    return call(_ARRAY_API["isinf"], x)


def isfinite(x, /) -> Tensor:
    """Elementwise: True where x is neither NaN nor infinite (both parts, for complex)."""
    return call(_ARRAY_API["isfinite"], x)


def all(x, /, *, axis=None, keepdims: bool = False) -> Tensor:
    """True where every element along the axes is non-zero (NaN counts as true); empty: True."""
    return call(_ARRAY_API["all"], x, axis=axis, keepdims=keepdims)


def any(x, /, *, axis=None, keepdims: bool = False) -> Tensor:
    """True where some element along the axes is non-zero (NaN counts as true); empty: False."""
    return call(_ARRAY_API["any"], x, axis=axis, keepdims=keepdims)


def argmax(x, /, *, axis: int | None = None, keepdims: bool = False) -> Tensor:
    """int64 index of the first maximum along axis (of the flattened x when None); a NaN wins."""
    return call(_ARRAY_API["argmax"], x, axis=axis, keepdims=keepdims)


def argmin(x, /, *, axis: int | None = None, keepdims: bool = False) -> Tensor:
    """int64 index of the first minimum along axis (of the flattened x when None); a NaN wins."""
    return call(_ARRAY_API["argmin"], x, axis=axis, keepdims=keepdims)


def cumulative_sum(x, /, *, axis: int | None = None, dtype=None,
                   include_initial: bool = False) -> Tensor:
    """Running sums along axis (optional for 1-d x), led by a zero when include_initial.

    Integers and bool accumulate in int64 unless dtype is given, which sets the result dtype.
    """
    if dtype is None:
        return call(_ARRAY_API["cumulative_sum"], x, axis=axis, include_initial=include_initial)
    out = cumulative_sum(astype(x, dtype), axis=axis, include_initial=include_initial)
    return astype(out, dtype)


def sort(x, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Tensor:
    """x sorted along axis; always stable (equal elements keep their order); NaN sorts last."""
    return call(_ARRAY_API["sort"], x, axis=axis, descending=descending, stable=stable)


def argsort(x, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Tensor:
    """int64 indices that sort x along axis; always stable, also when descending."""
    return call(_ARRAY_API["argsort"], x, axis=axis, descending=descending, stable=stable)


def take(x, indices, /, *, axis: int | None = None) -> Tensor:
    """Elements of x at integer indices along axis (of the flattened x when None), as
    numpy.take: `take(embedding, token_ids, axis=0)` is an embedding lookup. Indices may be
    negative (counted from the end); out of range is a DomainError."""
    return call(_ARRAY_API["take"], x, indices, axis=axis)


def dynamic_update_slice(operand, update, start_indices, /) -> Tensor:
    """operand with `update` written at `start_indices` (one int per axis, or an integer
    Tensor (ndim,) whose values may change between calls of a jitted function), as
    jax.lax.dynamic_update_slice: each start is clamped so that the update fits. Under
    `hal.jit(..., donate_argnums=...)` a donated operand is updated in place."""
    if not isinstance(start_indices, Tensor):
        operand = tensor_argument("dynamic_update_slice", operand)
        start_indices = Tensor.from_host(
            _host_values("dynamic_update_slice", "start_indices", start_indices, dt.int64),
            operand.device)
    return call(_ARRAY_API["dynamic_update_slice"], operand, update, start_indices)


floor_divide = _binary("floor_divide", "Elementwise x1 // x2, rounded toward -inf (numpy's).")
remainder = _binary("remainder", "Elementwise x1 % x2 with the sign of x2 (numpy's).")


# -- the rest of the Array API's elementwise functions (extended ops of hal/ops/elementwise.py)
asin = _unary("asin", "Elementwise inverse sine.")
acos = _unary("acos", "Elementwise inverse cosine.")
atan = _unary("atan", "Elementwise inverse tangent.")
tan = _unary("tan", "Elementwise tangent.")
sinh = _unary("sinh", "Elementwise hyperbolic sine.")
cosh = _unary("cosh", "Elementwise hyperbolic cosine.")
asinh = _unary("asinh", "Elementwise inverse hyperbolic sine.")
acosh = _unary("acosh", "Elementwise inverse hyperbolic cosine (NaN below 1).")
atanh = _unary("atanh", "Elementwise inverse hyperbolic tangent (NaN beyond [-1, 1]).")
expm1 = _unary("expm1", "Elementwise exp(x) - 1, exact for small x.")
log1p = _unary("log1p", "Elementwise log(1 + x), exact for small x.")
log2 = _unary("log2", "Elementwise base-2 logarithm.")
log10 = _unary("log10", "Elementwise base-10 logarithm.")
floor = _unary("floor", "Elementwise rounding toward -inf (integers unchanged).")
ceil = _unary("ceil", "Elementwise rounding toward +inf (integers unchanged).")
trunc = _unary("trunc", "Elementwise rounding toward 0 (integers unchanged).")
round = _unary("round", "Elementwise rounding to the nearest integer, halves to even.")
sign = _unary("sign", "Elementwise -1, 0 or 1 (NaN for NaN; x / |x| for complex x).")
signbit = _unary("signbit", "Elementwise: True where the sign bit is set (-0.0 included).")
atan2 = _binary("atan2", "Elementwise angle of the point (x2, x1), in [-pi, pi].")
hypot = _binary("hypot", "Elementwise sqrt(x1**2 + x2**2) without overflow.")
copysign = _binary("copysign", "Elementwise |x1| with the sign of x2.")
logaddexp = _binary("logaddexp", "Elementwise log(exp(x1) + exp(x2)) without overflow.")
bitwise_and = _binary("bitwise_and", "Elementwise x1 & x2 (integers and bool).")
bitwise_or = _binary("bitwise_or", "Elementwise x1 | x2 (integers and bool).")
bitwise_xor = _binary("bitwise_xor", "Elementwise x1 ^ x2 (integers and bool).")
bitwise_left_shift = _binary("bitwise_left_shift",
                             "Elementwise x1 << x2 (counts >= 0; past the width: 0).")
bitwise_right_shift = _binary("bitwise_right_shift",
                              "Elementwise x1 >> x2, arithmetic (counts >= 0).")
logical_and = _binary("logical_and", "Elementwise x1 and x2 of bool tensors.")
logical_or = _binary("logical_or", "Elementwise x1 or x2 of bool tensors.")
logical_xor = _binary("logical_xor", "Elementwise x1 xor x2 of bool tensors.")
pow = power
_invert = _unary("bitwise_invert", "")


def bitwise_invert(x, /) -> Tensor:
    """Elementwise ~x: the bits flipped for integers, logical_not for bool."""
    x = tensor_argument("bitwise_invert", x)
    return logical_not(x) if dt.is_bool(x.dtype) else _invert(x)


def positive(x, /) -> Tensor:
    """Elementwise +x: x itself (numeric dtypes)."""
    x = tensor_argument("positive", x)
    if dt.is_bool(x.dtype):
        raise UnsupportedDType("positive: input dtype bool is not accepted; it takes numeric "
                               "dtypes")
    return x


def clip(x, /, min=None, max=None) -> Tensor:
    """x limited to [min, max] elementwise (None: unbounded), keeping x's dtype; NaN stays NaN.

    Bounds are tensors (cast to x's dtype) or scalars of x's kind; an integer bound beyond
    x's dtype's range is clamped to it, which clips the same.
    """
    x = tensor_argument("clip", x)
    return call(_ARRAY_API["clip"], x, _bound(x, min), _bound(x, max))


def _bound(x: Tensor, b):
    if b is None:
        return None
    if isinstance(b, Tensor):
        return astype(b, x.dtype)
    if dt.promote_scalar(x.dtype, b) != x.dtype:
        raise UnsupportedDType(
            f"clip: bound {b!r} is not of the kind of x's dtype {x.dtype.name}; "
            "pass a bound of x's kind or cast x first"
        )
    if dt.is_integer(x.dtype):
        info = np.iinfo(x.dtype)
        b = info.min if b < info.min else info.max if b > info.max else b
    return Tensor.from_host(np.asarray(b, dtype=x.dtype), x.device)


def _array_namespace(x, /, *, api_version: str | None = None):
    """The Array API namespace of a tensor: the hal module (it implements 2023.12)."""
    if api_version is not None and not (isinstance(api_version, str)
                                        and api_version == ARRAY_API_VERSION):
        raise HalError(f"__array_namespace__: hal implements the Array API "
                       f"{ARRAY_API_VERSION}, not {api_version!r}")
    return sys.modules[__package__]  # the hal namespace this module belongs to


def _to_device(x, device, /, *, stream=None) -> Tensor:
    """x on another device (x.to(device)); stream is accepted for the Array API."""
    return x.to(device)


@decomposition("isnan")
def _isnan(x):
    return not_equal(x, x)


@decomposition("isinf")
def _isinf(x):
    if dt.is_complex(x.dtype):
        return where(isinf(real(x)), True, isinf(imag(x)))
    return equal(abs(x), float("inf")) if dt.is_floating(x.dtype) else not_equal(x, x)


@decomposition("isfinite")
def _isfinite(x):
    if dt.is_complex(x.dtype):
        return where(isfinite(real(x)), isfinite(imag(x)), False)
    return less(abs(x), float("inf")) if dt.is_floating(x.dtype) else equal(x, x)


def _truth(x):
    return x if dt.is_bool(x.dtype) else not_equal(x, 0)


@decomposition("all")
def _all(x, *, axis=None, keepdims=False):
    return equal(sum(logical_not(_truth(x)), axis=axis, keepdims=keepdims), 0)


@decomposition("any")
def _any(x, *, axis=None, keepdims=False):
    return greater(sum(_truth(x), axis=axis, keepdims=keepdims), 0)


def _arg_extreme(extreme, x, axis, keepdims):
    flat = reshape(x, (-1,)) if axis is None else x
    a = 0 if axis is None else shapes.axis("argmax", axis, x.ndim)
    hit = equal(flat, extreme(flat, axis=a, keepdims=True))
    if not (dt.is_bool(x.dtype) or dt.is_integer(x.dtype)):
        hit = where(isnan(flat), True, hit)  # the first NaN, as numpy
    n = flat.shape[a]
    positions = np.arange(n).reshape([n if i == a else 1 for i in range(flat.ndim)])
    first = min(where(hit, Tensor.from_host(positions, x.device), n), axis=a, keepdims=keepdims)
    return reshape(first, (1,) * x.ndim) if axis is None and keepdims else first


@decomposition("argmax")
def _argmax(x, *, axis=None, keepdims=False):
    return _arg_extreme(max, x, axis, keepdims)


@decomposition("argmin")
def _argmin(x, *, axis=None, keepdims=False):
    return _arg_extreme(min, x, axis, keepdims)


@decomposition("clip")
def _clip(x, lo=None, hi=None):
    out = x if lo is None else maximum(x, lo)
    return out if hi is None else minimum(out, hi)


# -- Tensor's operators and methods, bound from one table once the functions exist ----------
def _getitem(x, key, /) -> Tensor:
    """x[key]: basic indexing (ints, slices, None, Ellipsis) as a slice and a reshape."""
    bounds, result_shape, sliced = shapes.index_bounds(x.shape, key)
    out = x
    if bounds != tuple((0, 1, n) for n in x.shape):
        out = slice(x, bounds)
    return out if result_shape == sliced else reshape(out, result_shape)


def _reshape_method(x, /, *shape) -> Tensor:
    """The same elements in a new shape: x.reshape(2, 3) or x.reshape((2, 3))."""
    return reshape(x, shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape)


def _swapped(fn):
    def reflected(x, other, /):
        return fn(other, x)

    reflected.__name__ = f"r{fn.__name__}"
    reflected.__doc__ = f"{fn.__name__} with the operands swapped (reflected operator)."
    return reflected


def _identity(x, /) -> Tensor:
    """+x: the tensor itself."""
    return x


METHODS: dict[str, object] = {
    "__neg__": negative, "__pos__": _identity, "__abs__": abs,
    "__add__": add, "__radd__": _swapped(add),
    "__sub__": subtract, "__rsub__": _swapped(subtract),
    "__mul__": multiply, "__rmul__": _swapped(multiply),
    "__truediv__": divide, "__rtruediv__": _swapped(divide),
    "__pow__": power, "__rpow__": _swapped(power),
    "__matmul__": matmul, "__rmatmul__": _swapped(matmul),
    "__eq__": equal, "__ne__": not_equal, "__lt__": less, "__gt__": greater,
    "__le__": less_equal, "__ge__": greater_equal,
    "__floordiv__": floor_divide, "__rfloordiv__": _swapped(floor_divide),
    "__mod__": remainder, "__rmod__": _swapped(remainder),
    "__and__": bitwise_and, "__rand__": _swapped(bitwise_and),
    "__or__": bitwise_or, "__ror__": _swapped(bitwise_or),
    "__xor__": bitwise_xor, "__rxor__": _swapped(bitwise_xor),
    "__lshift__": bitwise_left_shift, "__rlshift__": _swapped(bitwise_left_shift),
    "__rshift__": bitwise_right_shift, "__rrshift__": _swapped(bitwise_right_shift),
    "__invert__": bitwise_invert,
    "__array_namespace__": _array_namespace, "to_device": _to_device,
    "__getitem__": _getitem,
    "astype": astype, "reshape": _reshape_method,
    "sum": sum, "max": max, "min": min,
    "T": property(lambda x: permute_dims(x, tuple(reversed(range(x.ndim)))),
                  doc="The transpose (reversed axes)."),
    "mT": property(matrix_transpose, doc="The last two axes swapped."),
}
"""Tensor attribute -> function: every operator and op method a Tensor has."""

for _name, _fn in METHODS.items():
    setattr(Tensor, _name, _fn)
