"""INT8 post-training quantization of frontends.nn models on hal's int8 ops.

    from frontends import quant
    qmodel = quant.quant_post_dynamic(model)                   # int8 weights, dynamic inputs
    qmodel = quant.quant_post_static(model, calibration)       # input ranges calibrated
    quant.summary(qmodel)                                      # what became int8, bytes

Every Linear (or those selected) becomes a QuantizedLinear / StaticQuantizedLinear in a
copy of the model; the original is unchanged. `peers` has ONNX Runtime's quantize_dynamic
for comparison.
"""

from . import peers
from .convert import summary
from .dynamic import quant_post_dynamic
from .layers import QuantizedLinear, StaticQuantizedLinear, quantize_weight
from .static import Range, calibrate, quant_post_static

__all__ = ["QuantizedLinear", "Range", "StaticQuantizedLinear", "calibrate",
           "quant_post_dynamic", "quant_post_static", "quantize_weight", "summary"]
