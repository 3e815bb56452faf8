"""Convolution, pooling and batch norm: `hal.nn.conv`, `hal.nn.max_pool`, `hal.nn.avg_pool`,
`hal.nn.batch_norm`, `hal.nn.conv_transpose`, their default decompositions (im2col from
strided slices and a batched matmul; folds over strided slices) and their gradients
written in hal ops.

The gradients (`conv_input_grad`, `conv_weight_grad`, `max_pool_grad`, `avg_pool_grad`)
are convolutions themselves, on channels-first tensors: a convolution's input gradient
is the convolution of the stride-dilated cotangent with the flipped, transposed weight
(what a transposed convolution computes); its weight gradient a convolution of the input
by the cotangent with stride and dilation swapped; a pooling window's elements are a
convolution with one-hot kernels. So they run on any backend that has `conv`, and nest.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from . import functions as F
from . import ops
from .dispatch import call, decomposition
from .ops import conv as C
from .tensor import Tensor

_S = {n: ops.spec(n) for n in ("conv", "conv_transpose", "max_pool", "avg_pool", "batch_norm")}


def _tuples(value):
    """Lists as tuples (params stay hashable: hal.jit keys graphs by them)."""
    if isinstance(value, (list, tuple)):
        return tuple(_tuples(v) for v in value)
    return value


def conv(x, weight, bias=None, /, *, stride=1, padding=0, dilation=1, groups: int = 1,
         layout: str = "channels_first") -> Tensor:
    """N-d cross-correlation (1 to 3 spatial axes), as ONNX Conv and torch's convNd.

    x: (N, C, *spatial) channels first, or (N, *spatial, C) with layout="channels_last";
    weight: (out_channels, C / groups, *kernel) in either layout; bias: (out_channels,).
    stride and dilation: an int or one per spatial axis; padding: an int, one per axis or
    one (before, after) pair per axis (zeros).
    """
    return call(_S["conv"], x, weight, bias, stride=_tuples(stride), padding=_tuples(padding),
                dilation=_tuples(dilation), groups=groups, layout=layout)


def conv_transpose(x, weight, bias=None, /, *, stride=1, padding=0, output_padding=0,
                   dilation=1, groups: int = 1, layout: str = "channels_first") -> Tensor:
    """The transposed convolution (conv's input gradient), as ONNX ConvTranspose and
    torch's conv_transposeNd: weight (in_channels, out_channels / groups, *kernel); output
    size (size - 1) * stride - padding + dilation * (kernel - 1) + output_padding + 1 per
    axis, output_padding below the stride."""
    return call(_S["conv_transpose"], x, weight, bias, stride=_tuples(stride),
                padding=_tuples(padding), output_padding=_tuples(output_padding),
                dilation=_tuples(dilation), groups=groups, layout=layout)


def max_pool(x, /, kernel, *, stride=None, padding=0, layout: str = "channels_first") -> Tensor:
    """The maximum over each window (stride defaults to the kernel; padding is -inf)."""
    return call(_S["max_pool"], x, kernel=_tuples(kernel), stride=_tuples(stride),
                padding=_tuples(padding), layout=layout)


def avg_pool(x, /, kernel, *, stride=None, padding=0, count_include_pad: bool = False,
             layout: str = "channels_first") -> Tensor:
    """The mean over each window (stride defaults to the kernel). count_include_pad=False
    (ONNX's default) divides by the elements of the window inside the input, True by the
    kernel's size (PyTorch's default)."""
    return call(_S["avg_pool"], x, kernel=_tuples(kernel), stride=_tuples(stride),
                padding=_tuples(padding), count_include_pad=count_include_pad, layout=layout)


def batch_norm(x, mean, var, /, weight=None, bias=None, *, eps: float = 1e-5,
               layout: str = "channels_first") -> Tensor:
    """Inference batch norm: (x - mean) / sqrt(var + eps) * weight + bias per channel, with
    running statistics mean and var of shape (C,)."""
    return call(_S["batch_norm"], x, mean, var, weight, bias, eps=eps, layout=layout)


def _in_float32(fn):
    """A decomposition of half-precision operands computed in float32, rounded once (as the
    reference computes them: a half-precision matmul would round every partial sum)."""
    def run(x, *args, **params):
        if x.dtype not in ops.HALF:
            return fn(x, *args, **params)
        lifted = [None if a is None else F.astype(a, "float32") for a in (x, *args)]
        return F.astype(fn(*lifted, **params), x.dtype)

    return run


def _taps(x: Tensor, kernel, stride, dilation, out) -> list[Tensor]:
    """For each kernel tap, the (N, C, *out) elements of a channels-first x it reads."""
    lead = ((0, 1, x.shape[0]), (0, 1, x.shape[1]))
    return [F.slice(x, (*lead, *((t * d, s, m) for t, d, s, m in
                                 zip(tap, dilation, stride, out, strict=True))))
            for tap in np.ndindex(*kernel)]


@decomposition("conv")
@_in_float32
def _conv(x, weight, bias=None, *, stride=1, padding=0, dilation=1, groups=1,
          layout="channels_first"):
    """im2col from strided slices, then one batched matmul per group (cuBLAS on a GPU)."""
    xf = to_channels_first(x, layout)
    kernel = weight.shape[2:]
    s, pairs, d, _ = conv_arguments(len(kernel), {
        "stride": stride, "padding": padding, "dilation": dilation})
    if any(lo or hi for lo, hi in pairs):
        xf = F.pad(xf, ((0, 0), (0, 0), *pairs))
    out = C.out_sizes("conv", xf.shape[2:], kernel, s, ((0, 0),) * len(kernel), d)
    n, c = xf.shape[:2]
    o, taps = weight.shape[0], math.prod(kernel)
    patches = F.reshape(F.stack(_taps(xf, kernel, s, d, out), axis=2),
                        (n, groups, (c // groups) * taps, math.prod(out)))
    w = F.reshape(weight, (groups, o // groups, (c // groups) * taps))
    y = F.reshape(F.matmul(w, patches), (n, o, *out))
    if bias is not None:
        y = y + F.reshape(bias, C.channel_shape(y.ndim, "channels_first"))
    return from_channels_first(y, layout)


def _pool_decomposition(kind: str):
    @_in_float32
    def pool(x, *, kernel, stride=None, padding=0, count_include_pad=False,
             layout="channels_first"):
        xf = to_channels_first(x, layout)
        k, s, pairs = C.pool_arguments(kind, xf.ndim - 2, kernel, stride, padding)
        r = len(k)
        padded = F.pad(xf, ((0, 0), (0, 0), *pairs),
                       value=-math.inf if kind == "max_pool" else 0) \
            if any(lo or hi for lo, hi in pairs) else xf
        out = C.out_sizes(kind, xf.shape[2:], k, s, pairs, (1,) * r)
        taps = _taps(padded, k, s, (1,) * r, out)
        y = functools.reduce(F.maximum if kind == "max_pool" else F.add, taps)
        if kind == "avg_pool":
            counts = avg_pool_counts(xf.shape[2:], k, s, pairs, count_include_pad)
            y = y / (counts if not isinstance(counts, np.ndarray) else
                     Tensor.from_host(counts.astype(y.dtype), y.device))
        if len(taps) == 1 and kind == "max_pool":
            y = y * 1  # a one-tap window is a strided view of x; an op's result is its own
        return from_channels_first(y, layout)

    return pool


decomposition("max_pool")(_pool_decomposition("max_pool"))
decomposition("avg_pool")(_pool_decomposition("avg_pool"))


@decomposition("batch_norm")
def _batch_norm(x, mean, var, weight=None, bias=None, *, eps=1e-5, layout="channels_first"):
    shape = C.channel_shape(x.ndim, layout)
    scale = 1 / F.sqrt(F.reshape(var, shape) + eps)
    if weight is not None:
        scale = scale * F.reshape(weight, shape)
    y = (x - F.reshape(mean, shape)) * scale
    return y if bias is None else y + F.reshape(bias, shape)


@decomposition("conv_transpose")
def _conv_transpose(x, weight, bias=None, *, stride=1, padding=0, output_padding=0, dilation=1,
                    groups=1, layout="channels_first"):
    out_shape, _ = ops.spec("conv_transpose").meta(
        x, weight, bias, stride=stride, padding=padding, output_padding=output_padding,
        dilation=dilation, groups=groups, layout=layout)
    xf = to_channels_first(x, layout)
    s, pairs, d, _ = C.transpose_arguments(xf.ndim - 2, {
        "stride": stride, "padding": padding, "dilation": dilation,
        "output_padding": output_padding})
    spatial = out_shape[2:] if layout == "channels_first" else out_shape[1:-1]
    y = conv_input_grad(xf, weight, spatial, s, pairs, d, groups)
    if bias is not None:
        y = y + F.reshape(bias, C.channel_shape(y.ndim, "channels_first"))
    return from_channels_first(y, layout)


# -- layouts ---------------------------------------------------------------------------------
def to_channels_first(x: Tensor, layout: str) -> Tensor:
    """x in the channels-first layout."""
    if layout == "channels_first":
        return x
    return F.permute_dims(x, (0, x.ndim - 1, *range(1, x.ndim - 1)))


def from_channels_first(y: Tensor, layout: str) -> Tensor:
    """A channels-first y in the given layout."""
    if layout == "channels_first":
        return y
    return F.permute_dims(y, (0, *range(2, y.ndim), 1))


def conv_arguments(r: int, params) -> tuple:
    """(stride, padding pairs, dilation, groups) of a conv's params over r spatial axes."""
    return (C.per_axis("conv", "stride", params.get("stride", 1), r, 1),
            C.pads("conv", params.get("padding", 0), r),
            C.per_axis("conv", "dilation", params.get("dilation", 1), r, 1),
            params.get("groups", 1))


# -- gradients (channels first) --------------------------------------------------------------
def _dilate(g: Tensor, stride) -> Tensor:
    """g with stride - 1 zeros between its elements along each spatial axis."""
    for i, s in enumerate(stride):
        if s == 1:
            continue
        a = 2 + i
        n = g.shape[a]
        g = F.reshape(g, (*g.shape[:a + 1], 1, *g.shape[a + 1:]))
        g = F.pad(g, tuple((0, s - 1) if j == a + 1 else (0, 0) for j in range(g.ndim)))
        g = F.reshape(g, (*g.shape[:a], n * s, *g.shape[a + 2:]))
        g = F.slice(g, tuple((0, 1, (n - 1) * s + 1) if j == a else (0, 1, m)
                             for j, m in enumerate(g.shape)))
    return g


def conv_input_grad(g: Tensor, weight: Tensor, spatial, stride, padding, dilation,
                    groups: int) -> Tensor:
    """The gradient of conv with respect to its (channels-first) input of spatial sizes
    `spatial`, for the cotangent g: the transposed convolution of g by weight."""
    kernel = weight.shape[2:]
    full = [d * (k - 1) for k, d in zip(kernel, dilation, strict=True)]
    z = _dilate(g, stride)
    # gradient of the padded input: every position, zeros past the last window
    extra = [n + lo + hi - z.shape[2 + i] - full[i]
             for i, (n, (lo, hi)) in enumerate(zip(spatial, padding, strict=True))]
    o, cg = weight.shape[:2]
    og = o // groups
    flipped = F.slice(weight, ((0, 1, o), (0, 1, cg),
                               *((k - 1, -1, k) for k in kernel)))
    w = F.reshape(flipped, (groups, og, cg, *kernel))
    w = F.reshape(F.permute_dims(w, (0, 2, 1, *range(3, w.ndim))), (groups * cg, og, *kernel))
    dxp = conv(z, w, padding=tuple((f, f + e) for f, e in zip(full, extra, strict=True)),
               dilation=dilation, groups=groups)
    return F.slice(dxp, ((0, 1, dxp.shape[0]), (0, 1, dxp.shape[1]),
                         *((lo, 1, n) for n, (lo, _) in zip(spatial, padding, strict=True))))


def conv_weight_grad(x: Tensor, g: Tensor, kernel, stride, padding, dilation,
                     groups: int) -> Tensor:
    """The gradient of conv with respect to its weight (out, in / groups, *kernel) for a
    channels-first input x and cotangent g: x convolved by g, stride and dilation swapped."""
    n, c = x.shape[:2]
    o = g.shape[1]
    r = len(kernel)
    if any(lo or hi for lo, hi in padding):
        x = F.pad(x, ((0, 0), (0, 0), *padding))
    xs = F.reshape(x, (n, groups, c // groups, *x.shape[2:]))
    xs = F.reshape(F.permute_dims(xs, (2, 1, 0, *range(3, 3 + r))),
                   (c // groups, groups * n, *x.shape[2:]))
    gs = F.reshape(g, (n, groups, o // groups, *g.shape[2:]))
    gs = F.reshape(F.permute_dims(gs, (1, 2, 0, *range(3, 3 + r))), (o, n, *g.shape[2:]))
    dw = conv(xs, gs, stride=tuple(dilation), dilation=tuple(stride), groups=groups)
    dw = F.slice(dw, ((0, 1, c // groups), (0, 1, o), *((0, 1, k) for k in kernel)))
    return F.permute_dims(dw, (1, 0, *range(2, 2 + r)))


def _one_hot_kernel(kernel, like: Tensor) -> Tensor:
    """(prod(kernel), 1, *kernel) ones at each kernel position in turn, like's dtype."""
    k = math.prod(kernel)
    eye = np.eye(k, dtype=np.float64).reshape(k, 1, *kernel)
    return Tensor.from_host(eye.astype(like.dtype), like.device)


def window_elements(x: Tensor, kernel, stride, padding) -> Tensor:
    """The elements of each pooling window of a channels-first x: (N * C, prod(kernel),
    *out), zeros where the window reaches into the padding."""
    flat = F.reshape(x, (x.shape[0] * x.shape[1], 1, *x.shape[2:]))
    return conv(flat, _one_hot_kernel(kernel, x), stride=tuple(stride), padding=padding)


def window_inside(spatial, kernel, stride, padding) -> np.ndarray:
    """(1, prod(kernel), *out) True where a window's element lies inside the input."""
    ones = np.ones((1, 1, *spatial))
    win = C.windows(ones, kernel, stride, padding, (1,) * len(kernel))
    k = math.prod(kernel)
    out = win.shape[2:2 + len(kernel)]
    return np.moveaxis(win.reshape(1, *out, k), -1, 1) > 0


def max_pool_hits(x: Tensor, y: Tensor, kernel, stride, padding) -> tuple[Tensor, Tensor]:
    """(weight, window elements) of a channels-first max_pool: weight (N * C, prod(kernel),
    *out) is 1 / ties at each window's maxima inside the input, else 0 (ties share, as
    `max`'s gradient)."""
    elements = window_elements(x, kernel, stride, padding)
    inside = window_inside(x.shape[2:], kernel, stride, padding).astype(x.dtype)
    top = F.reshape(y, (elements.shape[0], 1, *elements.shape[2:]))
    hit = F.where(F.equal(elements, top), Tensor.from_host(inside, x.device), 0)
    return hit / F.sum(hit, axis=1, keepdims=True), elements


def max_pool_grad(g: Tensor, x: Tensor, y: Tensor, kernel, stride, padding) -> Tensor:
    """The gradient of a channels-first max_pool with respect to x for the cotangent g."""
    weight, _ = max_pool_hits(x, y, kernel, stride, padding)
    flat = F.reshape(g, (weight.shape[0], 1, *g.shape[2:])) * weight
    dx = conv_input_grad(flat, _one_hot_kernel(kernel, x), x.shape[2:], stride, padding,
                         (1,) * len(kernel), 1)
    return F.reshape(dx, x.shape)


def avg_pool_counts(spatial, kernel, stride, padding, count_include_pad: bool):
    """What each window's sum is divided by: the kernel's size, or (1, 1, *out) element
    counts inside the input."""
    if count_include_pad:
        return math.prod(kernel)
    inside = window_inside(spatial, kernel, stride, padding)
    return np.sum(inside, axis=1, keepdims=True).astype(np.float64)


def avg_pool_grad(g: Tensor, x_shape, kernel, stride, padding, count_include_pad) -> Tensor:
    """The gradient of a channels-first avg_pool with respect to its input of x_shape."""
    counts = avg_pool_counts(x_shape[2:], kernel, stride, padding, count_include_pad)
    if isinstance(counts, np.ndarray):
        counts = Tensor.from_host(counts.astype(g.dtype), g.device)
    flat = F.reshape(g, (x_shape[0] * x_shape[1], 1, *g.shape[2:])) / counts
    ones = Tensor.from_host(np.ones((1, 1, *kernel), dtype=g.dtype), g.device)
    dx = conv_input_grad(flat, ones, x_shape[2:], stride, padding, (1,) * len(kernel), 1)
    return F.reshape(dx, x_shape)
