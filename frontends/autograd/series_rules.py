"""Forward rules of every differentiable op: truncated Taylor series in, series out.

A rule takes (args, params, out, series) -- the operands, parameters and result of the
op, and per operand its series [x0, x1, ..., xk] or None for a constant -- and returns
the result's series. With k = 1 a rule is the op's JVP; Taylor mode runs the same rules
at higher k. Linear ops apply themselves to each coefficient; the others use the
recurrences in `series`. Composites have rules here for when a backend fuses them.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import hal
from hal import convolution as CV
from hal import dtypes as dt
from hal import ops
from hal.dispatch import call

from . import series as S
from .vjp_conv import pool_arguments
from .vjp_rules import expand

RULES: dict[str, Callable] = {}


def series_rule(*names: str):
    """Decorator: register a series rule under op names."""
    def register(fn):
        for n in names:
            RULES[n] = fn
        return fn

    return register


def _order(series) -> int:
    return next(len(s) for s in series if s is not None) - 1


def _full(args, series):
    k = _order(series)
    return [s if s is not None or a is None else S.constant(a, k)
            for a, s in zip(args, series, strict=True)]


def _one(like):
    return hal.full((), 1, dtype=like.dtype, device=like.device)


# -- linear ops: the op itself on every coefficient -------------------------------------
_LINEAR = ("negative", "reshape", "permute_dims", "broadcast_to", "slice", "real", "imag",
           "conj", "fftn", "ifftn", "rfftn", "irfftn", "sum", "mean", "roll", "astype", "avg_pool",
           *hal.collectives.OPS)


def _make_linear(name):
    spec = ops.spec(name)

    def rule(args, params, out, series):
        return S.map_linear(lambda c: call(spec, c, **params), series[0], out)

    return rule


for _name in _LINEAR:
    RULES[_name] = _make_linear(_name)


@series_rule("pad")
def _pad(args, params, out, series):
    zero = {**params, "value": 0} if params.get("mode", "constant") == "constant" else params
    spec = ops.spec("pad")
    return S.map_linear(lambda c: call(spec, c, **zero), series[0], out)


@series_rule("take")
def _take(args, params, out, series):
    spec = ops.spec("take")
    return S.map_linear(lambda c: call(spec, c, args[1], **params), series[0], out)


def _jointly_linear(args, series, out, fn):
    """The series of an op linear in its first two operands together: fn on each pair of
    coefficients, zeros for the missing one of a pair."""
    first, second = _full(args[:2], series[:2])
    ys = [out]
    for a, b in zip(first[1:], second[1:], strict=True):
        ys.append(None if a is None and b is None else
                  fn(hal.zeros_like(args[0]) if a is None else a,
                     hal.zeros_like(args[1]) if b is None else b))
    return ys


@series_rule("dynamic_update_slice")
def _dynamic_update_slice(args, params, out, series):
    return _jointly_linear(args, series, out,
                           lambda a, u: hal.dynamic_update_slice(a, u, args[2]))


@series_rule("concat")
def _concat(args, params, out, series):
    full = _full(args, series)
    axis = params.get("axis", 0)
    ys = [out]
    for n in range(1, len(full[0])):
        parts = [s[n] for s in full]
        if all(p is None for p in parts):
            ys.append(None)
        else:
            ys.append(hal.concat([hal.zeros_like(a) if p is None else p
                                  for a, p in zip(args, parts, strict=False)], axis=axis))
    return ys


@series_rule("add")
def _add(args, params, out, series):
    return S.add(*_full(args, series), out)


@series_rule("subtract")
def _subtract(args, params, out, series):
    return S.sub(*_full(args, series), out)


@series_rule("where")
def _where(args, params, out, series):
    _, a, b = _full(args, series)
    return S.where(args[0], a, b, out)


@series_rule("complex")
def _complex(args, params, out, series):
    return _jointly_linear(args, series, out, hal.complex)


# -- products and quotients -------------------------------------------------------------
@series_rule("multiply")
def _multiply(args, params, out, series):
    return S.mul(*_full(args, series), out)


@series_rule("divide")
def _divide(args, params, out, series):
    return S.div(*_full(args, series), out)


@series_rule("matmul")
def _matmul(args, params, out, series):
    return S.bilinear(hal.matmul, *_full(args, series), out)


@series_rule("power")
def _power(args, params, out, series):
    x, y = _full(args, series)
    if series[1] is None:
        exponent = args[1]
        if exponent.size == 1 and not dt.is_complex(exponent.dtype):
            value = float(exponent.item())
            if value.is_integer() and abs(value) <= 64:
                return S.integer_power(x, int(value), out)
        return S.power(x, exponent, out)
    return S.exp(S.mul(y, S.log(x)), out)


# -- elementwise functions --------------------------------------------------------------
@series_rule("exp")
def _exp(args, params, out, series):
    return S.exp(series[0], out)


@series_rule("log")
def _log(args, params, out, series):
    return S.log(series[0], out)


@series_rule("sqrt")
def _sqrt(args, params, out, series):
    return S.sqrt(series[0], out)


@series_rule("sin")
def _sin(args, params, out, series):
    return S.sin_cos(series[0], s0=out)[0]


@series_rule("cos")
def _cos(args, params, out, series):
    return S.sin_cos(series[0], c0=out)[1]


@series_rule("tanh")
def _tanh(args, params, out, series):
    return S.tanh(series[0], out)


@series_rule("erf")
def _erf(args, params, out, series):
    return S.erf(series[0], out)


def _plus_square(x, c: float, sign: float):
    """The series of c + sign x**2."""
    return S.add(S.constant(hal.full_like(x[0], c), len(x) - 1), S.scale(S.square(x), sign))


def _integral_rule(derivative: Callable):
    """A rule for f with f'(x) = derivative(x's series), algebraic in x."""
    def rule(args, params, out, series):
        return S.integral(series[0], derivative(series[0]), out)

    return rule


_INTEGRALS = {
    "asin": lambda x: S.reciprocal(S.sqrt(_plus_square(x, 1.0, -1.0))),
    "acos": lambda x: S.scale(S.reciprocal(S.sqrt(_plus_square(x, 1.0, -1.0))), -1.0),
    "atan": lambda x: S.reciprocal(_plus_square(x, 1.0, 1.0)),
    "atanh": lambda x: S.reciprocal(_plus_square(x, 1.0, -1.0)),
    "asinh": lambda x: S.reciprocal(S.sqrt(_plus_square(x, 1.0, 1.0))),
    "acosh": lambda x: S.reciprocal(S.sqrt(_plus_square(x, -1.0, 1.0))),
    "log1p": lambda x: S.reciprocal(S.shift(x, 1.0)),
    "log2": lambda x: S.reciprocal(S.scale(x, math.log(2.0))),
    "log10": lambda x: S.reciprocal(S.scale(x, math.log(10.0))),
}
for _name, _derivative in _INTEGRALS.items():
    series_rule(_name)(_integral_rule(_derivative))


@series_rule("expm1")
def _expm1(args, params, out, series):
    return _with_primal(S.exp(series[0]), out)


@series_rule("sinh")
def _sinh(args, params, out, series):
    e = S.exp(series[0])
    return _with_primal(S.scale(S.sub(e, S.reciprocal(e)), 0.5), out)


@series_rule("cosh")
def _cosh(args, params, out, series):
    e = S.exp(series[0])
    return _with_primal(S.scale(S.add(e, S.reciprocal(e)), 0.5), out)


@series_rule("tan")
def _tan(args, params, out, series):
    s, c = S.sin_cos(series[0])
    return S.div(s, c, out)


@series_rule("hypot")
def _hypot(args, params, out, series):
    a, b = _full(args, series)
    return S.sqrt(S.add(S.square(a), S.square(b)), out)


@series_rule("logaddexp")
def _logaddexp(args, params, out, series):
    a, b = _full(args, series)
    top = hal.maximum(a[0], b[0])  # a constant shift: exp cannot overflow
    total = S.add(S.exp(S.shift(a, -top)), S.exp(S.shift(b, -top)))
    return _with_primal(S.log(total), out)


@series_rule("copysign")
def _copysign(args, params, out, series):
    a, b = args
    flip = hal.where(hal.signbit(a) != hal.signbit(b), -1.0, 1.0)  # d/da: +-1; d/db: 0
    if series[0] is None:
        return S.constant(out, _order(series))
    return _with_primal(S.map_linear(lambda t: t * hal.astype(flip, t.dtype), series[0]), out)


@series_rule("abs")
def _abs(args, params, out, series):
    x = args[0]
    if dt.is_complex(x.dtype):
        real = S.map_linear(hal.real, series[0])
        imag = S.map_linear(hal.imag, series[0])
        return S.sqrt(S.add(S.square(real), S.square(imag)), out)
    positive, negative = hal.greater(x, 0), hal.less(x, 0)
    return S.map_linear(lambda c: hal.where(positive, c, hal.where(negative, -c, 0)),
                        series[0], out)


def _select(a, b, out, first_wins):
    one = _one(out)
    weight = hal.where(first_wins(a[0], b[0]), one, hal.where(hal.equal(a[0], b[0]),
                                                              one * 0.5, 0))
    return S.select(weight, a, b, out)


@series_rule("maximum")
def _maximum(args, params, out, series):
    return _select(*_full(args, series), out, hal.greater)


@series_rule("minimum")
def _minimum(args, params, out, series):
    return _select(*_full(args, series), out, hal.less)


@series_rule("max", "min")
def _reduce_extreme(args, params, out, series):
    x = args[0]
    axis, keepdims = params.get("axis"), params.get("keepdims", False)
    hit = hal.equal(x, expand(out, x.shape, axis, keepdims))
    count = hal.sum(hal.where(hit, _one(x), 0), axis=axis, keepdims=keepdims)
    return S.map_linear(
        lambda c: hal.sum(hal.where(hit, c, 0), axis=axis, keepdims=keepdims) / count,
        series[0], out)


# -- composites (used where a backend runs them as one fused kernel) ---------------------
def softmax(x: S.Series, axis) -> S.Series:
    """The series of softmax along axis."""
    e = S.exp(S.shift(x, -hal.max(x[0], axis=axis, keepdims=True)))
    return S.div(e, S.sum_(e, axis, keepdims=True))


def sigmoid(x: S.Series) -> S.Series:
    """The series of 1 / (1 + exp(-x))."""
    return S.reciprocal(S.shift(S.exp(S.scale(x, -1)), 1))


def gelu(x: S.Series, approximate: str) -> S.Series:
    """The series of gelu, exact (erf) or tanh-approximated."""
    if approximate == "tanh":
        cube = S.mul(S.square(x), x)
        inner = S.scale(S.add(x, S.scale(cube, 0.044715)), math.sqrt(2 / math.pi))
        return S.scale(S.mul(x, S.shift(S.tanh(inner), 1)), 0.5)
    return S.scale(S.mul(x, S.shift(S.erf(S.scale(x, 1 / math.sqrt(2))), 1)), 0.5)


def relu(x: S.Series, out=None) -> S.Series:
    """The series of maximum(x, 0) (ties at 0 split evenly, as maximum's)."""
    zero = S.constant(hal.zeros_like(x[0]), len(x) - 1)
    return _select(x, zero, hal.maximum(x[0], 0) if out is None else out, hal.greater)


def _with_primal(s, out):
    return [out, *s[1:]]


@series_rule("var")
def _var(args, params, out, series):
    x, axis = series[0], params.get("axis")
    axes = range(x[0].ndim) if axis is None else (axis,) if isinstance(axis, int) else axis
    n = math.prod(x[0].shape[a] for a in axes) - params.get("correction", 0)
    mean = S.map_linear(lambda c: hal.mean(c, axis=axis, keepdims=True), x)
    total = S.sum_(S.square(S.sub(x, mean)), axis, params.get("keepdims", False))
    return _with_primal(S.scale(total, 1 / n), out)


@series_rule("softmax")
def _softmax(args, params, out, series):
    return _with_primal(softmax(series[0], params.get("axis", -1)), out)


@series_rule("log_softmax")
def _log_softmax(args, params, out, series):
    x, axis = series[0], params.get("axis", -1)
    shifted = S.shift(x, -hal.max(x[0], axis=axis, keepdims=True))
    total = S.sum_(S.exp(shifted), axis, keepdims=True)
    return S.sub(shifted, S.log(total), out)


@series_rule("layer_norm")
def _layer_norm(args, params, out, series):
    x, weight, bias = _full(args, series)
    mean = S.map_linear(lambda c: hal.mean(c, axis=-1, keepdims=True), x)
    centred = S.sub(x, mean)
    var = S.map_linear(lambda c: hal.mean(c, axis=-1, keepdims=True), S.square(centred))
    y = S.div(centred, S.sqrt(S.shift(var, params.get("eps", 1e-5))))
    if weight is not None:
        y = S.mul(y, weight)
    if bias is not None:
        y = S.add(y, bias)
    return _with_primal(y, out)


@series_rule("rms_norm")
def _rms_norm(args, params, out, series):
    x, weight = _full([*args, None][:2], [*series, None][:2])
    square = S.map_linear(lambda c: hal.mean(c, axis=-1, keepdims=True), S.square(x))
    y = S.div(x, S.sqrt(S.shift(square, params.get("eps", 1e-6))))
    return _with_primal(y if weight is None else S.mul(y, weight), out)


@series_rule("rope")
def _rope(args, params, out, series):
    x, cos, sin = _full(args, series)
    interleaved = params.get("interleaved", False)
    zero = hal.zeros_like(args[1])

    def by_cos(a, c):
        return hal.nn.rope(a, c, zero, interleaved=interleaved)

    def by_sin(a, s):
        return hal.nn.rope(a, zero, s, interleaved=interleaved)

    return S.add(S.bilinear(by_cos, x, cos), S.bilinear(by_sin, x, sin), out)


@series_rule("gelu")
def _gelu(args, params, out, series):
    return _with_primal(gelu(series[0], params.get("approximate", "none")), out)


@series_rule("sigmoid")
def _sigmoid(args, params, out, series):
    return _with_primal(sigmoid(series[0]), out)


@series_rule("silu")
def _silu(args, params, out, series):
    return S.mul(series[0], sigmoid(series[0]), out)


@series_rule("relu")
def _relu(args, params, out, series):
    return relu(series[0], out)


_ACTIVATIONS = {
    None: lambda y: y,
    "relu": relu,
    "gelu": lambda y: gelu(y, "none"),
    "gelu_tanh": lambda y: gelu(y, "tanh"),
    "silu": lambda y: S.mul(y, sigmoid(y)),
    "sigmoid": sigmoid,
    "tanh": S.tanh,
}


@series_rule("linear")
def _linear_layer(args, params, out, series):
    x, weight, bias = _full(args, series)
    y = S.bilinear(hal.matmul, x, weight)
    if bias is not None:
        y = S.add(y, bias)
    return _with_primal(_ACTIVATIONS[params.get("activation")](y), out)


@series_rule("scaled_dot_product_attention")
def _attention(args, params, out, series):
    q, k, v = _full(args, series)
    s = params.get("scale")
    s = 1 / math.sqrt(args[0].shape[-1]) if s is None else s
    scores = S.scale(S.bilinear(hal.matmul, q, S.map_linear(hal.matrix_transpose, k)), s)
    if params.get("causal"):
        mask = hal.asarray(ops.causal_mask(args[0].shape[-2], args[1].shape[-2]),
                           device=args[0].device)
        blocked = S.constant(hal.full((), -math.inf, dtype=out.dtype, device=out.device),
                             len(q) - 1)
        scores = S.where(mask, scores, blocked)
    return S.bilinear(hal.matmul, softmax(scores, -1), v, out)


# -- convolution and pooling -----------------------------------------------------------------
def _convolution(fn):
    """The series rule of a convolution fn(x, weight, **params): bilinear, plus the bias."""
    def rule(args, params, out, series):
        x, weight, bias = _full([*args, None][:3], [*series, None][:3])
        y = S.bilinear(lambda a, w: fn(a, w, **params), x, weight)
        if bias is not None:
            shape = ops.conv.channel_shape(out.ndim, params.get("layout", "channels_first"))
            y = S.add(y, S.map_linear(lambda c: hal.reshape(c, shape), bias))
        return _with_primal(y, out)

    return rule


RULES["conv"] = _convolution(hal.nn.conv)
RULES["conv_transpose"] = _convolution(hal.nn.conv_transpose)


@series_rule("max_pool")
def _max_pool(args, params, out, series):
    layout = params.get("layout", "channels_first")
    x = CV.to_channels_first(args[0], layout)
    kernel, stride, padding = pool_arguments("max_pool", x.shape, params)
    y = CV.to_channels_first(out, layout)
    weight, _ = CV.max_pool_hits(x, y, kernel, stride, padding)

    def pick(c):
        elements = CV.window_elements(CV.to_channels_first(c, layout), kernel, stride, padding)
        return CV.from_channels_first(
            hal.reshape(hal.sum(elements * weight, axis=1), y.shape), layout)

    return S.map_linear(pick, series[0], out)


@series_rule("batch_norm")
def _batch_norm(args, params, out, series):
    x, mean, var, weight, bias = _full([*args, None, None][:5], [*series, None, None][:5])
    shape = ops.conv.channel_shape(out.ndim, params.get("layout", "channels_first"))

    def channels(s):
        return S.map_linear(lambda c: hal.reshape(c, shape), s)

    y = S.div(S.sub(x, channels(mean)), S.sqrt(S.shift(channels(var), params.get("eps", 1e-5))))
    if weight is not None:
        y = S.mul(y, channels(weight))
    if bias is not None:
        y = S.add(y, channels(bias))
    return _with_primal(y, out)
