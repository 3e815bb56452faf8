"""Half-precision inference of a float32 model: the same layers and graph in float16 or
bfloat16.

    model16 = quant.half_precision(model, hal.float16)      # or hal.bfloat16
    y = model16(x)                                          # float32 in and out

Every floating parameter and buffer of a copy of the model is cast to the dtype (integer
ones, such as position ids, stay); the layers compute in the dtype of their weights, so
the whole forward runs in half precision (hal's half-precision ops compute in float32
and round once, so softmax and layer_norm stay stable). The copy takes the model's
inputs as they were: float tensors are cast to the dtype on the way in and floating
outputs back to float32, so it replaces the model in a pipeline or under `hal.jit`.
"""

from __future__ import annotations

import hal
from hal import HalError, Tensor

from ..nn import Layer

DTYPES = ("float16", "bfloat16")


def _cast(value, dtype):
    """A floating Tensor as dtype; anything else as it is."""
    if isinstance(value, Tensor) and hal.isdtype(value.dtype, "real floating"):
        return hal.astype(value, dtype)
    return value


class HalfPrecision(Layer):
    """A model whose floating state is `dtype`, with float32 inputs and outputs."""

    def __init__(self, model: Layer, dtype) -> None:
        super().__init__()
        self.model = model
        self.dtype = dtype

    def forward(self, *args, **kwargs):
        """The model on args cast to the dtype; floating outputs (one, or a tuple) as
        float32."""
        out = self.model(*[_cast(a, self.dtype) for a in args],
                         **{k: _cast(v, self.dtype) for k, v in kwargs.items()})
        if isinstance(out, tuple):
            return tuple(_cast(o, hal.float32) for o in out)
        return _cast(out, hal.float32)


def half_precision(model: Layer, dtype=hal.float16) -> HalfPrecision:
    """A copy of `model` computing in float16 or bfloat16 (see the module); `model` itself
    is unchanged."""
    name = getattr(dtype, "name", dtype)
    if name not in DTYPES:
        raise HalError(f"half_precision({type(model).__name__}): dtype {name!r} is not one of "
                       f"{', '.join(DTYPES)}; use quant_post_dynamic for int8")
    target = getattr(hal, name)
    return HalfPrecision(model.copy().cast(target), target)
