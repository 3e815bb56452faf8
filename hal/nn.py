"""Composite ops for neural networks and statistics: `hal.nn.softmax`, `hal.nn.layer_norm`, ...

Each composite has a default decomposition into other ops (written here, on hal
Tensors), so it runs on any backend; a backend may register a fused kernel under the
same name, and conformance holds both to the same numpy reference.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from . import functions as F
from . import ops
from .convolution import (  # noqa: F401  (hal.nn names)
    avg_pool,
    batch_norm,
    conv,
    conv_transpose,
    max_pool,
)
from .dispatch import call, decomposition
from .ops import shapes
from .runtime import dtypes as dt
from .runtime.errors import ShapeError
from .tensor import Tensor, tensor_argument

_S = {n: ops.spec(n) for n in ops.names(ops.COMPOSITE)}


def mean(x, /, *, axis=None, keepdims: bool = False) -> Tensor:
    """Arithmetic mean over axes."""
    return call(_S["mean"], x, axis=axis, keepdims=keepdims)


def var(x, /, *, axis=None, correction: float = 0, keepdims: bool = False) -> Tensor:
    """Variance over axes, dividing by max(N - correction, 0) as numpy does (inf, or NaN for
    a constant input, when correction >= N)."""
    return call(_S["var"], x, axis=axis, correction=correction, keepdims=keepdims)


def softmax(x, /, *, axis: int = -1) -> Tensor:
    """exp(x) / sum(exp(x)) along axis, computed stably (max subtracted)."""
    return call(_S["softmax"], x, axis=axis)


def log_softmax(x, /, *, axis: int = -1) -> Tensor:
    """log(softmax(x)) along axis, computed stably."""
    return call(_S["log_softmax"], x, axis=axis)


def layer_norm(x, /, weight=None, bias=None, *, eps: float = 1e-5) -> Tensor:
    """(x - mean) / sqrt(var + eps) over the last axis, then * weight + bias."""
    return call(_S["layer_norm"], x, weight, bias, eps=eps)


def rms_norm(x, /, weight=None, *, eps: float = 1e-6) -> Tensor:
    """x / sqrt(mean(x**2) + eps) over the last axis, then * weight (Llama's RMSNorm)."""
    return call(_S["rms_norm"], x, weight, eps=eps)


def rope(x, cos, sin, /, *, interleaved: bool = False) -> Tensor:
    """Rotary position embedding: each pair (a, b) of x's last axis rotated by its angle,
    (a cos - b sin, b cos + a sin); cos and sin (..., head size / 2) broadcast against x
    with half its last axis. Pairs are half-split by default, (x[i], x[i + d/2]), as Hugging
    Face's Llama (rotate_half); interleaved=True pairs (x[2i], x[2i + 1]), as Meta's."""
    return call(_S["rope"], x, cos, sin, interleaved=interleaved)


def gelu(x, /, *, approximate: str = "none") -> Tensor:
    """Gaussian error linear unit: exact (erf) or approximate='tanh'."""
    return call(_S["gelu"], x, approximate=approximate)


def silu(x, /) -> Tensor:
    """x * sigmoid(x)."""
    return call(_S["silu"], x)


def sigmoid(x, /) -> Tensor:
    """1 / (1 + exp(-x))."""
    return call(_S["sigmoid"], x)


def relu(x, /) -> Tensor:
    """maximum(x, 0)."""
    return call(_S["relu"], x)


def linear(x, weight, bias=None, /, *, activation: str | None = None) -> Tensor:
    """activation(x @ weight + bias), weight of shape (in_features, out_features).

    activation: None, 'relu', 'gelu', 'gelu_tanh', 'silu', 'sigmoid' or 'tanh'.
    """
    return call(_S["linear"], x, weight, bias, activation=activation)


def scaled_dot_product_attention(q, k, v, /, *, causal: bool = False,
                                 scale: float | None = None) -> Tensor:
    """softmax(q @ k^T * scale [+ causal mask]) @ v over (..., L, E) tensors.

    scale defaults to 1/sqrt(E); the causal mask lets query i see keys j <= i (aligned
    at the end when the lengths differ, as PyTorch does).
    """
    return call(_S["scaled_dot_product_attention"], q, k, v, causal=causal, scale=scale)


def quantized_linear(x, weight, weight_scale, bias=None, /) -> Tensor:
    """An int8 linear layer: x (float32) quantized to uint8 with its own range (ONNX
    DynamicQuantizeLinear), times an int8 weight (K, N) with int32 accumulation, scaled by
    the per-output-channel weight_scale (N,), plus bias; float32 out."""
    return call(_S["quantized_linear"], x, weight, weight_scale, bias)


def roll(x, /, shift, *, axis=None) -> Tensor:
    """Elements shifted cyclically along axes (flattened when axis is None), as numpy.roll."""
    return call(_S["roll"], x, shift=shift, axis=axis)


# -- default decompositions ---------------------------------------------------------------
_HALF = tuple(d for d in (dt.float16, dt.bfloat16) if d is not None)


def _in_float32(fn):
    """Run a decomposition of half-precision operands in float32 and round the result once,

    as the reference and fused kernels do: chained half-precision steps (a mean, then a
    variance, then a division) would otherwise lose several bits.
    """

    @functools.wraps(fn)
    def run(*args, **params):
        half = next((a.dtype for a in args if isinstance(a, Tensor) and a.dtype in _HALF), None)
        if half is None:
            return fn(*args, **params)
        lifted = [F.astype(a, dt.float32) if isinstance(a, Tensor) else a for a in args]
        return F.astype(fn(*lifted, **params), half)

    return run


def _count(x: Tensor, axis) -> int:
    return math.prod(x.shape[a] for a in shapes.axes("mean", axis, x.ndim))


@decomposition("mean")
@_in_float32
def _mean(x, *, axis=None, keepdims=False):
    return F.sum(x, axis=axis, keepdims=keepdims) / _count(x, axis)


@decomposition("var")
@_in_float32
def _var(x, *, axis=None, keepdims=False, correction=0):
    centred = x - mean(x, axis=axis, keepdims=True)
    divisor = max(_count(x, axis) - correction, 0)
    return F.sum(centred * centred, axis=axis, keepdims=keepdims) / divisor


@decomposition("softmax")
@_in_float32
def _softmax(x, *, axis=-1):
    axis = axis if x.ndim else None  # a 0-d tensor's one element
    e = F.exp(x - F.max(x, axis=axis, keepdims=True))
    return e / F.sum(e, axis=axis, keepdims=True)


@decomposition("log_softmax")
@_in_float32
def _log_softmax(x, *, axis=-1):
    axis = axis if x.ndim else None  # a 0-d tensor's one element
    s = x - F.max(x, axis=axis, keepdims=True)
    return s - F.log(F.sum(F.exp(s), axis=axis, keepdims=True))


@decomposition("layer_norm")
@_in_float32
def _layer_norm(x, weight=None, bias=None, *, eps=1e-5):
    centred = x - mean(x, axis=-1, keepdims=True)
    y = centred / F.sqrt(mean(centred * centred, axis=-1, keepdims=True) + eps)
    if weight is not None:
        y = y * weight
    return y if bias is None else y + bias


@decomposition("rms_norm")
@_in_float32
def _rms_norm(x, weight=None, *, eps=1e-6):
    y = x / F.sqrt(mean(x * x, axis=-1, keepdims=True) + eps)
    return y if weight is None else y * weight


def rope_pairs(x: Tensor, interleaved: bool = False) -> tuple[Tensor, Tensor]:
    """(first, second) elements of each pair that rope rotates along x's last axis."""
    x = tensor_argument("rope_pairs", x)
    if x.ndim == 0 or x.shape[-1] % 2:
        raise ShapeError(f"rope_pairs: x of shape {tuple(x.shape)} needs an even last axis")
    half = x.shape[-1] // 2
    lead = tuple((0, 1, n) for n in x.shape[:-1])
    if interleaved:
        return F.slice(x, (*lead, (0, 2, half))), F.slice(x, (*lead, (1, 2, half)))
    return F.slice(x, (*lead, (0, 1, half))), F.slice(x, (*lead, (half, 1, half)))


@decomposition("rope")
@_in_float32
def _rope(x, cos, sin, *, interleaved=False):
    a, b = rope_pairs(x, interleaved)
    first, second = a * cos - b * sin, b * cos + a * sin
    if interleaved:
        return F.reshape(F.stack([first, second], axis=-1), x.shape)
    return F.concat([first, second], axis=-1)


@decomposition("gelu")
@_in_float32
def _gelu(x, *, approximate="none"):
    if approximate == "tanh":
        inner = (x + 0.044715 * (x * x * x)) * math.sqrt(2 / math.pi)
        return 0.5 * x * (1 + F.tanh(inner))
    return 0.5 * x * (1 + F.erf(x * (1 / math.sqrt(2))))


@decomposition("sigmoid")
@_in_float32
def _sigmoid(x):
    return 1 / (1 + F.exp(-x))


@decomposition("silu")
@_in_float32
def _silu(x):
    return x * sigmoid(x)


@decomposition("relu")
def _relu(x):
    return F.maximum(x, 0)


_ACTIVATIONS = {
    None: lambda y: y,
    "relu": relu,
    "gelu": gelu,
    "gelu_tanh": lambda y: gelu(y, approximate="tanh"),
    "silu": silu,
    "sigmoid": sigmoid,
    "tanh": F.tanh,
}


@decomposition("quantized_linear")
def _quantized_linear(x, weight, weight_scale, bias=None):
    """In tensor ops only, so that it traces: x's uint8 scale and zero point as 0-d tensors
    (ops.dynamic_qparams in float32; the zero point is quantize_linear(-lo, scale, 0)),
    q @ weight in int32 less zero * the weight's column sums (exact), rescaled."""
    if x.size:
        lo, hi = F.minimum(F.min(x), 0.0), F.maximum(F.max(x), 0.0)
    else:
        lo = hi = Tensor.from_host(np.zeros((), np.float32), x.device)
    scale = (hi - lo) / 255.0
    scale = F.where(F.equal(scale, 0.0), 1.0, scale)
    zero = F.quantize_linear(-lo, scale, Tensor.from_host(np.zeros((), np.uint8), x.device))
    q = F.quantize_linear(x, scale, zero)
    columns = F.sum(weight, axis=0, dtype=dt.int32)
    acc = F.qmatmul(q, weight) - F.astype(zero, dt.int32) * columns
    y = F.astype(acc, dt.float32) * (weight_scale * scale)
    return y if bias is None else y + bias


@decomposition("linear")
@_in_float32
def _linear(x, weight, bias=None, *, activation=None):
    y = F.matmul(x, weight)
    if bias is not None:
        y = y + bias
    return _ACTIVATIONS[activation](y)


@decomposition("scaled_dot_product_attention")
@_in_float32
def _attention(q, k, v, *, causal=False, scale=None):
    s = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = F.matmul(q, F.matrix_transpose(k)) * s
    if causal:
        mask = Tensor.from_host(ops.causal_mask(q.shape[-2], k.shape[-2]), q.device)
        scores = F.where(mask, scores, -np.inf)
    return F.matmul(softmax(scores, axis=-1), v)


@decomposition("roll")
def _roll(x, *, shift, axis=None):
    if axis is None:
        return F.reshape(roll(F.reshape(x, (-1,)), shift=shift, axis=0), x.shape)
    shifts = (shift,) if isinstance(shift, int) else tuple(shift)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    for s, a in zip(shifts, axes):
        a = shapes.axis("roll", a, x.ndim)
        n = x.shape[a]
        if n == 0 or s % n == 0:
            continue
        cut = n - s % n
        head = [(0, 1, m) for m in x.shape]
        tail = list(head)
        head[a], tail[a] = (cut, 1, n - cut), (0, 1, cut)
        x = F.concat([F.slice(x, head), F.slice(x, tail)], axis=a)
    return x
