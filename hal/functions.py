"""The op set as functions with Array API / numpy names: `hal.exp(x)`, `hal.sum(x, axis=1)`.

Each function checks nothing itself: the op's declaration (hal/ops.py) validates and
dispatch (hal/dispatch.py) places it. A few conveniences (not_equal, logical_not,
squeeze, ...) are compositions of ops and say so.
"""

from __future__ import annotations

import operator

from . import dtypes as dt
from . import ops
from .dispatch import call
from .errors import ShapeError
from .tensor import Tensor


def op(name: str, /, *args, **params) -> Tensor:
    """Call an op of the set by name: `hal.op("softmax", x, axis=-1)` (as dispatch places it)."""
    return call(ops.spec(name), *args, **params)


def _unary(name: str, doc: str):
    spec = ops.spec(name)

    def fn(x, /) -> Tensor:
        return call(spec, x)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


def _binary(name: str, doc: str):
    spec = ops.spec(name)

    def fn(x1, x2, /) -> Tensor:
        return call(spec, x1, x2)

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
conj = _unary("conj", "Complex conjugate.")

add = _binary("add", "Elementwise x1 + x2, broadcasting.")
subtract = _binary("subtract", "Elementwise x1 - x2, broadcasting.")
multiply = _binary("multiply", "Elementwise x1 * x2, broadcasting.")
divide = _binary("divide", "Elementwise true division x1 / x2 (floating dtypes).")
power = _binary("power", "Elementwise x1 ** x2, broadcasting.")
maximum = _binary("maximum", "Elementwise maximum; NaN propagates as in numpy.")
minimum = _binary("minimum", "Elementwise minimum; NaN propagates as in numpy.")
equal = _binary("equal", "Elementwise x1 == x2 (bool).")
less = _binary("less", "Elementwise x1 < x2 (bool).")
greater = _binary("greater", "Elementwise x1 > x2 (bool).")
complex = _binary("complex", "A complex tensor from real and imaginary parts.")
matmul = _binary("matmul", "Matrix product with numpy.matmul's batching and broadcasting.")

_WHERE, _ASTYPE, _SUM, _MAX, _MIN = (ops.spec(n) for n in ("where", "astype", "sum", "max", "min"))
_RESHAPE, _PERMUTE, _BROADCAST, _SLICE, _CONCAT, _PAD = (
    ops.spec(n) for n in ("reshape", "permute_dims", "broadcast_to", "slice", "concat", "pad")
)
_QUANT, _DEQUANT, _QMATMUL = (
    ops.spec(n) for n in ("quantize_linear", "dequantize_linear", "qmatmul")
)


def where(condition, x1, x2, /) -> Tensor:
    """Elements of x1 where condition (a bool tensor) is true, else of x2; broadcasting."""
    return call(_WHERE, condition, x1, x2)


def astype(x, dtype, /) -> Tensor:
    """x converted to dtype (a no-op when it has it already)."""
    target = dt.dtype(dtype)
    if isinstance(x, Tensor) and x.dtype == target:
        return x
    return call(_ASTYPE, x, dtype=target)


def sum(x, /, *, axis=None, keepdims: bool = False) -> Tensor:
    """Sum over axes (all by default); integers and bool sum to int64."""
    return call(_SUM, x, axis=axis, keepdims=keepdims)


def max(x, /, *, axis=None, keepdims: bool = False) -> Tensor:
    """Maximum over axes; NaN propagates; an empty axis is an error."""
    return call(_MAX, x, axis=axis, keepdims=keepdims)


def min(x, /, *, axis=None, keepdims: bool = False) -> Tensor:
    """Minimum over axes; NaN propagates; an empty axis is an error."""
    return call(_MIN, x, axis=axis, keepdims=keepdims)


def reshape(x, /, shape) -> Tensor:
    """The same elements in a new shape (one -1 allowed)."""
    return call(_RESHAPE, x, shape=tuple(shape) if not isinstance(shape, int) else (shape,))


