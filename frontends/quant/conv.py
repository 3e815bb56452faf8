"""An INT8 form of a 2-d convolution: the patches (im2col) through `hal.nn.quantized_linear`
(uint8 activations quantized per call, int8 weights per output channel, int32 products).

    qconv = QuantizedConv.from_conv(conv)        # conv: a frontends.nn.Conv (2-d, channels first)
    qmodel = quant_post_dynamic_conv(model)      # every such Conv of a copy of the model

hal's int8 product is a matrix product (`qmatmul`), so the convolution is written as one:
the kernel's taps are gathered as strided slices of the padded input (hal ops, so it traces
under hal.jit and runs on every backend), then multiplied by the (in x taps, out) weight.
"""

from __future__ import annotations

import hal
from hal import HalError, Tensor

from ..nn import Conv, Layer
from .convert import replaced
from .layers import quantize_weight


class QuantizedConv(Layer):
    """An int8 2-d convolution (channels first, groups 1, dilation 1) with dynamic uint8
    activations. Buffers: weight int8 (in * kh * kw, out), weight_scale float32 (out,),
    bias float32 (out,) if any."""

    def __init__(self, weight: Tensor, weight_scale: Tensor, bias: Tensor | None, *,
                 kernel: tuple[int, int], stride: int, padding: int) -> None:
        super().__init__()
        self.register_buffer("weight", weight)
        self.register_buffer("weight_scale", weight_scale)
        if bias is None:
            self.bias = None
        else:
            self.register_buffer("bias", bias)
        self.kernel, self.stride, self.padding = kernel, stride, padding

    @classmethod
    def from_conv(cls, conv: Conv, per_channel: bool = True) -> QuantizedConv:
        """The int8 form of a float Conv; HalError for what it does not cover."""
        what = f"QuantizedConv.from_conv(Conv({conv.in_channels}, {conv.out_channels}, " \
               f"{conv.kernel}))"
        if len(conv.kernel) != 2 or conv.groups != 1 or conv.layout != "channels_first" \
                or not all(isinstance(v, int) for v in (conv.stride, conv.padding)) \
                or conv.dilation != 1:
            raise HalError(f"{what}: covers 2-d channels-first convolutions with groups 1, "
                           "dilation 1 and an int stride and padding; keep this layer float "
                           "(skip it)")
        out = conv.out_channels
        flat = hal.permute_dims(hal.reshape(hal.astype(conv.weight, hal.float32), (out, -1)),
                                (1, 0))
        weight, scale = quantize_weight(flat, per_channel)
        bias = None if conv.bias is None else hal.astype(conv.bias, hal.float32)
        return cls(weight, scale, bias, kernel=tuple(conv.kernel), stride=conv.stride,
                   padding=conv.padding)

    def forward(self, x: Tensor) -> Tensor:
        """x float32 (N, in, H, W) -> float32 (N, out, H', W')."""
        taps_in = self.weight.shape[0]
        (kh, kw), s, p = self.kernel, self.stride, self.padding
        if x.ndim != 4 or x.shape[1] * kh * kw != taps_in:
            raise HalError(f"QuantizedConv: input of shape {tuple(x.shape)} must be (N, "
                           f"{taps_in // (kh * kw)}, H, W)")
        n, _, h, w = x.shape
        if p:
            x = hal.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
        ho, wo = (h + 2 * p - kh) // s + 1, (w + 2 * p - kw) // s + 1
        taps = [x[:, :, i:i + s * (ho - 1) + 1:s, j:j + s * (wo - 1) + 1:s]
                for i in range(kh) for j in range(kw)]
        cols = hal.permute_dims(hal.stack(taps, axis=2), (0, 3, 4, 1, 2))  # N H' W' C taps
        y = hal.nn.quantized_linear(hal.reshape(cols, (n * ho * wo, taps_in)), self.weight,
                                    self.weight_scale, self.bias)
        return hal.permute_dims(hal.reshape(y, (n, ho, wo, -1)), (0, 3, 1, 2))


def quant_post_dynamic_conv(model: Layer, per_channel: bool = True) -> Layer:
    """A copy of `model` with every Conv replaced by a QuantizedConv; `model` is unchanged."""
    chosen = [(name, layer) for name, layer in model.named_layers() if isinstance(layer, Conv)]
    return replaced(model, chosen, lambda name, conv: QuantizedConv.from_conv(conv, per_channel))
