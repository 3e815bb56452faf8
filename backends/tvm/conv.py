"""Convolution and pooling as TE kernels, any of 1 to 3 spatial axes, either layout: conv
(groups, stride, dilation, padding pairs, bias), max_pool and avg_pool. Padding is a
Select on clamped indices (no padded copy). conv is a matrix product over patches read
from x by its packing block; a pool one reduction block, which the default schedule
parallelises over its outer output loops (meta_schedule tunes both like any other).
Half precision accumulates in float32.
"""

from __future__ import annotations

import math

from tvm import te, tirx

from hal import dtypes as dt
from hal.ops import conv as C

from . import te_util as tu
from .linalg import product
from .reduce import nan_reducer
from .table import kernels


def _split(index, layout: str):
    """(batch, channel, spatial indices) of an output index in a layout."""
    if layout == "channels_first":
        return index[0], index[1], list(index[2:])
    return index[0], index[-1], list(index[1:-1])


def _read(x: te.Tensor, n, c, pos, layout: str):
    return x(n, c, *pos) if layout == "channels_first" else x(n, *pos, c)


def _window(sizes, pos):
    """(inside, clamped positions) of input positions that may reach into the padding."""
    inside = tirx.const(True, "bool")
    clamped = []
    for p, size in zip(pos, sizes, strict=True):
        inside = tirx.all(inside, p >= 0, p < size)
        clamped.append(tirx.max(tirx.min(p, size - 1), 0))
    return inside, clamped


def _out_shape(x: te.Tensor, channels: int, sizes, layout: str) -> tuple:
    n = int(x.shape[0])
    return (n, channels, *sizes) if layout == "channels_first" else (n, *sizes, channels)


