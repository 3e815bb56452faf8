"""Reverse-mode rules (VJPs) of the primitive and extended ops, written in hal ops.

A rule takes (ct, args, params, out, needs) -- the cotangent of the op's result, the
operands as the op received them, its parameters, its result, and which operands need
a cotangent -- and returns one cotangent (or None) per operand. Because rules are hal
ops, an enclosing level differentiates them: grad of grad to any order.

Complex convention (JAX's): cotangents pair with tangents through Re(sum(ct * t)), no
conjugate. A holomorphic op passes ct * f'(z); for a real function of complex z the
gradient is df/dx - i df/dy (so descend along its conjugate).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

import hal
from hal import Tensor
from hal import dtypes as dt

RULES: dict[str, Callable] = {}
SAVES: dict[str, tuple] = {}  # op -> (operand values the rule reads, whether it reads out)


def vjp_rule(*names: str, args: bool | tuple[int, ...] = True, out: bool = True):
    """Decorator: register a VJP rule under op names.

    args (True, False or the indices) and out say which values the rule reads; the tape
    keeps only those alive (the others' shapes and dtypes are kept), as PyTorch saves
    only what a backward formula needs.
    """
    def register(fn):
        for n in names:
            RULES[n] = fn
            SAVES[n] = (args, out)
        return fn

    return register


def unbroadcast(g: Tensor, shape) -> Tensor:
    """g summed over the axes that broadcasting added or stretched to reach g's shape."""
    shape = tuple(shape)
    if g.shape == shape:
        return g
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        i + lead for i, n in enumerate(shape) if n == 1 and g.shape[i + lead] != 1
    )
    if axes:
        g = hal.sum(g, axis=axes, keepdims=True)
    return hal.reshape(g, shape)


def expand(g: Tensor, shape, axis, keepdims: bool) -> Tensor:
    """A reduction's cotangent broadcast back to the input shape."""
    if not keepdims:
        axes = range(len(shape)) if axis is None else axis
        axes = (axes,) if isinstance(axes, int) else axes
        kept = {a % len(shape) for a in axes}
        g = hal.reshape(g, tuple(1 if i in kept else n for i, n in enumerate(shape)))
    return hal.broadcast_to(g, shape)


def one_like(x: Tensor) -> Tensor:
    """A constant 0-d one of x's dtype on x's device."""
    return hal.full((), 1, dtype=x.dtype, device=x.device)


# -- elementwise ------------------------------------------------------------------------
@vjp_rule("negative", args=False, out=False)
def _negative(ct, args, params, out, needs):
    return (-ct,)


@vjp_rule("abs")
def _abs(ct, args, params, out, needs):
    (x,) = args
    if dt.is_complex(x.dtype):
        return (hal.conj(x) * (ct / out),)
    return (hal.where(hal.greater(x, 0), ct, hal.where(hal.less(x, 0), -ct, 0)),)


@vjp_rule("exp", args=False)
def _exp(ct, args, params, out, needs):
    return (ct * out,)


@vjp_rule("log", out=False)
def _log(ct, args, params, out, needs):
    return (ct / args[0],)


@vjp_rule("sqrt", args=False)
def _sqrt(ct, args, params, out, needs):
    return (ct / (out * 2),)


@vjp_rule("sin", out=False)
def _sin(ct, args, params, out, needs):
    return (ct * hal.cos(args[0]),)


@vjp_rule("cos", out=False)
def _cos(ct, args, params, out, needs):
    return (-(ct * hal.sin(args[0])),)


@vjp_rule("tanh", args=False)
def _tanh(ct, args, params, out, needs):
    return (ct * (1 - out * out),)


@vjp_rule("erf", out=False)
def _erf(ct, args, params, out, needs):
    x = args[0]
    return (ct * (hal.exp(-(x * x)) * (2 / math.sqrt(math.pi))),)


def _unary_vjp(name: str, derivative: Callable, *, args: bool = True, out: bool = False):
    """Register ct * derivative(x, out) as the VJP of a unary op (holomorphic for complex)."""
    @vjp_rule(name, args=args, out=out)
    def rule(ct, args_, params, out_, needs):
        return (ct * derivative(args_[0] if args else None, out_),)

    return rule


