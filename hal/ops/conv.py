"""Convolution and pooling over 1 to 3 spatial axes, all composites: conv (im2col from
strided slices and a matmul), conv_transpose (conv's input gradient), max_pool and avg_pool
(a fold over strided slices), batch_norm (inference with running statistics). Backends
with a library convolution register kernels for them.

Layouts: "channels_first" (N, C, *spatial), ONNX's and PyTorch's, the default, or
"channels_last" (N, *spatial, C). A conv weight is (out_channels, in_channels / groups,
*kernel) in either layout. `padding` is an int (every side), one int per spatial axis
(both sides) or one (before, after) pair per spatial axis. Output size per axis:
(size + before + after - dilation * (kernel - 1) - 1) // stride + 1 (floor, no ceil mode).
conv_transpose's weight is (in_channels, out_channels / groups, *kernel), as ONNX's and
PyTorch's, and its output size (size - 1) * stride - before - after + dilation * (kernel -
1) + output_padding + 1, output_padding (extra elements at the end) below the stride.
avg_pool's count_include_pad=False (ONNX's default) divides each window by the number of
its elements inside the input; True divides by the whole kernel size (PyTorch's default).
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ..runtime import dtypes as dt
from ..runtime.errors import ShapeError
from . import arguments
from .spec import COMPOSITE, LOOSE, declare, lift

LAYOUTS = ("channels_first", "channels_last")


# -- arguments ------------------------------------------------------------------------------
def spatial_rank(op: str, x, layout: str) -> int:
    """The number of spatial axes of x (1 to 3); ShapeError for any other rank or layout."""
    if layout not in LAYOUTS:
        raise ShapeError(f"{op}: layout {layout!r} is not one of {', '.join(LAYOUTS)}")
    if not 3 <= x.ndim <= 5:
        raise ShapeError(f"{op}: input of shape {tuple(x.shape)} must be 3-d to 5-d (batch, "
                         "channels and 1 to 3 spatial axes); add a batch axis of 1 with "
                         "hal.reshape for a single example")
    return x.ndim - 2


def per_axis(op: str, name: str, value, n: int, minimum: int) -> tuple[int, ...]:
    """An int or n ints, each at least `minimum`, as a tuple of n ints."""
    items = (value,) * n if isinstance(value, (int, np.integer)) else tuple(value) \
        if isinstance(value, (tuple, list)) else None
    if items is None or len(items) != n:
        raise ShapeError(f"{op}: {name} {value!r} must be an int or {n} ints (one per spatial "
                         "axis)")
    return tuple(arguments.integer(op, name, v, minimum=minimum) for v in items)


def pads(op: str, padding, n: int) -> tuple[tuple[int, int], ...]:
    """padding (an int, n ints or n (before, after) pairs) as n (before, after) pairs >= 0."""
    if isinstance(padding, (tuple, list)) and padding and \
            all(isinstance(p, (tuple, list)) for p in padding):
        if len(padding) != n or any(len(p) != 2 for p in padding):
            raise ShapeError(f"{op}: padding {padding!r} must hold {n} (before, after) pairs")
        return tuple((arguments.integer(op, "padding", lo, minimum=0),
                      arguments.integer(op, "padding", hi, minimum=0)) for lo, hi in padding)
    return tuple((p, p) for p in per_axis(op, "padding", padding, n, 0))


def channels_first(x, layout: str):
    """x (numpy) in the channels-first layout."""
    return x if layout == "channels_first" else np.moveaxis(x, -1, 1)


def from_channels_first(y, layout: str):
    """y (numpy, channels first) in the given layout."""
    return y if layout == "channels_first" else np.moveaxis(y, 1, -1)


def _split(shape, layout):
    """(batch, channels, spatial sizes) of a shape in a layout."""
    if layout == "channels_first":
        return shape[0], shape[1], tuple(shape[2:])
    return shape[0], shape[-1], tuple(shape[1:-1])


def _join(n, c, spatial, layout):
    return (n, c, *spatial) if layout == "channels_first" else (n, *spatial, c)


def out_sizes(op: str, shape, kernel, stride, padding, dilation) -> tuple[int, ...]:
    """The output's spatial sizes; ShapeError where a (dilated) kernel exceeds the padded
    input."""
    sizes = []
    for n, k, s, (lo, hi), d in zip(shape, kernel, stride, padding, dilation, strict=True):
        extent = d * (k - 1) + 1
        if n + lo + hi < extent:
            raise ShapeError(
                f"{op}: kernel {tuple(kernel)} (dilation {tuple(dilation)}) is larger than the "
                f"padded input: spatial size {tuple(shape)} with padding {tuple(padding)}; pad "
                "more, or use a smaller kernel or dilation")
        sizes.append((n + lo + hi - extent) // s + 1)
    return tuple(sizes)


# -- conv -------------------------------------------------------------------------------------
def _conv_meta(x, weight, bias=None, *, stride=1, padding=0, dilation=1, groups=1,
               layout="channels_first"):
    r = spatial_rank("conv", x, layout)
    if weight.ndim != x.ndim:
        raise ShapeError(f"conv: weight of shape {tuple(weight.shape)} must be {x.ndim}-d "
                         f"(out_channels, in_channels / groups, *kernel) for input "
                         f"{tuple(x.shape)}")
    g = arguments.integer("conv", "groups", groups, minimum=1)
    n, c, spatial = _split(tuple(x.shape), layout)
    o = weight.shape[0]
    if c % g or o % g or weight.shape[1] * g != c:
        raise ShapeError(
            f"conv: input of shape {tuple(x.shape)} ({layout}: {c} channels) and weight "
            f"{tuple(weight.shape)} do not fit groups={g}: in and out channels must divide by "
            f"groups and weight.shape[1] must be channels / groups ({c} / {g})")
    if bias is not None and tuple(bias.shape) != (o,):
        raise ShapeError(f"conv: bias of shape {tuple(bias.shape)} must be ({o},), one per "
                         "output channel")
    sizes = out_sizes("conv", spatial, weight.shape[2:], per_axis("conv", "stride", stride, r, 1),
                      pads("conv", padding, r), per_axis("conv", "dilation", dilation, r, 1))
    return _join(n, o, sizes, layout), x.dtype


def windows(x, kernel, stride, padding, dilation, value=0):
    """The sliding windows of a channels-first x (numpy): (N, C, *out, *kernel), x padded
    with `value` (a view where no padding is needed)."""
    r = len(kernel)
    if any(lo or hi for lo, hi in padding):
        x = np.pad(x, ((0, 0), (0, 0), *padding), constant_values=value)
    extent = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation, strict=True))
    view = sliding_window_view(x, extent, axis=tuple(range(2, 2 + r)))
    step = (slice(None), slice(None), *(slice(None, None, s) for s in stride),
            *(slice(None, None, d) for d in dilation))
    return view[step]


def conv_reference(x, weight, bias=None, *, stride=1, padding=0, dilation=1, groups=1,
                   layout="channels_first"):
    """Cross-correlation as im2col + numpy BLAS: per image and group the weight (Og, Cg *
    kernel) times the patches (Cg * kernel, out positions), which gives the channels-first
    output without a transpose (2x faster than patches-times-weight on ResNet-50 layers)."""
    x = channels_first(x, layout)
    r = x.ndim - 2
    kernel = weight.shape[2:]
    n, c = x.shape[:2]
    o = weight.shape[0]
    w = weight.reshape(groups, o // groups, (c // groups) * math.prod(kernel))
    stride = per_axis("conv", "stride", stride, r, 1)
    pairs = pads("conv", padding, r)
    if set(kernel) | set(stride) == {1} and not any(lo or hi for lo, hi in pairs):
        cols = x.reshape(n, groups, c // groups, -1)  # a 1x1 convolution: no patches
        out = x.shape[2:]
    else:
        win = windows(x, kernel, stride, pairs, per_axis("conv", "dilation", dilation, r, 1))
        out = win.shape[2:2 + r]
        order = (0, 1, *range(2 + r, 2 + 2 * r), *range(2, 2 + r))  # kernel before out
        cols = win.transpose(order).reshape(n, groups, w.shape[2], math.prod(out))
    y = np.matmul(w, cols).reshape(n, o, *out)
    if bias is not None:
        y = y + bias.reshape(-1, *(1,) * r)
    return from_channels_first(y, layout)


def _conv_bound(x, weight, bias=None, **params):
    x, weight, bias = (None if a is None else np.abs(lift(a)) for a in (x, weight, bias))
    return conv_reference(x, weight, bias, **params) + 1


# -- conv_transpose -----------------------------------------------------------------------
def transpose_arguments(r: int, params: dict) -> tuple:
    """(stride, padding pairs, dilation, output_padding) of conv_transpose's params."""
    stride = per_axis("conv_transpose", "stride", params.get("stride", 1), r, 1)
    extra = per_axis("conv_transpose", "output_padding", params.get("output_padding", 0), r, 0)
    if any(e >= s for e, s in zip(extra, stride, strict=True)):
        raise ShapeError(f"conv_transpose: output_padding {extra} must be smaller than the "
                         f"stride {stride} on every axis")
    return (stride, pads("conv_transpose", params.get("padding", 0), r),
            per_axis("conv_transpose", "dilation", params.get("dilation", 1), r, 1), extra)


