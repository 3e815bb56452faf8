"""Post-training quantization of frontends.nn models: INT8 on hal's int8 ops, and half precision.

    from frontends import quant
    qmodel = quant.quant_post_dynamic(model)                   # int8 weights, dynamic inputs
    qmodel = quant.quant_post_static(model, calibration)       # input ranges calibrated
    quant.summary(qmodel)                                      # what became int8, bytes
    qcnn = quant.quant_post_dynamic_conv(cnn)                  # 2-d Convs as int8 im2col
    model16 = quant.half_precision(model, hal.bfloat16)        # float16/bfloat16 inference

Every Linear (or those selected) becomes a QuantizedLinear / StaticQuantizedLinear in a
copy of the model; the original is unchanged. `peers` has ONNX Runtime's quantize_dynamic
for comparison.
"""

from . import peers
from .conv import QuantizedConv, quant_post_dynamic_conv
from .convert import summary
from .dynamic import quant_post_dynamic
from .half import HalfPrecision, half_precision
from .layers import QuantizedLinear, StaticQuantizedLinear, quantize_weight
from .static import Range, calibrate, quant_post_static

__all__ = ["HalfPrecision", "QuantizedConv", "QuantizedLinear", "Range",
           "StaticQuantizedLinear", "calibrate", "half_precision", "quant_post_dynamic",
           "quant_post_dynamic_conv", "quant_post_static", "quantize_weight", "summary"]