_LN2, _LN10 = math.log(2.0), math.log(10.0)
for _name, _derivative, _reads in (
        ("asin", lambda x, y: 1 / hal.sqrt(1 - x * x), "x"),
        ("acos", lambda x, y: -1 / hal.sqrt(1 - x * x), "x"),
        ("atan", lambda x, y: 1 / (1 + x * x), "x"),
        ("atanh", lambda x, y: 1 / (1 - x * x), "x"),
        ("asinh", lambda x, y: 1 / hal.sqrt(x * x + 1), "x"),
        ("acosh", lambda x, y: 1 / hal.sqrt(x * x - 1), "x"),
        ("sinh", lambda x, y: hal.cosh(x), "x"),
        ("cosh", lambda x, y: hal.sinh(x), "x"),
        ("tan", lambda x, y: 1 + y * y, "y"),
        ("expm1", lambda x, y: y + 1, "y"),
        ("log1p", lambda x, y: 1 / (1 + x), "x"),
        ("log2", lambda x, y: 1 / (x * _LN2), "x"),
        ("log10", lambda x, y: 1 / (x * _LN10), "x")):
    _unary_vjp(_name, _derivative, args=_reads == "x", out=_reads == "y")


@vjp_rule("hypot")
def _hypot(ct, args, params, out, needs):
    a, b = args
    return (unbroadcast(ct * (a / out), a.shape) if needs[0] else None,
            unbroadcast(ct * (b / out), b.shape) if needs[1] else None)


@vjp_rule("logaddexp")
def _logaddexp(ct, args, params, out, needs):
    a, b = args
    return (unbroadcast(ct * hal.exp(a - out), a.shape) if needs[0] else None,
            unbroadcast(ct * hal.exp(b - out), b.shape) if needs[1] else None)


@vjp_rule("copysign", out=False)
def _copysign(ct, args, params, out, needs):
    a, b = args  # d/da: +-1 (the signs agree or not); d/db: 0 almost everywhere
    flip = hal.where(hal.signbit(a) != hal.signbit(b), -1.0, 1.0)
    return (unbroadcast(ct * hal.astype(flip, ct.dtype), a.shape) if needs[0] else None, None)


@vjp_rule("add", args=False, out=False)
def _add(ct, args, params, out, needs):
    a, b = args
    return (unbroadcast(ct, a.shape) if needs[0] else None,
            unbroadcast(ct, b.shape) if needs[1] else None)


@vjp_rule("subtract", args=False, out=False)
def _subtract(ct, args, params, out, needs):
    a, b = args
    return (unbroadcast(ct, a.shape) if needs[0] else None,
            unbroadcast(-ct, b.shape) if needs[1] else None)


@vjp_rule("multiply", out=False)
def _multiply(ct, args, params, out, needs):
    a, b = args
    return (unbroadcast(ct * b, a.shape) if needs[0] else None,
            unbroadcast(ct * a, b.shape) if needs[1] else None)


@vjp_rule("divide", args=(1,))
def _divide(ct, args, params, out, needs):
    a, b = args
    ga = ct / b
    return (unbroadcast(ga, a.shape) if needs[0] else None,
            unbroadcast(-(ga * out), b.shape) if needs[1] else None)


@vjp_rule("power")
def _power(ct, args, params, out, needs):
    x, y = args
    gx = gy = None
    if needs[0]:
        # y * x**(y-1), and 0 (not 0 * inf) where x == y == 0; guarding only that point
        # keeps the dependence on y that higher derivatives need where y == 0 alone
        plain = y * hal.power(x, y - 1)
        d = hal.where(hal.equal(x, 0), hal.where(hal.equal(y, 0), 0, plain), plain)
        gx = unbroadcast(ct * d, x.shape)
    if needs[1]:
        safe_log = hal.where(hal.equal(x, 0), 0, hal.log(hal.where(hal.equal(x, 0), 1, x)))
        gy = unbroadcast(ct * out * safe_log, y.shape)
    return gx, gy


def _select_vjp(ct, args, needs, first_wins):
    a, b = args
    wins, tie = first_wins(a, b), hal.equal(a, b)
    half = ct * 0.5
    ga = hal.where(wins, ct, hal.where(tie, half, 0)) if needs[0] else None
    gb = hal.where(wins, 0, hal.where(tie, half, ct)) if needs[1] else None
    return (None if ga is None else unbroadcast(ga, a.shape),
            None if gb is None else unbroadcast(gb, b.shape))