def _conv_transpose_meta(x, weight, bias=None, *, stride=1, padding=0, output_padding=0,
                         dilation=1, groups=1, layout="channels_first"):
    r = spatial_rank("conv_transpose", x, layout)
    if weight.ndim != x.ndim:
        raise ShapeError(f"conv_transpose: weight of shape {tuple(weight.shape)} must be "
                         f"{x.ndim}-d (in_channels, out_channels / groups, *kernel) for input "
                         f"{tuple(x.shape)}")
    g = arguments.integer("conv_transpose", "groups", groups, minimum=1)
    n, c, spatial = _split(tuple(x.shape), layout)
    if weight.shape[0] != c or c % g:
        raise ShapeError(f"conv_transpose: input of shape {tuple(x.shape)} ({layout}: {c} "
                         f"channels) and weight {tuple(weight.shape)} do not fit groups={g}: "
                         "weight.shape[0] must be the input's channels, divisible by groups")
    o = weight.shape[1] * g
    if bias is not None and tuple(bias.shape) != (o,):
        raise ShapeError(f"conv_transpose: bias of shape {tuple(bias.shape)} must be ({o},), "
                         "one per output channel")
    stride, pairs, dil, extra = transpose_arguments(r, {
        "stride": stride, "padding": padding, "dilation": dilation,
        "output_padding": output_padding})
    sizes = tuple((m - 1) * s - lo - hi + d * (k - 1) + e + 1 for m, s, (lo, hi), d, k, e in
                  zip(spatial, stride, pairs, dil, weight.shape[2:], extra, strict=True))
    if min(sizes, default=1) < 1 or min(spatial, default=1) < 1:
        raise ShapeError(f"conv_transpose: input {tuple(x.shape)} with padding {pairs} gives "
                         f"output size {sizes}; pad less")
    return _join(n, o, sizes, layout), x.dtype


