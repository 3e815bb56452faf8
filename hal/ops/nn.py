"""Neural-network composites: softmax, log_softmax, layer_norm, rms_norm, gelu, silu,
sigmoid, relu, linear (with a fused activation), scaled_dot_product_attention and rope.
Their decompositions live with their public functions in hal/nn.py."""

from __future__ import annotations

import math

import numpy as np

from ..runtime import dtypes as dt
from ..runtime.errors import ShapeError
from . import arguments, shapes
from .elementwise import erf_reference
from .spec import COMPOSITE, LOOSE, ORDERED, declare, same, unary_meta


def _axis_meta(name):
    def meta(x, *, axis=-1):  # a 0-d x takes axis 0 or -1, as numpy's reductions
        if shapes.axis(name, axis, max(x.ndim, 1)) < x.ndim and x.shape[axis] == 0:
            raise ShapeError(f"{name}: axis {axis} of shape {tuple(x.shape)} is empty; it "
                             "needs at least one element along the axis (its maximum)")
        return tuple(x.shape), x.dtype

    return meta


def softmax_reference(x, *, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def _log_softmax_ref(x, *, axis=-1):
    s = x - np.max(x, axis=axis, keepdims=True)
    return s - np.log(np.sum(np.exp(s), axis=axis, keepdims=True))


def _layer_norm_meta(x, weight=None, bias=None, *, eps=1e-5):
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not eps > 0:
        raise ShapeError(f"layer_norm: eps must be a positive number, got {eps!r}")
    if x.ndim == 0:
        raise ShapeError("layer_norm: needs at least a 1-d input (normalises the last axis)")
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None and tuple(p.shape) != tuple(x.shape[-1:]):
            raise ShapeError(
                f"layer_norm: {name} of shape {tuple(p.shape)} must be {tuple(x.shape[-1:])}"
            )
    return tuple(x.shape), x.dtype


def _layer_norm_ref(x, weight=None, bias=None, *, eps=1e-5):
    mean = np.mean(x, axis=-1, keepdims=True)
    y = (x - mean) / np.sqrt(np.var(x, axis=-1, keepdims=True) + eps)
    if weight is not None:
        y = y * weight
    return y if bias is None else y + bias


def _rms_norm_meta(x, weight=None, *, eps=1e-6):
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not eps > 0:
        raise ShapeError(f"rms_norm: eps must be a positive number, got {eps!r}")
    if x.ndim == 0:
        raise ShapeError("rms_norm: needs at least a 1-d input (normalises the last axis)")
    if weight is not None and tuple(weight.shape) != tuple(x.shape[-1:]):
        raise ShapeError(f"rms_norm: weight of shape {tuple(weight.shape)} must be "
                         f"{tuple(x.shape[-1:])}, one per element of the last axis")
    return tuple(x.shape), x.dtype


def _rms_norm_ref(x, weight=None, *, eps=1e-6):
    y = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    return y if weight is None else y * weight


def _rope_meta(x, cos, sin, *, interleaved=False):
    arguments.flag("rope", "interleaved", interleaved)
    if x.ndim == 0 or x.shape[-1] % 2:
        raise ShapeError(f"rope: input of shape {tuple(x.shape)} needs an even last axis "
                         "(the head size: rotated in pairs)")
    half = (*x.shape[:-1], x.shape[-1] // 2)
    if tuple(cos.shape) != tuple(sin.shape):
        raise ShapeError(f"rope: cos {tuple(cos.shape)} and sin {tuple(sin.shape)} must have "
                         "one shape")
    try:
        fits = np.broadcast_shapes(half, tuple(cos.shape)) == half
    except ValueError:
        fits = False
    if not fits:
        raise ShapeError(f"rope: cos and sin of shape {tuple(cos.shape)} must broadcast to "
                         f"{half} (the input's shape with half its last axis): one angle per "
                         "position and pair, e.g. (sequence, head size / 2)")
    return tuple(x.shape), x.dtype


def rope_pairs(x, interleaved: bool):
    """(first, second) elements of each rotated pair of x's last axis (numpy)."""
    if interleaved:
        return x[..., 0::2], x[..., 1::2]
    half = x.shape[-1] // 2
    return x[..., :half], x[..., half:]


def _rope_ref(x, cos, sin, *, interleaved=False):
    a, b = rope_pairs(x, interleaved)
    first, second = a * cos - b * sin, b * cos + a * sin
    if interleaved:
        return np.stack([first, second], axis=-1).reshape(x.shape)
    return np.concatenate([first, second], axis=-1)


def _erf_np(x):
    return erf_reference(x).astype(x.dtype)


GELU_APPROXIMATIONS = ("none", "tanh")


def _gelu_ref(x, *, approximate="none"):
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    return 0.5 * x * (1 + _erf_np(x / math.sqrt(2)))


def _gelu_meta(x, *, approximate="none"):
    if approximate not in GELU_APPROXIMATIONS:
        raise ShapeError(f"gelu: approximate={approximate!r} is not 'none' or 'tanh'")
    return tuple(x.shape), x.dtype


ACTIVATIONS = {
    None: lambda y: y,
    "relu": lambda y: np.maximum(y, 0),
    "gelu": _gelu_ref,
    "gelu_tanh": lambda y: _gelu_ref(y, approximate="tanh"),
    "silu": lambda y: y / (1 + np.exp(-y)),
    "sigmoid": lambda y: 1 / (1 + np.exp(-y)),
    "tanh": np.tanh,
}


def _linear_meta(x, weight, bias=None, *, activation=None):
    if activation not in ACTIVATIONS:
        raise ShapeError(
            f"linear: activation {activation!r} is not one of "
            f"{', '.join(str(a) for a in ACTIVATIONS)}"
        )
    if weight.ndim != 2:
        raise ShapeError(f"linear: weight must be 2-d (in, out), got {tuple(weight.shape)}")
    shape = shapes.matmul("linear", tuple(x.shape), tuple(weight.shape))
    if bias is not None and tuple(bias.shape) != (weight.shape[1],):
        raise ShapeError(f"linear: bias {tuple(bias.shape)} must be ({weight.shape[1]},)")
    return shape, x.dtype


def _linear_ref(x, weight, bias=None, *, activation=None):
    y = x @ weight
    if bias is not None:
        y = y + bias
    return ACTIVATIONS[activation](y)


def _sdpa_meta(q, k, v, *, causal=False, scale=None):
    arguments.flag("scaled_dot_product_attention", "causal", causal)
    if scale is not None:
        arguments.real("scaled_dot_product_attention", "scale", scale)
    if q.ndim < 2 or k.ndim != q.ndim or v.ndim != q.ndim:
        raise ShapeError(
            "scaled_dot_product_attention: q, k, v must have one rank >= 2 (..., L, E), got "
            f"{tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}"
        )
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ShapeError(
            f"scaled_dot_product_attention: q {tuple(q.shape)} and k {tuple(k.shape)} need one "
            f"embedding size; k and v {tuple(v.shape)} one sequence length"
        )
    batch = shapes.broadcast("scaled_dot_product_attention", q.shape[:-2], k.shape[:-2],
                             v.shape[:-2])
    return (*batch, q.shape[-2], v.shape[-1]), q.dtype


def causal_mask(lq: int, lk: int) -> np.ndarray:
    """True where query i may attend key j (j <= i, aligned at the end as PyTorch does)."""
    return np.tril(np.ones((lq, lk), dtype=bool), k=lk - lq)


def _sdpa_ref(q, k, v, *, causal=False, scale=None):
    s = (1 / math.sqrt(q.shape[-1])) if scale is None else scale
    scores = (q @ np.swapaxes(k, -1, -2)) * s
    if causal:
        scores = np.where(causal_mask(q.shape[-2], k.shape[-2]), scores, -np.inf)
    return softmax_reference(scores, axis=-1) @ v


declare("softmax", COMPOSITE, "nn", dt.REALS, softmax_reference, _axis_meta("softmax"),
        tolerance=LOOSE)
declare("log_softmax", COMPOSITE, "nn", dt.REALS, _log_softmax_ref, _axis_meta("log_softmax"),
        tolerance=LOOSE)
declare("layer_norm", COMPOSITE, "nn", dt.REALS, _layer_norm_ref, _layer_norm_meta,
        promote=(0, 1, 2), tolerance=LOOSE)
# gelu's tail toward 0 (x < -2.5) is where its erf form and the tanh approximation part
# (3% to 85% of the result); half precision computes it in float32, so its absolute
# tolerance is float32's there too, and a tanh kernel for approximate='none' fails
_GELU_TOLERANCE = {d: (r, min(a, LOOSE[dt.float32][1])) for d, (r, a) in LOOSE.items()}
declare("rms_norm", COMPOSITE, "nn", dt.REALS, _rms_norm_ref, _rms_norm_meta, promote=(0, 1),
        tolerance=LOOSE)
declare("gelu", COMPOSITE, "nn", dt.REALS, _gelu_ref, _gelu_meta, tolerance=_GELU_TOLERANCE)
declare("silu", COMPOSITE, "nn", dt.REALS, ACTIVATIONS["silu"], unary_meta(same),
        tolerance=LOOSE)
declare("sigmoid", COMPOSITE, "nn", dt.REALS, ACTIVATIONS["sigmoid"], unary_meta(same),
        tolerance=LOOSE)
declare("relu", COMPOSITE, "nn", ORDERED, ACTIVATIONS["relu"], unary_meta(same))
declare("linear", COMPOSITE, "nn", dt.REALS, _linear_ref, _linear_meta, promote=(0, 1, 2),
        tolerance=LOOSE, bound=lambda x, w, b=None, **_: np.abs(x) @ np.abs(w) + 1)
declare("scaled_dot_product_attention", COMPOSITE, "nn", dt.REALS, _sdpa_ref, _sdpa_meta,
        promote=(0, 1, 2), tolerance=LOOSE)
declare("rope", COMPOSITE, "nn", dt.REALS, _rope_ref, _rope_meta, promote=(0, 1, 2),
        tolerance=LOOSE)