@vjp_rule("maximum", out=False)
def _maximum(ct, args, params, out, needs):
    return _select_vjp(ct, args, needs, hal.greater)


@vjp_rule("minimum", out=False)
def _minimum(ct, args, params, out, needs):
    return _select_vjp(ct, args, needs, hal.less)


@vjp_rule("where", args=(0,), out=False)
def _where(ct, args, params, out, needs):
    c, x, y = args
    return (None,
            unbroadcast(hal.where(c, ct, 0), x.shape) if needs[1] else None,
            unbroadcast(hal.where(c, 0, ct), y.shape) if needs[2] else None)


@vjp_rule("astype", args=False, out=False)
def _astype(ct, args, params, out, needs):
    (x,) = args
    if dt.is_complex(ct.dtype) and not dt.is_complex(x.dtype):
        ct = hal.real(ct)
    return (hal.astype(ct, x.dtype),)


# -- reductions -------------------------------------------------------------------------
@vjp_rule("sum", args=False, out=False)
def _sum(ct, args, params, out, needs):
    x = args[0]
    return (expand(ct, x.shape, params.get("axis"), params.get("keepdims", False)),)


@vjp_rule("max", "min")
def _max(ct, args, params, out, needs):
    x = args[0]
    axis, keepdims = params.get("axis"), params.get("keepdims", False)
    hit = hal.equal(x, expand(out, x.shape, axis, keepdims))
    count = hal.sum(hal.where(hit, one_like(x), 0), axis=axis, keepdims=keepdims)
    return (hal.where(hit, expand(ct / count, x.shape, axis, keepdims), 0),)


# -- movement ---------------------------------------------------------------------------
@vjp_rule("reshape", args=False, out=False)
def _reshape(ct, args, params, out, needs):
    return (hal.reshape(ct, args[0].shape),)


@vjp_rule("permute_dims", args=False, out=False)
def _permute(ct, args, params, out, needs):
    axes = [a % ct.ndim for a in params["axes"]]
    return (hal.permute_dims(ct, [int(i) for i in np.argsort(axes)]),)


@vjp_rule("broadcast_to", args=False, out=False)
def _broadcast_to(ct, args, params, out, needs):
    return (unbroadcast(ct, args[0].shape),)


def _unslice_axis(g: Tensor, axis: int, start: int, step: int, count: int, size: int):
    """The transpose of taking (start, step, count) along one axis of length size."""
    if count == 0:
        shape = list(g.shape)
        shape[axis] = size
        return hal.zeros(shape, dtype=g.dtype, device=g.device)
    if step < 0:  # reverse, then it is a forward slice from the last index taken
        start, step = start + step * (count - 1), -step
        whole = [(0, 1, n) for n in g.shape]
        whole[axis] = (count - 1, -1, count)
        g = hal.slice(g, whole)
    if step > 1:  # interleave step-1 zeros after each element
        shape = list(g.shape)
        g = hal.reshape(g, (*shape[:axis + 1], 1, *shape[axis + 1:]))
        widths = [(0, 0)] * g.ndim
        widths[axis + 1] = (0, step - 1)
        g = hal.pad(g, widths)
        shape[axis] = count * step
        g = hal.reshape(g, shape)
        keep = [(0, 1, n) for n in shape]
        keep[axis] = (0, 1, (count - 1) * step + 1)
        g = hal.slice(g, keep)
    widths = [(0, 0)] * g.ndim
    widths[axis] = (start, size - start - g.shape[axis])
    return hal.pad(g, widths)


@vjp_rule("slice", args=False, out=False)
def _slice(ct, args, params, out, needs):
    x = args[0]
    g = ct
    for axis, (bound, size) in enumerate(zip(params["bounds"], x.shape, strict=True)):
        start, step, count = bound
        if (start, step, count) != (0, 1, size):
            g = _unslice_axis(g, axis, start, step, count, size)
    return (g,)