def convolution(x: te.Tensor, w: te.Tensor, *bias: te.Tensor, stride, padding, dilation,
                groups, layout) -> te.Tensor:
    """conv of x by w (+ bias) as a matrix product per image and group: the weight (Og,
    Cg * kernel) times the patches (Cg * kernel, out positions). The patches are never
    stored: the product's packing block reads them from x (linalg.product's register-tiled
    schedule), so the untuned kernel is a tiled GEMM rather than a scalar loop nest."""
    d = str(x.dtype)
    acc = tu.compute_type(d)
    shape = [int(s) for s in x.shape]
    spatial = shape[2:] if layout == "channels_first" else shape[1:-1]
    o, cg, *kernel = (int(s) for s in w.shape)
    og, taps = o // groups, math.prod(kernel)
    sizes = C.out_sizes("conv", spatial, kernel, stride, padding, dilation)
    positions = math.prod(sizes)

    def unflatten(flat, extents):
        index = []
        for e in reversed(extents):
            index.append(flat % e)
            flat = flat // e
        return index[::-1]

    def patch(n, g, row, col):
        tap = unflatten(row % taps, kernel)
        out = unflatten(col, sizes)
        pos = [out[a] * stride[a] + tap[a] * dilation[a] - padding[a][0]
               for a in range(len(kernel))]
        inside, clamped = _window(spatial, pos)
        xv = _read(x, n, g * cg + row // taps, clamped, layout)
        return tirx.Select(inside, xv, tirx.const(0, d))

    def weight(g, r, k):
        return w(g * og + r, k // taps, *unflatten(k % taps, kernel))

    # the product's columns (its 32-wide vector tiles) run along the output positions, or
    # along the output channels where those fill whole tiles and the positions do not
    # (a 1x1 layer of 14x14 positions: 196 columns ran at 3 GFLOP/s, 1024 at 23)
    by_channel = og % 32 == 0 and positions % 32 != 0
    if by_channel:
        cols = te.compute((shape[0], groups, positions, cg * taps),
                          lambda n, g, col, row: patch(n, g, row, col), name="patches")
        weights = te.compute((groups, cg * taps, og), lambda g, k, r: weight(g, r, k),
                             name="weights")
        total = product(cols, weights, acc)
    else:
        cols = te.compute((shape[0], groups, cg * taps, positions), patch, name="patches")
        weights = te.compute((groups, og, cg * taps), weight, name="weights")
        total = product(weights, cols, acc)

    def out(*i):
        n, oc, sp = _split(i, layout)
        flat = sp[0]
        for a in range(1, len(sp)):
            flat = flat * sizes[a] + sp[a]
        g, r = oc // og, oc % og
        y = total(n, g, flat, r) if by_channel else total(n, g, r, flat)
        if bias:
            y = y + bias[0](oc).astype(acc)
        return y.astype(d)

    return te.compute(_out_shape(x, o, sizes, layout), out, name="regroup")


def pooling(x: te.Tensor, *, kind, kernel, stride, padding, count_include_pad,
            layout) -> te.Tensor:
    """max_pool (padding never wins) or avg_pool over each window."""
    d = str(x.dtype)
    acc = tu.compute_type(d)
    shape = [int(s) for s in x.shape]
    spatial = shape[2:] if layout == "channels_first" else shape[1:-1]
    channels = shape[1] if layout == "channels_first" else shape[-1]
    sizes = C.out_sizes(kind, spatial, kernel, stride, padding, (1,) * len(kernel))
    rk = [te.reduce_axis((0, k), name=f"rk{a}") for a, k in enumerate(kernel)]

    def position(out, taps):
        return [out[a] * stride[a] + taps[a] - padding[a][0] for a in range(len(kernel))]

    def value(*i):
        n, c, out = _split(i, layout)
        inside, clamped = _window(spatial, position(out, rk))
        xv = _read(x, n, c, clamped, layout).astype(acc)
        if kind == "max_pool":
            return nan_reducer(True, acc)(
                tirx.Select(inside, xv, tirx.const(float("-inf"), acc)), axis=rk)
        return te.sum(tirx.Select(inside, xv, tirx.const(0, acc)), axis=rk)

    total = te.compute(_out_shape(x, channels, sizes, layout), value, name="pool")
    if kind == "max_pool":
        return te.compute(total.shape, lambda *i: total(*i).astype(d), name="out")

    def count(out):
        """The window's elements inside the input (count_include_pad: all of them)."""
        if count_include_pad:
            return tirx.const(float(math.prod(kernel)), acc)
        n = tirx.const(1.0, acc)
        for a, k in enumerate(kernel):
            lo = out[a] * stride[a] - padding[a][0]
            first, last = tirx.max(lo, 0), tirx.min(lo + k, spatial[a])
            n = n * (last - first).astype(acc)
        return n

    return te.compute(total.shape, lambda *i: (total(*i) / count(_split(i, layout)[2]))
                      .astype(d), name="out")


@kernels.register("conv", dt.REALS)
def _conv(device, x, weight, bias=None, *, stride=1, padding=0, dilation=1, groups=1,
          layout="channels_first"):
    r = len(x.shape) - 2
    return device.run("conv", convolution, [x, weight, *([bias] if bias is not None else [])],
                      stride=C.per_axis("conv", "stride", stride, r, 1),
                      padding=C.pads("conv", padding, r),
                      dilation=C.per_axis("conv", "dilation", dilation, r, 1),
                      groups=int(groups), layout=layout)


def _pool_kernel(kind: str):
    def kernel(device, x, *, kernel, stride=None, padding=0, count_include_pad=False,
               layout="channels_first"):
        r = len(x.shape) - 2
        k = C.per_axis(kind, "kernel", kernel, r, 1)
        s = k if stride is None else C.per_axis(kind, "stride", stride, r, 1)
        return device.run(kind, pooling, [x], kind=kind, kernel=k, stride=s,
                          padding=C.pads(kind, padding, r),
                          count_include_pad=bool(count_include_pad), layout=layout)

    return kernel


kernels.register("max_pool", dt.REALS)(_pool_kernel("max_pool"))
kernels.register("avg_pool", dt.REALS)(_pool_kernel("avg_pool"))
