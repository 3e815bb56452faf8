"""Reverse-mode rules of the composite ops, used where a backend runs one as a fused kernel.

A composite that runs through its decomposition is differentiated op by op instead;
these rules give the same values (tests hold them to the decomposition). Conventions as
in `vjp_rules`.
"""

from __future__ import annotations

import math

import hal
from hal import ops

from .vjp_rules import RULES, expand, unbroadcast, vjp_rule


def _count(x, axis) -> int:
    if axis is None:
        return x.size
    axes = (axis,) if isinstance(axis, int) else axis
    return math.prod(x.shape[a] for a in axes)


@vjp_rule("mean", args=False, out=False)
def _mean(ct, args, params, out, needs):
    x = args[0]
    axis = params.get("axis")
    return (expand(ct, x.shape, axis, params.get("keepdims", False)) / _count(x, axis),)


@vjp_rule("var", out=False)
def _var(ct, args, params, out, needs):
    x = args[0]
    axis = params.get("axis")
    n = _count(x, axis) - params.get("correction", 0)
    centred = x - hal.mean(x, axis=axis, keepdims=True)
    return (expand(ct, x.shape, axis, params.get("keepdims", False)) * centred * (2 / n),)


@vjp_rule("softmax", args=False)
def _softmax(ct, args, params, out, needs):
    axis = params.get("axis", -1)
    return (out * (ct - hal.sum(ct * out, axis=axis, keepdims=True)),)


@vjp_rule("log_softmax", args=False)
def _log_softmax(ct, args, params, out, needs):
    axis = params.get("axis", -1)
    return (ct - hal.exp(out) * hal.sum(ct, axis=axis, keepdims=True),)


@vjp_rule("layer_norm")
def _layer_norm(ct, args, params, out, needs):
    x, weight, bias = ([*list(args), None, None])[:3]
    eps = params.get("eps", 1e-5)
    centred = x - hal.mean(x, axis=-1, keepdims=True)
    inv = 1 / hal.sqrt(hal.mean(centred * centred, axis=-1, keepdims=True) + eps)
    xhat = centred * inv
    lead = tuple(range(x.ndim - 1))
    g = ct if weight is None else ct * weight
    gx = inv * (g - hal.mean(g, axis=-1, keepdims=True)
                - xhat * hal.mean(g * xhat, axis=-1, keepdims=True)) if needs[0] else None
    gw = hal.sum(ct * xhat, axis=lead) if weight is not None and needs[1] else None
    gb = hal.sum(ct, axis=lead) if bias is not None and needs[2] else None
    return (gx, gw, gb)[:len(args)]


@vjp_rule("rms_norm", out=False)
def _rms_norm(ct, args, params, out, needs):
    x, weight = ([*list(args), None])[:2]
    inv = 1 / hal.sqrt(hal.mean(x * x, axis=-1, keepdims=True) + params.get("eps", 1e-6))
    g = ct if weight is None else ct * weight
    gx = inv * (g - x * (inv * inv) * hal.mean(g * x, axis=-1, keepdims=True)) \
        if needs[0] else None
    gw = hal.sum(ct * x * inv, axis=tuple(range(x.ndim - 1))) \
        if weight is not None and needs[1] else None
    return (gx, gw)[:len(args)]


@vjp_rule("rope")
def _rope(ct, args, params, out, needs):
    x, cos, sin = args
    interleaved = params.get("interleaved", False)
    gx = hal.nn.rope(ct, cos, -sin, interleaved=interleaved) if needs[0] else None
    ga, gb = hal.nn.rope_pairs(ct, interleaved)
    a, b = hal.nn.rope_pairs(x, interleaved)
    gcos = unbroadcast(ga * a + gb * b, cos.shape) if needs[1] else None
    gsin = unbroadcast(gb * a - ga * b, sin.shape) if needs[2] else None
    return gx, gcos, gsin