@vjp_rule("concat", args=False, out=False)
def _concat(ct, args, params, out, needs):
    axis = params.get("axis", 0) % ct.ndim
    grads, offset = [], 0
    for a, need in zip(args, needs, strict=False):
        n = a.shape[axis]
        if need:
            bounds = [(0, 1, m) for m in ct.shape]
            bounds[axis] = (offset, 1, n)
            grads.append(hal.slice(ct, bounds))
        else:
            grads.append(None)
        offset += n
    return tuple(grads)


def _take(g, axis, start, count):
    bounds = [(0, 1, m) for m in g.shape]
    bounds[axis] = (start, 1, count)
    return hal.slice(g, bounds)


def _pad_to(g, axis, before, after):
    widths = [(0, 0)] * g.ndim
    widths[axis] = (before, after)
    return hal.pad(g, widths)


@vjp_rule("pad", args=False, out=False)
def _pad(ct, args, params, out, needs):
    x = args[0]
    mode = params.get("mode", "constant")
    g = ct
    for axis, ((b, a), n) in enumerate(zip(params["pad_width"], x.shape, strict=False)):
        if b == a == 0:
            continue
        core = _take(g, axis, b, n)
        if mode == "edge":
            if b:
                core = core + _pad_to(hal.sum(_take(g, axis, 0, b), axis=axis, keepdims=True),
                                      axis, 0, n - 1)
            if a:
                core = core + _pad_to(hal.sum(_take(g, axis, b + n, a), axis=axis,
                                              keepdims=True), axis, n - 1, 0)
        elif mode == "wrap":
            if b:
                core = core + _pad_to(_take(g, axis, 0, b), axis, n - b, 0)
            if a:
                core = core + _pad_to(_take(g, axis, b + n, a), axis, 0, n - a)
        g = core
    return (g,)


@vjp_rule("matmul", out=False)
def _matmul(ct, args, params, out, needs):
    a, b = args
    a2 = hal.reshape(a, (1, a.shape[0])) if a.ndim == 1 else a
    b2 = hal.reshape(b, (b.shape[0], 1)) if b.ndim == 1 else b
    g = ct
    if a.ndim == 1:
        g = hal.expand_dims(g, axis=-2 if b.ndim > 1 else 0)
    if b.ndim == 1:
        g = hal.expand_dims(g, axis=-1)
    ga = unbroadcast(hal.matmul(g, hal.matrix_transpose(b2)), a2.shape) if needs[0] else None
    gb = unbroadcast(hal.matmul(hal.matrix_transpose(a2), g), b2.shape) if needs[1] else None
    return (None if ga is None else hal.reshape(ga, a.shape),
            None if gb is None else hal.reshape(gb, b.shape))


@vjp_rule("take", args=(1,), out=False)
def _take_gathered(ct, args, params, out, needs):
    """The cotangent of the gathered tensor: each slice of ct added into the slice it came from.

    The op set has no scatter-add, so this is a one-hot matmul: (n, k) one-hot of the k
    indices against the n positions of the axis, times ct seen as (before, k, after).
    It costs O(k * n * after) time and O(k * n) memory: fine for position and token-type
    tables and small vocabularies; for a large embedding table freeze it instead
    (`model.freeze("...word_embeddings")`).
    """
    x, idx = args
    axis = params.get("axis")
    if axis is None:
        before, n, after = 1, x.size, 1
    else:
        a = axis % x.ndim
        before, n, after = math.prod(x.shape[:a]), x.shape[a], math.prod(x.shape[a + 1:])
    flat = hal.reshape(idx, (1, idx.size))
    flat = hal.where(hal.less(flat, 0), flat + n, flat)
    positions = hal.reshape(hal.arange(n, dtype=idx.dtype, device=idx.device), (n, 1))
    one_hot = hal.astype(hal.equal(positions, flat), ct.dtype)
    g = hal.matmul(one_hot, hal.reshape(ct, (before, idx.size, after)))
    return (hal.reshape(g, x.shape), None)


