"""Convolutional and normalisation layers on hal Tensors: Conv, MaxPool, AvgPool,
BatchNorm and RMSNorm (each a `Layer`).

Conv and the pools work on 1 to 3 spatial axes (the kernel's length says how many; an int
kernel means `dims` axes, 2 by default), channels first (N, C, *spatial) unless
layout="channels_last". Weights are initialised as PyTorch's (uniform in +-1/sqrt(fan_in)),
drawn from `seed`.
"""

from __future__ import annotations

import math

import hal
from hal import HalError, ShapeError, Tensor
from hal.compile.trace import Tracer

from .layer import Layer


def _per_axis(layer: str, name: str, value, dims: int) -> tuple[int, ...]:
    items = (value,) * dims if isinstance(value, int) else tuple(value)
    if len(items) != dims:
        raise HalError(f"{layer}: {name} {value!r} must be an int or {dims} ints")
    return items


def _channels(x: Tensor, layout: str) -> int:
    return x.shape[1] if layout == "channels_first" else x.shape[-1]


def _check_input(layer: str, x: Tensor, channels: int, dims: int, layout: str) -> None:
    """ShapeError naming the layer unless x is (N, channels, *dims spatial) in its layout."""
    if x.ndim != dims + 2 or _channels(x, layout) != channels:
        want = f"(N, {channels}, {', '.join('*' * dims)})" if layout == "channels_first" \
            else f"(N, {', '.join('*' * dims)}, {channels})"
        raise ShapeError(f"{layer}: input of shape {tuple(x.shape)} must be {want} ({layout}; "
                         f"{dims} spatial axes)")


