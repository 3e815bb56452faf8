"""The standard layers on hal Tensors: Linear, ... (each a `Layer`)."""

from __future__ import annotations

import math

import hal
from hal import Tensor

from .layer import Layer


class Linear(Layer):
    """y = x @ weight + bias, weight (in_features, out_features): hal.nn.linear's layout.

    Initialised as PyTorch does (uniform in +-1/sqrt(in_features)), drawn from `seed`.
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, *,
                 activation: str | None = None, dtype=hal.float32, device=None,
                 seed=None) -> None:
        super().__init__()
        bound = 1.0 / math.sqrt(in_features)
        self.weight = hal.random.uniform((in_features, out_features), low=-bound, high=bound,
                                         seed=seed, dtype=dtype, device=device)
        self.bias = (hal.random.uniform((out_features,), low=-bound, high=bound,
                                        seed=None if seed is None else seed + 1, dtype=dtype,
                                        device=device) if bias else None)
        self.activation = activation

    def forward(self, x: Tensor) -> Tensor:
        """x (..., in_features) -> (..., out_features)."""
        return hal.nn.linear(x, self.weight, self.bias, activation=self.activation)