def _gelu_derivative(x, approximate):
    if approximate == "tanh":
        c = math.sqrt(2 / math.pi)
        t = hal.tanh((x + 0.044715 * (x * x * x)) * c)
        return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * (c * (1 + 3 * 0.044715 * (x * x)))
    cdf = 0.5 * (1 + hal.erf(x * (1 / math.sqrt(2))))
    return cdf + x * hal.exp(-0.5 * (x * x)) * (1 / math.sqrt(2 * math.pi))


@vjp_rule("gelu", out=False)
def _gelu(ct, args, params, out, needs):
    return (ct * _gelu_derivative(args[0], params.get("approximate", "none")),)


@vjp_rule("sigmoid", args=False)
def _sigmoid(ct, args, params, out, needs):
    return (ct * (out * (1 - out)),)


@vjp_rule("silu", out=False)
def _silu(ct, args, params, out, needs):
    x = args[0]
    s = hal.nn.sigmoid(x)
    return (ct * (s * (1 + x * (1 - s))),)


@vjp_rule("relu", out=False)
def _relu(ct, args, params, out, needs):
    x = args[0]  # the decomposition is maximum(x, 0): ties (x == 0) split the cotangent
    return (hal.where(hal.greater(x, 0), ct, hal.where(hal.equal(x, 0), ct * 0.5, 0)),)


_ACTIVATION_OPS = {"relu": "relu", "gelu": "gelu", "gelu_tanh": "gelu", "silu": "silu",
                   "sigmoid": "sigmoid", "tanh": "tanh"}


def _activation(name, y):
    if name in ("gelu", "gelu_tanh"):
        return hal.nn.gelu(y, approximate="tanh" if name == "gelu_tanh" else "none")
    return {"relu": hal.nn.relu, "silu": hal.nn.silu, "sigmoid": hal.nn.sigmoid,
            "tanh": hal.tanh}[name](y)


@vjp_rule("linear", out=False)
def _linear(ct, args, params, out, needs):
    x, weight, bias = ([*list(args), None])[:3]
    activation = params.get("activation")
    g = ct
    if activation is not None:
        y = hal.matmul(x, weight)
        if bias is not None:
            y = y + bias
        sub = {"approximate": "tanh"} if activation == "gelu_tanh" else {}
        op = _ACTIVATION_OPS[activation]
        (g,) = RULES[op](ct, (y,), sub, _activation(activation, y), (True,))
    gx, gw = RULES["matmul"](g, (x, weight), {}, None, (needs[0], needs[1]))
    gb = unbroadcast(g, bias.shape) if bias is not None and needs[2] else None
    return (gx, gw, gb)[:len(args)]


@vjp_rule("scaled_dot_product_attention", out=False)
def _attention(ct, args, params, out, needs):
    q, k, v = args
    s = params.get("scale")
    s = 1 / math.sqrt(q.shape[-1]) if s is None else s
    scores = hal.matmul(q, hal.matrix_transpose(k)) * s
    if params.get("causal"):
        mask = hal.asarray(ops.causal_mask(q.shape[-2], k.shape[-2]), device=q.device)
        scores = hal.where(mask, scores, -math.inf)
    p = hal.nn.softmax(scores, axis=-1)
    gv = unbroadcast(hal.matmul(hal.matrix_transpose(p), ct), v.shape) if needs[2] else None
    gp = hal.matmul(ct, hal.matrix_transpose(v))
    gs = p * (gp - hal.sum(gp * p, axis=-1, keepdims=True)) * s
    gq = unbroadcast(hal.matmul(gs, k), q.shape) if needs[0] else None
    gk = unbroadcast(hal.matmul(hal.matrix_transpose(gs), q), k.shape) if needs[1] else None
    return gq, gk, gv


@vjp_rule("roll", args=False, out=False)
def _roll(ct, args, params, out, needs):
    shift, axis = params["shift"], params.get("axis")
    back = -shift if isinstance(shift, int) else tuple(-s for s in shift)
    return (hal.nn.roll(ct, back, axis=axis),)
