"""Composites: their own rules (used where a backend fuses them) agree with their decompositions.

On cpu, softmax, layer_norm, gelu, linear and attention run as fused kernels in float32
and float64 (own rule), the other composites decompose (op by op). Each case also runs
the composite's VJP and series rule directly, so every rule meets its decomposition
whichever way the backend runs it.
"""

import math

import numpy as np
import pytest

import hal
from frontends import autograd as ag
from frontends.autograd import series_rules, vjp_rules


def _softmax(x, axis):
    e = hal.exp(x - hal.max(x, axis=axis, keepdims=True))
    return e / hal.sum(e, axis=axis, keepdims=True)


def _gelu(x, approximate="none"):
    if approximate == "tanh":
        return 0.5 * x * (1 + hal.tanh((x + 0.044715 * (x * x * x)) * math.sqrt(2 / math.pi)))
    return 0.5 * x * (1 + hal.erf(x * (1 / math.sqrt(2))))


def _layer_norm(x, w, b, eps=1e-5):
    c = x - hal.sum(x, axis=-1, keepdims=True) / x.shape[-1]
    return c / hal.sqrt(hal.sum(c * c, axis=-1, keepdims=True) / x.shape[-1] + eps) * w + b


def _sigmoid(x):
    return 1 / (1 + hal.exp(-x))


def _attention(q, k, v):
    s = hal.matmul(q, hal.matrix_transpose(k)) * (1 / math.sqrt(q.shape[-1]))
    mask = hal.asarray(np.tril(np.ones((q.shape[-2], k.shape[-2]), dtype=bool)))
    return hal.matmul(_softmax(hal.where(mask, s, -math.inf), -1), v)


rng = np.random.default_rng(3)
X = hal.asarray(rng.standard_normal((3, 4)))
W, B = hal.asarray(rng.standard_normal(4)), hal.asarray(rng.standard_normal(4))
M, C = hal.asarray(rng.standard_normal((4, 5))), hal.asarray(rng.standard_normal(5))
Q, K, V = (hal.asarray(rng.standard_normal((2, 3, 4))) for _ in range(3))

# name: (op, params, args, composite call, primitive-only decomposition)
CASES = {
    "mean": ("mean", {"axis": 1}, (X,), lambda x: hal.mean(x, axis=1),
             lambda x: hal.sum(x, axis=1) / 4),
    "var": ("var", {"axis": 0, "correction": 1}, (X,),
            lambda x: hal.var(x, axis=0, correction=1),
            lambda x: hal.sum((x - hal.sum(x, axis=0, keepdims=True) / 3) ** 2, axis=0) / 2),
    "softmax": ("softmax", {"axis": 0}, (X,), lambda x: hal.nn.softmax(x, axis=0),
                lambda x: _softmax(x, 0)),
    "log_softmax": ("log_softmax", {"axis": -1}, (X,), hal.nn.log_softmax,
                    lambda x: hal.log(_softmax(x, -1))),
    "layer_norm": ("layer_norm", {"eps": 1e-5}, (X, W, B), hal.nn.layer_norm, _layer_norm),
    "gelu": ("gelu", {"approximate": "none"}, (X,), hal.nn.gelu, _gelu),
    "gelu_tanh": ("gelu", {"approximate": "tanh"}, (X,),
                  lambda x: hal.nn.gelu(x, approximate="tanh"), lambda x: _gelu(x, "tanh")),
    "sigmoid": ("sigmoid", {}, (X,), hal.nn.sigmoid, _sigmoid),
    "silu": ("silu", {}, (X,), hal.nn.silu, lambda x: x * _sigmoid(x)),
    "relu": ("relu", {}, (X,), hal.nn.relu, lambda x: hal.maximum(x, 0)),
    "linear": ("linear", {"activation": "gelu"}, (X, M, C),
               lambda x, m, c: hal.nn.linear(x, m, c, activation="gelu"),
               lambda x, m, c: _gelu(x @ m + c)),
    "attention": ("scaled_dot_product_attention", {"causal": True, "scale": None}, (Q, K, V),
                  lambda q, k, v: hal.nn.scaled_dot_product_attention(q, k, v, causal=True),
                  _attention),
    "roll": ("roll", {"shift": 2, "axis": 1}, (X,), lambda x: hal.nn.roll(x, 2, axis=1),
             lambda x: hal.concat([x[:, 2:], x[:, :2]], axis=1)),
}


def _cotangent(out):
    return hal.asarray(np.random.default_rng(5).standard_normal(out.shape))


@pytest.mark.parametrize("name", list(CASES))
def test_reverse_mode_matches_the_decomposition(name):
    op, params, args, composite, decomposed = CASES[name]
    out, fn = ag.vjp(composite, *args)
    ref_out, ref_fn = ag.vjp(decomposed, *args)
    ct = _cotangent(out)
    np.testing.assert_allclose(out.numpy(), ref_out.numpy(), rtol=1e-12, atol=1e-12)
    expected = ref_fn(ct)
    for got, want in zip(fn(ct), expected, strict=True):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-11, atol=1e-12)
    rule = vjp_rules.RULES[op]
    padded = tuple(args) + (None,) * (3 - len(args)) if op in ("layer_norm", "linear") else args
    direct = rule(ct, padded, params, out, [a is not None for a in padded])
    for got, want in zip(direct, expected, strict=False):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("name", list(CASES))
def test_taylor_mode_matches_the_decomposition(name):
    op, params, args, composite, decomposed = CASES[name]
    directions = [hal.asarray(np.random.default_rng(i).standard_normal(a.shape))
                  for i, a in enumerate(args)]
    series = [[d, d * 0.5, None] for d in directions]
    _, got = ag.jet(composite, args, series)
    _, want = ag.jet(decomposed, args, series)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-10, atol=1e-11)
    out = composite(*args)
    coefficients = [[a, d, d * 0.25, None] for a, d in zip(args, directions, strict=True)]
    padded = coefficients + [None] * (3 - len(args)) if op in ("layer_norm", "linear") else \
        coefficients
    arg_values = [c[0] if c is not None else None for c in padded]
    direct = series_rules.RULES[op](arg_values, params, out, padded)
    np.testing.assert_allclose(direct[1].numpy(), want[0].numpy(), rtol=1e-10, atol=1e-11)
    np.testing.assert_allclose((direct[2] * 2).numpy(), want[1].numpy(), rtol=1e-10,
                               atol=1e-11)
