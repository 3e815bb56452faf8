"""Matrix products and the nn composites, each one fused kernel: matmul over a packed
weight, linear (+bias +activation in the matmul's epilogue), softmax, log_softmax,
layer_norm and scaled dot-product attention. Half precision computes in float32.

The weight is packed into [N/32, K, 32] column panels inside the kernel (block "pack"),
so the inner loop reads it contiguously; schedule.py tiles the block named "matmul".
"""

from __future__ import annotations

import math

from tvm import te, tirx

from hal import dtypes as dt
from hal import shapes

from . import te_util as tu
from .device import Array
from .schedule import TILE_COLS
from .table import kernels

_FLOATS = dt.REALS  # float16, bfloat16, float32, float64


def _packed(b: te.Tensor, acc: str, offset: int = 0) -> te.Tensor:
    """B [..., K, N] - offset as column panels [..., ceil(N/32), K, 32], zero past N, in acc."""
    *batch, k, n = (int(s) for s in b.shape)
    panels = -(-n // TILE_COLS)

    def value(*i):
        *bi, jo, kk, ji = i
        j = jo * TILE_COLS + ji
        inside = b(*bi, kk, tirx.min(j, n - 1)).astype(acc)
        if offset:
            inside = inside - tirx.const(offset, acc)
        return tirx.Select(j < n, inside, tirx.const(0, acc))

    return te.compute((*batch, panels, k, TILE_COLS), value, name="pack")


def product(a: te.Tensor, b: te.Tensor, acc: str, a_offset: int = 0,
            b_offset: int = 0) -> te.Tensor:
    """The (batched, broadcast) product (A - a_offset) [..., M, K] @ (B - b_offset)
    [..., K, N] accumulated in acc."""
    *abatch, m, k = (int(s) for s in a.shape)
    *bbatch, _, n = (int(s) for s in b.shape)
    batch = tu.broadcast_shape(abatch, bbatch)
    if k == 0:  # an empty sum: TE would leave the output uninitialised
        return te.compute((*batch, m, n), lambda *i: tirx.const(0, acc), name="zeros")
    bp = _packed(b, acc, b_offset)
    r = te.reduce_axis((0, k), name="k")

    def value(*i):
        *bi, row, col = i
        ai = _batch_index(abatch, bi, batch)
        bj = _batch_index(bbatch, bi, batch)
        left = a(*ai, row, r).astype(acc)
        if a_offset:
            left = left - tirx.const(a_offset, acc)
        return te.sum(left *
                      bp(*bj, col // TILE_COLS, r, col % TILE_COLS), axis=r)

    return te.compute((*batch, m, n), value, name="matmul")


def _batch_index(own: list, index: list, batch: tuple) -> list:
    offset = len(batch) - len(own)
    return [0 if n == 1 and batch[offset + i] != 1 else index[offset + i]
            for i, n in enumerate(own)]


def matmul(a: te.Tensor, b: te.Tensor) -> te.Tensor:
    """A @ B for 2-d and batched operands (1-d ones are viewed as rows/columns first)."""
    d = str(a.dtype)
    acc = tu.compute_type(d)
    result = product(a, b, acc)
    if acc == d:
        return result
    return te.compute(result.shape, lambda *i: result(*i).astype(d), name="out")


def linear(x: te.Tensor, w: te.Tensor, *bias: te.Tensor, activation: str | None) -> te.Tensor:
    """activation(x @ w + bias) with the bias and activation in the matmul's epilogue.

    In float32 the tanh of tanh-GELU is TVM's fast_tanh (a rational approximation, a few
    ulp off): LLVM turns tanh into one scalar libm call per element, which kept the
    epilogue at 2x the cost of the whole product at 512^3."""
    d = str(x.dtype)
    acc = tu.compute_type(d)
    result = product(x, w, acc)

    def biased(*i):
        y = result(*i)
        return y + bias[0](i[-1]).astype(acc) if bias else y

    if activation == "gelu_tanh" and acc == "float32":
        from tvm import topi

        c = tirx.const
        inner = te.compute(result.shape, lambda *i: c(tu.SQRT_2_OVER_PI, acc) * (
            biased(*i) + c(0.044715, acc) * biased(*i) * biased(*i) * biased(*i)),
            name="inner")
        t = topi.fast_tanh(inner)
        return te.compute(result.shape, lambda *i: (c(0.5, acc) * biased(*i) * (
            c(1, acc) + t(*i))).astype(d), name="out")
    return te.compute(result.shape, lambda *i: tu.activation(biased(*i), activation).astype(d),
                      name="out")


def as_matrix(device, a: Array, column: bool) -> Array:
    """A 1-d operand as a 1 x K row or K x 1 column (a view)."""
    return device.view(a, (a.shape[0], 1) if column else (1, a.shape[0]))


@kernels.register("matmul", _FLOATS)
def _matmul(device, a, b, *, out_shape, out_dtype):
    a2 = as_matrix(device, a, False) if len(a.shape) == 1 else a
    b2 = as_matrix(device, b, True) if len(b.shape) == 1 else b
    return device.view(device.run("matmul", matmul, [a2, b2]), out_shape)


@kernels.register("linear", _FLOATS)
def _linear(device, x, weight, bias=None, *, activation=None, out_shape, out_dtype):
    rows = math.prod(x.shape[:-1]) if len(x.shape) > 1 else 1
    x2 = device.view(x, (rows, x.shape[-1]))
    inputs = [x2, weight] + ([bias] if bias is not None else [])
    return device.view(device.run("linear", linear, inputs, activation=activation), out_shape)


def softmax(x: te.Tensor, *, axis: int, log: bool) -> te.Tensor:
    """softmax (or log_softmax) along one axis: max, exp, sum and normalise in one kernel."""
    d = str(x.dtype)
    acc = tu.compute_type(d)
    shape = tuple(int(n) for n in x.shape)

    def along(i, r):
        return (*i[:axis], r, *i[axis + 1:])

    r1 = te.reduce_axis((0, shape[axis]), name="r1")
    peak = te.compute((*shape[:axis], 1, *shape[axis + 1:]),
                      lambda *i: te.max(x(*along(i, r1)).astype(acc), axis=r1), name="peak")

    def shifted(*i):
        return x(*i).astype(acc) - peak(*along(i, 0))

    r2 = te.reduce_axis((0, shape[axis]), name="r2")
    total = te.compute(peak.shape, lambda *i: te.sum(te.exp(shifted(*along(i, r2))), axis=r2),
                       name="total")
    if log:
        return te.compute(shape, lambda *i: (shifted(*i) - te.log(total(*along(i, 0))))
                          .astype(d), name="out")
    return te.compute(shape, lambda *i: (te.exp(shifted(*i)) / total(*along(i, 0))).astype(d),
                      name="out")


def _register_softmax(op: str) -> None:
    @kernels.register(op, _FLOATS)
    def kernel(device, x, *, axis=-1):
        if len(x.shape) == 0:
            x1 = device.view(x, (1,))
            out = device.run(op, softmax, [x1], axis=0, log=op == "log_softmax")
            return device.view(out, ())
        a = shapes.axis(op, axis, len(x.shape))
        return device.run(op, softmax, [x], axis=a, log=op == "log_softmax")


for _op in ("softmax", "log_softmax"):
    _register_softmax(_op)


def layer_norm(x: te.Tensor, *params: te.Tensor, eps: float, weight: bool,
               bias: bool) -> te.Tensor:
    """(x - mean) / sqrt(var + eps) * weight + bias over the last axis, one kernel."""
    d = str(x.dtype)
    acc = tu.compute_type(d)
    shape = tuple(int(n) for n in x.shape)
    n = shape[-1]
    rows = shape[:-1]
    inv = tirx.const(1 / n, acc)
    r1 = te.reduce_axis((0, n), name="r1")
    total = te.compute(rows, lambda *i: te.sum(x(*i, r1).astype(acc), axis=r1), name="total")
    r2 = te.reduce_axis((0, n), name="r2")
    squares = te.compute(rows, lambda *i: te.sum(
        _sq(x(*i, r2).astype(acc) - total(*i) * inv), axis=r2), name="squares")
    w = params[0] if weight else None
    b = params[int(weight)] if bias else None

    def value(*i):
        row = i[:-1]
        y = (x(*i).astype(acc) - total(*row) * inv) / te.sqrt(squares(*row) * inv +
                                                              tirx.const(eps, acc))
        if w is not None:
            y = y * w(i[-1]).astype(acc)
        if b is not None:
            y = y + b(i[-1]).astype(acc)
        return y.astype(d)

    return te.compute(shape, value, name="out")


def _sq(v):
    return v * v


@kernels.register("layer_norm", _FLOATS)
def _layer_norm(device, x, weight=None, bias=None, *, eps=1e-5):
    params = [p for p in (weight, bias) if p is not None]
    return device.run("layer_norm", layer_norm, [x, *params], eps=float(eps),
                      weight=weight is not None, bias=bias is not None)


def attention(q: te.Tensor, k: te.Tensor, v: te.Tensor, *, causal: bool,
              scale: float) -> te.Tensor:
    """softmax(q k^T * scale, masked) v in one kernel: scores, row max, exp-sum, product."""
    d = str(q.dtype)
    acc = tu.compute_type(d)
    *qb, lq, e = (int(s) for s in q.shape)
    *kb, lk, _ = (int(s) for s in k.shape)
    *vb, _, ev = (int(s) for s in v.shape)
    batch = tu.broadcast_shape(qb, kb, vb)
    re = te.reduce_axis((0, e), name="re")

    def dot(*i):
        *bi, row, col = i
        return te.sum(q(*_batch_index(qb, bi, batch), row, re).astype(acc) *
                      k(*_batch_index(kb, bi, batch), col, re).astype(acc), axis=re)

    dots = te.compute((*batch, lq, lk), dot, name="dots")

    def score(*i):
        s = dots(*i) * tirx.const(scale, acc)
        if causal:
            s = tirx.Select(i[-1] <= i[-2] + (lk - lq), s, tirx.const(-math.inf, acc))
        return s

    rm = te.reduce_axis((0, lk), name="rm")
    peak = te.compute((*batch, lq), lambda *i: te.max(score(*i, rm), axis=rm), name="peak")

    def weight(*i):
        return te.exp(score(*i) - peak(*i[:-1]))

    rs = te.reduce_axis((0, lk), name="rs")
    total = te.compute(peak.shape, lambda *i: te.sum(weight(*i, rs), axis=rs), name="total")
    rv = te.reduce_axis((0, lk), name="rv")

    def mix(*i):
        *bi, row, col = i
        return te.sum(weight(*bi, row, rv) * v(*_batch_index(vb, bi, batch), rv, col)
                      .astype(acc), axis=rv)

    mixed = te.compute((*batch, lq, ev), mix, name="mixed")
    return te.compute(mixed.shape, lambda *i: (mixed(*i) / total(*i[:-1])).astype(d),
                      name="out")


@kernels.register("scaled_dot_product_attention", _FLOATS)
def _attention(device, q, k, v, *, causal=False, scale=None):
    s = (1 / math.sqrt(q.shape[-1])) if scale is None else float(scale)
    return device.run("scaled_dot_product_attention", attention, [q, k, v],
                      causal=bool(causal), scale=s)