def _conv_transpose_ref(x, weight, bias=None, *, stride=1, padding=0, output_padding=0,
                        dilation=1, groups=1, layout="channels_first"):
    """Each input element scatters weight * itself into the output (one tensordot per kernel
    tap), then the padding is cropped."""
    x = channels_first(x, layout)
    r = x.ndim - 2
    stride, pairs, dil, extra = transpose_arguments(r, {
        "stride": stride, "padding": padding, "dilation": dilation,
        "output_padding": output_padding})
    n, c = x.shape[:2]
    kernel = weight.shape[2:]
    og = weight.shape[1]
    full = tuple((m - 1) * s + d * (k - 1) + e + 1 for m, s, d, k, e in
                 zip(x.shape[2:], stride, dil, kernel, extra, strict=True))
    y = np.zeros((n, groups, og, *full), dtype=np.result_type(x, weight))
    xg = x.reshape(n, groups, c // groups, *x.shape[2:])
    wg = weight.reshape(groups, c // groups, og, *kernel)
    for tap in np.ndindex(*kernel):
        part = np.einsum("ngc...,gco->ngo...", xg, wg[(slice(None),) * 3 + tap])
        at = tuple(slice(d * t, d * t + s * (m - 1) + 1, s) for d, t, s, m in
                   zip(dil, tap, stride, x.shape[2:], strict=True))
        y[(slice(None),) * 3 + at] += part
    y = y.reshape(n, groups * og, *full)
    y = y[(slice(None), slice(None), *(slice(lo, f - hi) for (lo, hi), f in
                                       zip(pairs, full, strict=True)))]
    if bias is not None:
        y = y + bias.reshape(-1, *(1,) * r)
    return from_channels_first(np.ascontiguousarray(y), layout)


def _conv_transpose_bound(x, weight, bias=None, **params):
    x, weight, bias = (None if a is None else np.abs(lift(a)) for a in (x, weight, bias))
    return _conv_transpose_ref(x, weight, bias, **params) + 1


# -- pooling ----------------------------------------------------------------------------------
def _pool_shape(name, x, kernel, stride, padding, layout):
    r = spatial_rank(name, x, layout)
    k, s, p = pool_arguments(name, r, kernel, stride, padding)
    if any(lo >= kk or hi >= kk for (lo, hi), kk in zip(p, k, strict=True)):
        raise ShapeError(f"{name}: padding {p} must be smaller than the kernel {k} on each "
                         "side (a window of padding alone has no value)")
    n, c, spatial = _split(tuple(x.shape), layout)
    return _join(n, c, out_sizes(name, spatial, k, s, p, (1,) * r), layout), x.dtype


def _max_pool_meta(x, *, kernel, stride=None, padding=0, layout="channels_first"):
    return _pool_shape("max_pool", x, kernel, stride, padding, layout)


def _avg_pool_meta(x, *, kernel, stride=None, padding=0, count_include_pad=False,
                   layout="channels_first"):
    arguments.flag("avg_pool", "count_include_pad", count_include_pad)
    return _pool_shape("avg_pool", x, kernel, stride, padding, layout)


def pool_arguments(name: str, r: int, kernel, stride, padding) -> tuple:
    """(kernel, stride, padding pairs) of a pool over r spatial axes (stride None: the
    kernel)."""
    k = per_axis(name, "kernel", kernel, r, 1)
    s = k if stride is None else per_axis(name, "stride", stride, r, 1)
    return k, s, pads(name, padding, r)


def _over_taps(fn, win, r: int):
    """fn (np.maximum, np.add) folded over the kernel taps of windows (..., *kernel): 6x
    faster than a reduction over the window axes, which strides through memory."""
    taps = (win[(..., *tap)] for tap in np.ndindex(*win.shape[-r:]))
    return functools.reduce(fn, taps)


def _max_pool_ref(x, *, kernel, stride=None, padding=0, layout="channels_first"):
    x = channels_first(x, layout)
    k, s, p = pool_arguments("max_pool", x.ndim - 2, kernel, stride, padding)
    y = _over_taps(np.maximum, windows(x, k, s, p, (1,) * len(k), value=-np.inf), len(k))
    return from_channels_first(np.array(y, order="C"), layout)  # a 1-tap view of x: copied


def _avg_pool_ref(x, *, kernel, stride=None, padding=0, count_include_pad=False,
                  layout="channels_first"):
    x = channels_first(x, layout)
    k, s, p = pool_arguments("avg_pool", x.ndim - 2, kernel, stride, padding)
    total = _over_taps(np.add, windows(x, k, s, p, (1,) * len(k)), len(k))
    if count_include_pad:
        count = math.prod(k)
    else:
        ones = np.ones((1, 1, *x.shape[2:]), dtype=x.dtype)
        count = _over_taps(np.add, windows(ones, k, s, p, (1,) * len(k)), len(k))
    return from_channels_first(np.ascontiguousarray(total / count), layout)


# -- batch_norm -------------------------------------------------------------------------------
def _batch_norm_meta(x, mean, var, weight=None, bias=None, *, eps=1e-5,
                     layout="channels_first"):
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not eps > 0:
        raise ShapeError(f"batch_norm: eps must be a positive number, got {eps!r}")
    if layout not in LAYOUTS:
        raise ShapeError(f"batch_norm: layout {layout!r} is not one of {', '.join(LAYOUTS)}")
    if x.ndim < 2:
        raise ShapeError(f"batch_norm: input of shape {tuple(x.shape)} needs a batch and a "
                         "channel axis (at least 2-d)")
    c = x.shape[1] if layout == "channels_first" else x.shape[-1]
    for name, p in (("mean", mean), ("var", var), ("weight", weight), ("bias", bias)):
        if p is not None and tuple(p.shape) != (c,):
            raise ShapeError(f"batch_norm: {name} of shape {tuple(p.shape)} must be ({c},), one "
                             f"per channel of the input {tuple(x.shape)} ({layout})")
    return tuple(x.shape), x.dtype


def channel_shape(ndim: int, layout: str) -> tuple[int, ...]:
    """The shape a per-channel (C,) vector takes to broadcast against an ndim-d input."""
    return (-1, *(1,) * (ndim - 2)) if layout == "channels_first" else (-1,)


def _batch_norm_ref(x, mean, var, weight=None, bias=None, *, eps=1e-5,
                    layout="channels_first"):
    shape = channel_shape(x.ndim, layout)
    y = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
    if weight is not None:
        y = y * weight.reshape(shape)
    return y if bias is None else y + bias.reshape(shape)


declare("conv", COMPOSITE, "conv", dt.REALS, conv_reference, _conv_meta, promote=(0, 1, 2),
        tolerance=LOOSE, bound=_conv_bound)
declare("conv_transpose", COMPOSITE, "conv", dt.REALS, _conv_transpose_ref,
        _conv_transpose_meta, promote=(0, 1, 2), tolerance=LOOSE, bound=_conv_transpose_bound)
declare("max_pool", COMPOSITE, "pool", dt.REALS, _max_pool_ref, _max_pool_meta)
declare("avg_pool", COMPOSITE, "pool", dt.REALS, _avg_pool_ref, _avg_pool_meta,
        tolerance=LOOSE)
declare("batch_norm", COMPOSITE, "nn", dt.REALS, _batch_norm_ref, _batch_norm_meta,
        promote=(0, 1, 2, 3, 4), tolerance=LOOSE)
