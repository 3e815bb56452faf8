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


def gelu(y, approximate: str = "none"):
    """GELU of a float expression (erf form, or the tanh approximation)."""
    d = dtype_of(y)
    if approximate == "tanh":
        inner = const(SQRT_2_OVER_PI, d) * (y + const(0.044715, d) * y * y * y)
        return const(0.5, d) * y * (const(1, d) + te.tanh(inner))
    return const(0.5, d) * y * (const(1, d) + te.erf(y * const(1 / math.sqrt(2), d)))


def activation(y, name: str | None):
    """The named activation of hal.ops.ACTIVATIONS applied to a float expression."""
    d = dtype_of(y)
    if name is None:
        return y
    if name == "relu":
        return te.max(y, const(0, d))
    if name == "gelu":
        return gelu(y)
    if name == "gelu_tanh":
        return gelu(y, "tanh")
    if name == "silu":
        return y / (const(1, d) + te.exp(-y))
    if name == "sigmoid":
        return const(1, d) / (const(1, d) + te.exp(-y))
    if name == "tanh":
        return te.tanh(y)
    raise ValueError(f"unknown activation {name!r}")
