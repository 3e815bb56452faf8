"""Reductions: sum (integers and bool into int64), max and min (a NaN wins, as in numpy),
and mean, each over any set of axes, with keepdims. Half precision accumulates in float32.
"""

from __future__ import annotations

from tvm import te, tirx

from hal import shapes

from . import te_util as tu
from .table import kernels


def nan_reducer(larger: bool, dtype: str):
    """max/min for floats that propagates NaN (TVM's te.max keeps the other operand)."""
    def combine(a, b):
        pick = te.max(a, b) if larger else te.min(a, b)
        return tirx.Select(te.isnan(a), a, tirx.Select(te.isnan(b), b, pick))

    inf = float("inf")
    return te.comm_reducer(combine, lambda t: tirx.const(-inf if larger else inf, t),
                           name="nanmax" if larger else "nanmin")


def reduction(x: te.Tensor, *, op: str, axes: tuple, keepdims: bool, out: str) -> te.Tensor:
    """sum, max, min or mean of x over `axes` into dtype `out`."""
    src = str(x.dtype)
    shape = [int(n) for n in x.shape]
    red = {a: te.reduce_axis((0, shape[a]), name=f"r{a}") for a in sorted(axes)}
    out_shape = tuple((1 if keepdims else None) if a in axes else n
                      for a, n in enumerate(shape))
    out_shape = tuple(n for n in out_shape if n is not None)
    acc = "float32" if src in tu.HALF else ("int64" if op == "sum" and out == "int64" else src)
    if src == "bool":
        acc = "int64" if op == "sum" else "int8"
    count = 1
    for a in axes:
        count *= shape[a]

    def value(*i):
        index, it = [], iter(i)
        for a in range(len(shape)):
            if a in red:
                if keepdims:
                    next(it)
                index.append(red[a])
            else:
                index.append(next(it))
        v = x(*index).astype(acc)
        if op in ("sum", "mean"):
            return te.sum(v, axis=list(red.values()))
        if "float" in acc:
            return nan_reducer(op == "max", acc)(v, axis=list(red.values()))
        return (te.max if op == "max" else te.min)(v, axis=list(red.values()))

    if count == 0:  # TE would leave the output uninitialised: the empty sum is 0, mean NaN
        empty = tirx.const(float("nan") if op == "mean" else 0, out)
        return te.compute(out_shape, lambda *i: empty, name="out")
    total = te.compute(out_shape, value, name="total")
    if op != "mean" and acc == out:
        return total
    scale = tirx.const(1 / max(count, 1), acc)  # TE allows no arithmetic on a reduction itself
    return te.compute(out_shape, lambda *i: (total(*i) * scale if op == "mean" else total(*i))
                      .astype(out), name="out")


def _register(op: str) -> None:
    @kernels.register(op)
    def kernel(device, x, *, axis=None, keepdims=False, out_shape, out_dtype, **_):
        red = shapes.axes(op, axis, len(x.shape))
        return device.run(op, reduction, [x], op=op, axes=tuple(sorted(red)), keepdims=keepdims,
                          out=out_dtype.name)


for _op in ("sum", "max", "min", "mean"):
    _register(_op)
