"""Small TE helpers shared by the kernel modules: broadcasting, compute types, activations."""

from __future__ import annotations

import math

from tvm import te, tirx

HALF = ("float16", "bfloat16")
SQRT_2_OVER_PI = math.sqrt(2 / math.pi)


def broadcast_shape(*shapes) -> tuple[int, ...]:
    """numpy's broadcast of shapes (already checked by the op's meta)."""
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(ndim):
        sizes = [int(s[i - ndim + len(s)]) for s in shapes if i - ndim + len(s) >= 0]
        out.append(max(sizes) if all(n != 0 for n in sizes) else 0)
    return tuple(out)


def at(tensor: te.Tensor, index: tuple, out_shape: tuple):
    """tensor's element for an output index under numpy broadcasting."""
    shape = [int(n) for n in tensor.shape]
    offset = len(out_shape) - len(shape)
    picked = [0 if n == 1 and out_shape[offset + i] != 1 else index[offset + i]
              for i, n in enumerate(shape)]
    return tensor(*picked)


def compute_type(dtype: str) -> str:
    """The type arithmetic runs in: float32 for the half types, else the dtype itself."""
    return "float32" if dtype in HALF else dtype


def lift(value, dtype: str):
    """value in its compute type."""
    return value.astype("float32") if dtype in HALF else value


def dtype_of(expr) -> str:
    """The dtype of a TE expression or tensor element, as a string."""
    return str(expr.dtype if hasattr(expr, "dtype") else expr.ty)


def const(value: float, dtype: str):
    """A constant of a dtype."""
    return tirx.const(value, dtype)


# float dtype -> (integer of its width, its bits of +inf, a mask of all but the sign bit)
_FLOAT_BITS = {"float32": ("int32", 0x7F800000, (1 << 31) - 1),
               "float64": ("int64", 0x7FF0000000000000, (1 << 63) - 1)}


def isnan(x):
    """True where a float expression is NaN: its magnitude bits above infinity's, which
    vectorises (a loop that calls TVM's isnan stays scalar)."""
    d = dtype_of(x)
    if d not in _FLOAT_BITS:
        return te.isnan(x)
    integer, inf, magnitude = _FLOAT_BITS[d]
    return tirx.reinterpret(integer, x) & const(magnitude, integer) > const(inf, integer)


# tanh's odd Taylor coefficients x^3 .. x^9; below |x| = _TANH_SERIES the series is exact
# to a few ulp in float64, where TVM's exp-based tanh loses relative precision (1 - e^-2x).
_TANH_TAYLOR = (-1 / 3, 2 / 15, -17 / 315, 62 / 2835)
_TANH_SERIES = 0.05


def tanh(y):
    """tanh of a float expression, accurate relative to |tanh| also for tiny and subnormal y.

    TVM lowers tanh to (1 - e^-2x) / (1 + e^-2x), which cancels for small |x| (a relative
    error of ~eps/4|x|, and 0 once e^-2x rounds to 1); there a Taylor series takes over.
    """
    d = dtype_of(y)
    y2 = y * y
    series = const(_TANH_TAYLOR[-1], d)
    for c in reversed(_TANH_TAYLOR[:-1]):
        series = series * y2 + const(c, d)
    small = y * (const(1, d) + y2 * series)  # a product: tanh(-0) stays -0
    return tirx.Select(te.abs(y) < const(_TANH_SERIES, d), small, te.tanh(y))


def gelu(y, approximate: str = "none"):
    """GELU of a float expression (erf form, or the tanh approximation)."""
    d = dtype_of(y)
    if approximate == "tanh":
        inner = const(SQRT_2_OVER_PI, d) * (y + const(0.044715, d) * y * y * y)
        return const(0.5, d) * y * (const(1, d) + tanh(inner))
    return const(0.5, d) * y * (const(1, d) + te.erf(y * const(1 / math.sqrt(2), d)))


def activation(y, name: str | None):
    """The named activation of hal.ops.ACTIVATIONS applied to a float expression."""
    d = dtype_of(y)
    if name is None:
        return y
    if name == "relu":  # numpy's maximum(y, 0): a NaN stays NaN (te.max would drop it)
        positive = te.max(y, const(0, d))
        return tirx.Select(isnan(y), y, positive) if "float" in d else positive
    if name == "gelu":
        return gelu(y)
    if name == "gelu_tanh":
        return gelu(y, "tanh")
    if name == "silu":
        return y / (const(1, d) + te.exp(-y))
    if name == "sigmoid":
        return const(1, d) / (const(1, d) + te.exp(-y))
    if name == "tanh":
        return tanh(y)
    raise ValueError(f"unknown activation {name!r}")