@vjp_rule("dynamic_update_slice", args=(1, 2), out=False)
def _dynamic_update_slice(ct, args, params, out, needs):
    """The operand's cotangent is ct with the window zeroed; the update's is ct's window,
    taken along each axis the update does not span from its clamped start."""
    _, update, starts = args
    g_operand = hal.dynamic_update_slice(ct, hal.zeros_like(update), starts) \
        if needs[0] else None
    g_update = ct if needs[1] else None
    for a, (n, u) in enumerate(zip(ct.shape, update.shape)):
        if g_update is not None and n != u:
            first = hal.clip(starts[a], 0, n - u)
            rows = first + hal.arange(u, dtype=starts.dtype, device=starts.device)
            g_update = hal.take(g_update, rows, axis=a)
    return (g_operand, g_update, None)


# -- complex parts ----------------------------------------------------------------------
@vjp_rule("real", args=False, out=False)
def _real(ct, args, params, out, needs):
    return (hal.astype(ct, args[0].dtype),)


@vjp_rule("imag", args=False, out=False)
def _imag(ct, args, params, out, needs):
    return (hal.astype(ct, args[0].dtype) * -1j,)


@vjp_rule("conj", args=False, out=False)
def _conj(ct, args, params, out, needs):
    return (hal.conj(ct),)


@vjp_rule("complex", args=False, out=False)
def _complex(ct, args, params, out, needs):
    re, im = args
    return (unbroadcast(hal.real(ct), re.shape) if needs[0] else None,
            unbroadcast(-hal.imag(ct), im.shape) if needs[1] else None)


# -- FFT (the DFT matrix is symmetric, so under the bilinear pairing it is its transpose) -
_FLIP = {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}


@vjp_rule("fftn", args=False, out=False)
def _fftn(ct, args, params, out, needs):
    return (hal.fft.fftn(ct, axes=params["axes"], norm=params.get("norm")),)


@vjp_rule("ifftn", args=False, out=False)
def _ifftn(ct, args, params, out, needs):
    return (hal.fft.ifftn(ct, axes=params["axes"], norm=params.get("norm")),)


@vjp_rule("rfftn", args=False, out=False)
def _rfftn(ct, args, params, out, needs):
    x = args[0]
    axes = tuple(params["axes"])
    last = axes[-1] % x.ndim
    full = _pad_to(ct, last, 0, x.shape[last] - ct.shape[last])
    return (hal.real(hal.fft.fftn(full, axes=axes, norm=params.get("norm"))),)


@vjp_rule("irfftn", args=False, out=False)
def _irfftn(ct, args, params, out, needs):
    x = args[0]
    axes = tuple(params["axes"])
    last, n = axes[-1] % x.ndim, params["n"]
    m = x.shape[last]
    spectrum = hal.conj(hal.fft.rfftn(ct, axes=axes, norm=_FLIP[params.get("norm")]))
    weight = np.full(m, 2.0, dtype=dt.real_dtype(x.dtype))
    weight[0] = 1.0
    if n % 2 == 0:
        weight[-1] = 1.0
    shape = [1] * x.ndim
    shape[last] = m
    return (spectrum * hal.asarray(weight.reshape(shape), device=x.device),)


# -- collectives: conjugate pairs (hal/collectives.py; Megatron's f and g) ----------------------
@vjp_rule("all_reduce", args=False, out=False)
def _all_reduce(ct, args, params, out, needs):
    return (hal.collectives.copy_to_group(ct, group=params["group"]),)


@vjp_rule("copy_to_group", args=False, out=False)
def _copy_to_group(ct, args, params, out, needs):
    return (hal.collectives.all_reduce(ct, group=params["group"]),)


@vjp_rule("all_gather", args=False, out=False)
def _all_gather(ct, args, params, out, needs):
    return (hal.collectives.split_to_group(ct, group=params["group"], axis=params["axis"]),)


@vjp_rule("gather_to_group", args=False, out=False)
def _gather_to_group(ct, args, params, out, needs):
    return (hal.collectives.reduce_scatter(ct, group=params["group"], axis=params["axis"]),)


@vjp_rule("split_to_group", "reduce_scatter", args=False, out=False)
def _split_to_group(ct, args, params, out, needs):
    return (hal.collectives.all_gather(ct, group=params["group"], axis=params["axis"]),)


@vjp_rule("all_to_all", args=False, out=False)
def _all_to_all(ct, args, params, out, needs):
    return (hal.collectives.all_to_all(ct, group=params["group"], split_axis=params["concat_axis"],
                                       concat_axis=params["split_axis"]),)