def permute_dims(x, /, axes) -> Tensor:
    """Axes reordered: result axis i is input axis axes[i]."""
    return call(_PERMUTE, x, axes=tuple(axes))


def matrix_transpose(x, /) -> Tensor:
    """The last two axes swapped."""
    if x.ndim < 2:
        raise ShapeError(f"matrix_transpose: needs at least 2 axes, shape is {x.shape}")
    axes = list(range(x.ndim))
    axes[-2:] = axes[-1], axes[-2]
    return permute_dims(x, axes)


def broadcast_to(x, /, shape) -> Tensor:
    """x broadcast to shape as numpy broadcasts."""
    return call(_BROADCAST, x, shape=tuple(shape))


def slice(x, /, bounds) -> Tensor:
    """Strided slice: one (start, step, count) per axis; `x[a:b:c]` builds these for you."""
    return call(_SLICE, x, bounds=tuple(tuple(int(v) for v in b) for b in bounds))


def concat(arrays, /, *, axis: int = 0) -> Tensor:
    """Tensors joined along an existing axis."""
    return call(_CONCAT, *arrays, axis=axis)


def stack(arrays, /, *, axis: int = 0) -> Tensor:
    """Tensors joined along a new axis (reshape each, then concat)."""
    arrays = list(arrays)
    if not arrays:
        raise ShapeError("stack: needs at least one tensor")
    ndim = arrays[0].ndim + 1
    from . import shapes

    a = shapes.axis("stack", axis, ndim)
    return concat([reshape(t, (*t.shape[:a], 1, *t.shape[a:])) for t in arrays], axis=a)


def pad(x, /, pad_width, *, mode: str = "constant", value=0) -> Tensor:
    """x padded by (before, after) per axis; modes constant (with value), edge, wrap."""
    if isinstance(pad_width, int):
        pad_width = ((pad_width, pad_width),) * x.ndim
    width = tuple((operator.index(b), operator.index(a)) for b, a in pad_width)
    return call(_PAD, x, pad_width=width, mode=mode, value=value)


def squeeze(x, /, axis) -> Tensor:
    """x without the given size-1 axes (a reshape)."""
    from . import shapes

    ax = shapes.axes("squeeze", axis, x.ndim)
    if any(x.shape[a] != 1 for a in ax):
        raise ShapeError(f"squeeze: axes {axis!r} of shape {x.shape} are not all size 1")
    return reshape(x, [n for i, n in enumerate(x.shape) if i not in ax])


def expand_dims(x, /, axis: int = 0) -> Tensor:
    """x with a new size-1 axis at `axis` (a reshape)."""
    from . import shapes

    a = shapes.axis("expand_dims", axis, x.ndim + 1)
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
    scale, zero_point = _qparams(x, scale, zero_point)
    return call(_QUANT, x, scale, zero_point, axis=axis)


def dequantize_linear(q, scale, zero_point, /, *, axis: int = -1) -> Tensor:
    """ONNX DequantizeLinear: (q - zero_point) * scale as float32."""
    scale, zero_point = _qparams(q, scale, zero_point)
    return call(_DEQUANT, q, scale, zero_point, axis=axis)


def qmatmul(a, b, /, *, a_zero_point: int = 0, b_zero_point: int = 0) -> Tensor:
    """(a - a_zero_point) @ (b - b_zero_point) accumulated in int32; a int8/uint8, b int8."""
    return call(_QMATMUL, a, b, a_zero_point=int(a_zero_point), b_zero_point=int(b_zero_point))


def _qparams(x, scale, zero_point):
    import numpy as np

    device = x.device if isinstance(x, Tensor) else None
    if not isinstance(scale, Tensor):
        scale = Tensor.from_host(np.asarray(scale, dtype=np.float32), device or _default())
    if not isinstance(zero_point, Tensor):
        zdtype = x.dtype if x.dtype in (dt.int8, dt.uint8) else dt.int8
        zero_point = Tensor.from_host(np.asarray(zero_point, dtype=zdtype), scale.device)
    return scale, zero_point


def _default():
    from .registry import default_device

    return default_device()
