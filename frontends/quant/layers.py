"""INT8 layers made from a float `Linear`: weights int8 (in, out), symmetric, with float32
scales per output channel (or one per tensor); activations uint8, quantized per call from
their own range (`QuantizedLinear`) or with a range fixed by calibration
(`StaticQuantizedLinear`). Their tensors are buffers: saved and loaded, never trained.
"""

from __future__ import annotations

import numpy as np

import hal
from hal import HalError, Tensor

from ..nn import Layer, Linear

_ACTIVATIONS = {
    None: lambda y: y,
    "relu": hal.nn.relu,
    "gelu": hal.nn.gelu,
    "gelu_tanh": lambda y: hal.nn.gelu(y, approximate="tanh"),
    "silu": hal.nn.silu,
    "sigmoid": hal.nn.sigmoid,
    "tanh": hal.tanh,
}


def quantize_weight(weight: Tensor, per_channel: bool = True) -> tuple[Tensor, Tensor]:
    """(int8 weight, float32 scales (out,)): symmetric, zero point 0, scale = max|w| / 127
    per output channel (column) or over the whole tensor; an all-zero range gets scale 1."""
    if weight.ndim != 2:
        raise HalError(f"quantize_weight: weight {weight.dtype.name}{tuple(weight.shape)} must "
                       "be 2-d (in_features, out_features)")
    w = hal.astype(weight, hal.float32)
    largest = hal.max(hal.abs(w), axis=0 if per_channel else None)
    scale = hal.where(largest == 0, 1.0, largest / 127.0)
    zero = hal.asarray(np.zeros(scale.shape, np.int8), device=w.device)
    q = hal.quantize_linear(w, scale, zero, axis=-1)
    return q, hal.broadcast_to(scale, (w.shape[1],))


def _float_bias(linear: Linear) -> Tensor | None:
    return None if linear.bias is None else hal.astype(linear.bias, hal.float32)


class QuantizedLinear(Layer):
    """An int8 Linear with dynamic activations: hal.nn.quantized_linear (x quantized to
    uint8 from its own range per call, int32 products), then the Linear's activation.

    Buffers: weight int8 (in, out), weight_scale float32 (out,), bias float32 (out,) if any.
    """

    def __init__(self, weight: Tensor, weight_scale: Tensor, bias: Tensor | None = None, *,
                 activation: str | None = None) -> None:
        super().__init__()
        if activation not in _ACTIVATIONS:
            raise HalError(f"{type(self).__name__}: activation {activation!r} is not one of "
                           f"{', '.join(map(repr, _ACTIVATIONS))}")
        self.register_buffer("weight", weight)
        self.register_buffer("weight_scale", weight_scale)
        if bias is None:
            self.bias = None
        else:
            self.register_buffer("bias", bias)
        self.activation = activation

    @classmethod
    def from_linear(cls, linear: Linear, per_channel: bool = True) -> QuantizedLinear:
        """The int8 form of a float Linear (per output channel scales, or one scale)."""
        weight, scale = quantize_weight(linear.weight, per_channel)
        return cls(weight, scale, _float_bias(linear), activation=linear.activation)

    @property
    def in_features(self) -> int:
        """Size of each input sample."""
        return self.weight.shape[0]

    @property
    def out_features(self) -> int:
        """Size of each output sample."""
        return self.weight.shape[1]

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(in_features={self.in_features}, out_features="
                f"{self.out_features}, bias={self.bias is not None}, "
                f"activation={self.activation!r})")

    def forward(self, x: Tensor) -> Tensor:
        """x float32 (..., in_features) -> float32 (..., out_features)."""
        y = hal.nn.quantized_linear(x, self.weight, self.weight_scale, self.bias)
        return _ACTIVATIONS[self.activation](y)


class StaticQuantizedLinear(QuantizedLinear):
    """An int8 Linear whose activation scale and uint8 zero point were fixed by calibration
    (`quant_post_static`): quantize_linear, the int8 product in int32, rescale, activation.
    All hal ops, so it traces (hal.jit) and runs on every backend.

    Buffers: those of QuantizedLinear, input_scale float32 () and input_zero_point uint8 ().
    """

    def __init__(self, weight: Tensor, weight_scale: Tensor, bias: Tensor | None = None, *,
                 input_scale: Tensor, input_zero_point: Tensor,
                 activation: str | None = None) -> None:
        super().__init__(weight, weight_scale, bias, activation=activation)
        self.register_buffer("input_scale", input_scale)
        self.register_buffer("input_zero_point", input_zero_point)

    @classmethod
    def from_linear(cls, linear: Linear, per_channel: bool = True, *, lo: float,
                    hi: float) -> StaticQuantizedLinear:
        """The int8 form of a float Linear for inputs calibrated to the range [lo, hi]
        (widened to hold 0; scale and zero point as ONNX DynamicQuantizeLinear's)."""
        weight, scale = quantize_weight(linear.weight, per_channel)
        s, z = hal.ops.dynamic_qparams(lo, hi)
        device = weight.device
        return cls(weight, scale, _float_bias(linear),
                   input_scale=hal.asarray(np.asarray(s, np.float32), device=device),
                   input_zero_point=hal.asarray(np.asarray(z, np.uint8), device=device),
                   activation=linear.activation)

    def forward(self, x: Tensor) -> Tensor:
        """x float32 (..., in_features) -> float32 (..., out_features); x outside the
        calibrated range saturates."""
        q = hal.quantize_linear(x, self.input_scale, self.input_zero_point)
        # the zero point is a tensor (state that saves and traces): q @ w less z * colsum(w)
        columns = hal.sum(self.weight, axis=0, dtype=hal.int32)
        acc = hal.qmatmul(q, self.weight) - hal.astype(self.input_zero_point, hal.int32) * columns
        y = hal.astype(acc, hal.float32) * (self.input_scale * self.weight_scale)
        if self.bias is not None:
            y = y + self.bias
        return _ACTIVATIONS[self.activation](y)