class Conv(Layer):
    """Convolution of in_channels to out_channels with a kernel over 1 to 3 spatial axes
    (hal.nn.conv): weight (out, in / groups, *kernel), bias (out,)."""

    def __init__(self, in_channels: int, out_channels: int, kernel, *, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool = True, dims: int = 2,
                 layout: str = "channels_first", dtype=hal.float32, device=None,
                 seed=None) -> None:
        super().__init__()
        dims = dims if isinstance(kernel, int) else len(kernel)
        self.kernel = _per_axis("Conv", "kernel", kernel, dims)
        if groups < 1 or in_channels % groups or out_channels % groups:
            raise HalError(f"Conv({in_channels}, {out_channels}): groups={groups} must divide "
                           "both channel counts")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.stride, self.padding, self.dilation = stride, padding, dilation
        self.layout = layout
        bound = 1.0 / math.sqrt(in_channels // groups * math.prod(self.kernel))
        self.weight = hal.random.uniform((out_channels, in_channels // groups, *self.kernel),
                                         low=-bound, high=bound, seed=seed, dtype=dtype,
                                         device=device)
        self.bias = (hal.random.uniform((out_channels,), low=-bound, high=bound,
                                        seed=None if seed is None else seed + 1, dtype=dtype,
                                        device=device) if bias else None)

    def forward(self, x: Tensor) -> Tensor:
        """x (N, in_channels, *spatial) -> (N, out_channels, *out) (channels last alike)."""
        _check_input(f"Conv({self.in_channels}, {self.out_channels}, {self.kernel})", x,
                     self.in_channels, len(self.kernel), self.layout)
        return hal.nn.conv(x, self.weight, self.bias, stride=self.stride, padding=self.padding,
                           dilation=self.dilation, groups=self.groups, layout=self.layout)


class MaxPool(Layer):
    """The maximum over each window (hal.nn.max_pool); stride defaults to the kernel."""

    def __init__(self, kernel, stride=None, padding=0, *, dims: int = 2,
                 layout: str = "channels_first") -> None:
        super().__init__()
        self.kernel = _per_axis("MaxPool", "kernel", kernel, dims if isinstance(kernel, int)
                                else len(kernel))
        self.stride, self.padding, self.layout = stride, padding, layout

    def forward(self, x: Tensor) -> Tensor:
        """x (N, C, *spatial) -> (N, C, *out) (channels last alike)."""
        return hal.nn.max_pool(x, self.kernel, stride=self.stride, padding=self.padding,
                               layout=self.layout)


class AvgPool(Layer):
    """The mean over each window (hal.nn.avg_pool); stride defaults to the kernel;
    count_include_pad as hal.nn.avg_pool's (False: padding is not counted)."""

    def __init__(self, kernel, stride=None, padding=0, *, count_include_pad: bool = False,
                 dims: int = 2, layout: str = "channels_first") -> None:
        super().__init__()
        self.kernel = _per_axis("AvgPool", "kernel", kernel, dims if isinstance(kernel, int)
                                else len(kernel))
        self.stride, self.padding, self.layout = stride, padding, layout
        self.count_include_pad = count_include_pad

    def forward(self, x: Tensor) -> Tensor:
        """x (N, C, *spatial) -> (N, C, *out) (channels last alike)."""
        return hal.nn.avg_pool(x, self.kernel, stride=self.stride, padding=self.padding,
                               count_include_pad=self.count_include_pad, layout=self.layout)


class BatchNorm(Layer):
    """Per-channel normalisation of (N, C, ...) inputs (channels last with layout=...).

    eval mode: with the running statistics (buffers `running_mean`, `running_var`), as
    hal.nn.batch_norm. train mode: with the batch's own mean and (biased) variance, and the
    running statistics move toward them by `momentum` (the variance unbiased), as PyTorch's
    BatchNorm: eagerly (under a gradient too), not under hal.jit, which refuses train mode.
    """

    def __init__(self, channels: int, eps: float = 1e-5, momentum: float = 0.1, *,
                 layout: str = "channels_first", dtype=hal.float32, device=None) -> None:
        super().__init__()
        self.weight = hal.ones((channels,), dtype=dtype, device=device)
        self.bias = hal.zeros((channels,), dtype=dtype, device=device)
        self.register_buffer("running_mean", hal.zeros((channels,), dtype=dtype, device=device))
        self.register_buffer("running_var", hal.ones((channels,), dtype=dtype, device=device))
        self.eps, self.momentum, self.layout = eps, momentum, layout

    def forward(self, x: Tensor) -> Tensor:
        """x normalised per channel."""
        channels = self.weight.shape[0]
        if x.ndim < 2 or _channels(x, self.layout) != channels:
            raise ShapeError(f"BatchNorm({channels}): input of shape {tuple(x.shape)} must have "
                             f"{channels} channels ({self.layout})")
        if not self.training:
            return hal.nn.batch_norm(x, self.running_mean, self.running_var, self.weight,
                                     self.bias, eps=self.eps, layout=self.layout)
        axes = (0, *range(2, x.ndim)) if self.layout == "channels_first" \
            else tuple(range(x.ndim - 1))
        mean, var = hal.mean(x, axis=axes), hal.var(x, axis=axes)
        if isinstance(mean, Tracer):
            raise HalError(f"BatchNorm({channels}) in train mode under hal.jit: its running "
                           "statistics cannot be updated inside a traced function; call "
                           ".eval() first, or run the training step eagerly")
        count = math.prod(x.shape[a] for a in axes)
        m = self.momentum
        self.running_mean = self.running_mean * (1 - m) + mean * m
        self.running_var = self.running_var * (1 - m) + var * (m * count / max(count - 1, 1))
        return hal.nn.batch_norm(x, mean, var, self.weight, self.bias, eps=self.eps,
                                 layout=self.layout)


class RMSNorm(Layer):
    """x / sqrt(mean(x**2) + eps) over the last dimension, * weight (ones at first): Llama's."""

    def __init__(self, dim: int, eps: float = 1e-6, *, dtype=hal.float32, device=None) -> None:
        super().__init__()
        self.weight = hal.ones((dim,), dtype=dtype, device=device)
        self.eps = eps

    def forward(self, x: Tensor) -> Tensor:
        """x (..., dim) normalised along its last axis."""
        dim = self.weight.shape[0]
        if not x.shape or x.shape[-1] != dim:
            raise ShapeError(f"RMSNorm({dim}): input of shape {tuple(x.shape)} must end in "
                             f"{dim}; pass a tensor of shape (..., {dim})")
        return hal.nn.rms_norm(x, self.weight, eps=self.eps)
