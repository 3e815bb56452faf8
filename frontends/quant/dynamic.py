"""Dynamic post-training quantization: int8 weights, activations quantized per call.

    qmodel = quant_post_dynamic(model)                           # every Linear
    qmodel = quant_post_dynamic(model, skip=("head",), per_channel=False)
    qmodel = quant_post_dynamic(model, {"weight_quantize_type": "abs_max"})
"""

from __future__ import annotations

from collections.abc import Mapping

from ..nn import Layer
from .convert import options_from, replaced, selected
from .layers import QuantizedLinear


def quant_post_dynamic(model: Layer, config: Mapping | None = None, **options) -> Layer:
    """A copy of `model` with every selected Linear replaced by a QuantizedLinear (int8
    weights, uint8 activations quantized from their own range per call); `model` itself is
    unchanged. options: skip=(names...), layer_types=(Linear,), per_channel=True; `config`
    is the same as a dict of PaddleSlim's keys (weight_bits, weight_quantize_type,
    quantizable_op_type, skip)."""
    opts = options_from(config, options)
    chosen = selected(model, opts["skip"], opts["layer_types"])
    return replaced(model, chosen, lambda name, linear: QuantizedLinear.from_linear(
        linear, opts["per_channel"]))
