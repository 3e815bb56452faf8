"""Reverse-mode rules of conv, conv_transpose, max_pool, avg_pool and batch_norm, written in
hal ops.

The gradients are convolutions themselves (`hal.convolution`), so they nest and run on
any backend. Conventions as in `vjp_rules`.
"""

from __future__ import annotations

import hal
from hal import convolution as CV
from hal.ops import conv as C

from .vjp_rules import vjp_rule


def pool_arguments(name: str, x_shape, params) -> tuple:
    """(kernel, stride, padding pairs) of a pool's params for a channels-first x_shape."""
    return C.pool_arguments(name, len(x_shape) - 2, params["kernel"], params.get("stride"),
                            params.get("padding", 0))


def _first_shape(shape, layout):
    """A shape in the channels-first layout."""
    return shape if layout == "channels_first" else (shape[0], shape[-1], *shape[1:-1])


@vjp_rule("conv", out=False)
def _conv(ct, args, params, out, needs):
    x, weight, bias = ([*list(args), None])[:3]
    layout = params.get("layout", "channels_first")
    g = CV.to_channels_first(ct, layout)
    kernel = weight.shape[2:]
    x_shape = _first_shape(tuple(x.shape), layout)
    stride, padding, dilation, groups = CV.conv_arguments(len(kernel), params)
    gx = gw = gb = None
    if needs[0]:
        gx = CV.from_channels_first(
            CV.conv_input_grad(g, weight, x_shape[2:], stride, padding, dilation, groups),
            layout)
    if needs[1]:
        gw = CV.conv_weight_grad(CV.to_channels_first(x, layout), g, kernel, stride, padding,
                                 dilation, groups)
    if bias is not None and needs[2]:
        gb = hal.sum(g, axis=(0, *range(2, g.ndim)))
    return (gx, gw, gb)[:len(args)]


@vjp_rule("conv_transpose", out=False)
def _conv_transpose(ct, args, params, out, needs):
    """conv_transpose(x, w) is conv's input gradient: its own input gradient is conv, its
    weight gradient conv's weight gradient with the roles of x and the cotangent swapped."""
    x, weight, bias = ([*list(args), None])[:3]
    layout = params.get("layout", "channels_first")
    g = CV.to_channels_first(ct, layout)
    stride, padding, dilation, _ = C.transpose_arguments(weight.ndim - 2, params)
    groups = params.get("groups", 1)
    gx = gw = gb = None
    if needs[0]:
        gx = CV.from_channels_first(hal.nn.conv(g, weight, stride=stride, padding=padding,
                                                dilation=dilation, groups=groups), layout)
    if needs[1]:
        gw = CV.conv_weight_grad(g, CV.to_channels_first(x, layout), weight.shape[2:], stride,
                                 padding, dilation, groups)
    if bias is not None and needs[2]:
        gb = hal.sum(g, axis=(0, *range(2, g.ndim)))
    return (gx, gw, gb)[:len(args)]


@vjp_rule("max_pool")
def _max_pool(ct, args, params, out, needs):
    layout = params.get("layout", "channels_first")
    x = CV.to_channels_first(args[0], layout)
    k, s, p = pool_arguments("max_pool", x.shape, params)
    dx = CV.max_pool_grad(CV.to_channels_first(ct, layout), x,
                          CV.to_channels_first(out, layout), k, s, p)
    return (CV.from_channels_first(dx, layout),)


@vjp_rule("avg_pool", args=False, out=False)
def _avg_pool(ct, args, params, out, needs):
    layout = params.get("layout", "channels_first")
    x_shape = _first_shape(tuple(args[0].shape), layout)
    k, s, p = pool_arguments("avg_pool", x_shape, params)
    dx = CV.avg_pool_grad(CV.to_channels_first(ct, layout), x_shape, k, s, p,
                          params.get("count_include_pad", False))
    return (CV.from_channels_first(dx, layout),)


@vjp_rule("batch_norm", out=False)
def _batch_norm(ct, args, params, out, needs):
    x, mean, var, weight, bias = ([*list(args), None, None])[:5]
    layout = params.get("layout", "channels_first")
    shape = C.channel_shape(x.ndim, layout)
    axes = (0, *range(2, x.ndim)) if layout == "channels_first" else tuple(range(x.ndim - 1))
    inv = 1 / hal.sqrt(hal.reshape(var, shape) + params.get("eps", 1e-5))
    g = ct if weight is None else ct * hal.reshape(weight, shape)
    centred = x - hal.reshape(mean, shape)
    gx = g * inv if needs[0] else None
    gm = -hal.sum(g * inv, axis=axes) if needs[1] else None
    gv = hal.sum(g * centred * (inv * inv * inv), axis=axes) * -0.5 if needs[2] else None
    gw = hal.sum(ct * centred * inv, axis=axes) if weight is not None and needs[3] else None
    gb = hal.sum(ct, axis=axes) if bias is not None and needs[4] else None
    return (gx, gm, gv, gw, gb)[:len(args)]
