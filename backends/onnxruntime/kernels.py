"""Single ops: each runs as a one-node hal graph exported to ONNX, in a cached session.

One generic kernel serves every op: it looks up (or builds) the session of the op for its
params and operand shapes and dtypes (session.run_op). An op is registered only for the
dtypes in SUPPORTED, so every other dtype falls back cleanly (decomposition or CPU) rather
than failing when its session is built.
"""

from __future__ import annotations

import hal
from hal import dtypes as dt

# op -> dtypes for which the CPU EP has kernels for the whole exported node and gives the
# op reference's answer. Derived with onnxruntime 1.32.0 (onnx 1.23, opset 20) on an AVX2
# x86-64 CPU without VNNI by `python -m backends.onnxruntime.probe --examples 25`: the
# conformance kit on every op x dtype that hal.onnx exports, keeping the cells that pass.
SUPPORTED: dict[str, tuple[str, ...]] = {
    "negative": ("int8", "uint8", "int32", "int64", "float16", "float32", "float64"),
    "abs": ("int8", "uint8", "int32", "int64", "float16", "float32", "float64"),
    "exp": ("float16", "float32", "float64"),
    "log": ("float16", "float32", "float64"),
    "sqrt": ("float16", "float32", "float64"),
    "sin": ("float16", "float32", "float64"),
    "cos": ("float16", "float32", "float64"),
    "tanh": ("float16", "float32", "float64"),
    "erf": ("float16", "float32"),
    "add": ("int8", "uint8", "int32", "int64", "float16", "float32", "float64"),
    "subtract": ("int8", "uint8", "int32", "int64", "float16", "float32", "float64"),
    "multiply": ("int8", "uint8", "int32", "int64", "float16", "float32", "float64"),
    "divide": ("float16", "float32", "float64"),
    "power": ("int32", "int64", "float16", "float32", "float64"),
    "maximum": ("int8", "uint8", "int32", "int64", "float16", "float32", "float64"),
    "minimum": ("int8", "uint8", "int32", "int64", "float16", "float32", "float64"),
    "equal": ("bool", "int8", "uint8", "int32", "int64", "float16", "float32", "float64"),
    "less": ("int8", "uint8", "int32", "int64", "float16", "float32", "float64"),
    "greater": ("int8", "uint8", "int32", "int64", "float16", "float32", "float64"),
    "where": ("int8", "uint8", "int32", "int64", "float16", "float32", "float64"),
    "astype": ("bool", "int8", "uint8", "int32", "int64", "float16", "bfloat16", "float32",
        "float64"),
    "sum": ("bool", "int8", "uint8", "int32", "int64", "float16", "float32", "float64"),
    "max": ("bool", "int8", "uint8", "int32", "int64", "float16", "float32", "float64"),
    "min": ("bool", "int8", "uint8", "int32", "int64", "float16", "float32", "float64"),
    "reshape": ("bool", "int8", "uint8", "int32", "int64", "float16", "bfloat16", "float32",
        "float64"),
    "permute_dims": ("bool", "int8", "uint8", "int32", "int64", "float16", "bfloat16", "float32",
        "float64"),
    "broadcast_to": ("bool", "int8", "uint8", "int32", "int64", "float16", "float32", "float64"),
    "slice": ("bool", "int8", "uint8", "int32", "int64", "float16", "bfloat16", "float32",
        "float64"),
    "concat": ("bool", "int8", "uint8", "int32", "int64", "float16", "bfloat16", "float32",
        "float64"),
    "pad": ("bool", "int8", "uint8", "int32", "int64", "float16", "float32", "float64"),
    "matmul": ("int8", "uint8", "int32", "int64", "float16", "float32", "float64"),
    "quantize_linear": ("float16", "bfloat16", "float32", "float64"),
    "dequantize_linear": ("int8", "uint8"),
    "qmatmul": ("int8", "uint8"),
    "quantized_linear": ("float32",),
    "mean": ("float16", "float32", "float64"),
    "var": ("float16", "float32", "float64"),
    "softmax": ("float16", "float32", "float64"),
    "log_softmax": ("float16", "float32", "float64"),
    "layer_norm": ("float16", "bfloat16", "float32", "float64"),
    "gelu": ("float16", "float32"),
    "silu": ("float16", "float32", "float64"),
    "sigmoid": ("float16", "float32", "float64"),
    "relu": ("int8", "uint8", "int32", "int64", "float16", "float32", "float64"),
    "linear": ("float16", "float32"),
    "scaled_dot_product_attention": ("float16", "float32", "float64"),
    "conv": ("float16", "float32"),
    "conv_transpose": ("float16", "float32"),
    "max_pool": ("float16", "float32", "float64"),
    "avg_pool": ("float16", "float32"),
    "batch_norm": ("float16", "float32", "float64"),
    "rms_norm": ("float16", "float32", "float64"),
    "rope": ("float16", "float32", "float64"),
    "roll": ("bool", "int8", "uint8", "int32", "int64", "float16", "bfloat16", "float32",
        "float64"),
    "isnan": ("int8", "uint8", "int32", "int64", "float16", "bfloat16", "float32", "float64"),
    "isinf": ("int8", "uint8", "int32", "int64", "float16", "bfloat16", "float32", "float64"),
    "isfinite": ("int8", "uint8", "int32", "int64", "float16", "bfloat16", "float32", "float64"),
    "all": ("bool", "int8", "uint8", "int32", "int64", "float16", "bfloat16", "float32",
        "float64"),
    "any": ("bool", "int8", "uint8", "int32", "int64", "float16", "bfloat16", "float32",
        "float64"),
    "argmax": ("bool", "int8", "uint8", "int32", "int64", "float16", "float32", "float64"),
    "argmin": ("bool", "int8", "uint8", "int32", "int64", "float16", "float32", "float64"),
    "cumulative_sum": ("bool", "int8", "uint8", "int32", "int64", "float16", "float32", "float64"),
    "sort": ("bool", "int8", "uint8", "int32", "int64", "float16", "float32", "float64"),
    "argsort": ("bool", "int8", "uint8", "int32", "int64", "float16", "float32", "float64"),
    "take": ("bool", "int8", "uint8", "int32", "int64", "float16", "bfloat16", "float32",
        "float64"),
    "dynamic_update_slice": ("bool", "int8", "uint8", "int32", "int64", "float16", "bfloat16",
        "float32", "float64"),
    "floor_divide": ("float16", "float32", "float64"),
    "remainder": ("float16", "float32", "float64"),
    "clip": ("int8", "uint8", "int32", "int64", "float16", "float32", "float64"),
    "asin": ("float16", "float32"),
    "acos": ("float16", "float32"),
    "atan": ("float16", "float32"),
    "tan": ("float16", "float32"),
    "sinh": ("float16", "float32"),
    "cosh": ("float16", "float32"),
    "asinh": ("float16", "float32"),
    "acosh": ("float16", "float32"),
    "atanh": ("float16", "float32"),
    "floor": ("int8", "uint8", "int32", "int64", "float16", "float32", "float64"),
    "ceil": ("int8", "uint8", "int32", "int64", "float16", "float32", "float64"),
    "round": ("int8", "uint8", "int32", "int64", "float16", "float32", "float64"),
    "sign": ("int8", "uint8", "int32"),  # its Sign(NaN) is 0, not NaN
    "bitwise_and": ("int8", "uint8", "int32", "int64"),
    "bitwise_or": ("int8", "uint8", "int32", "int64"),
    "bitwise_xor": ("int8", "uint8", "int32", "int64"),
    "bitwise_invert": ("int8", "uint8", "int32", "int64"),
    "logical_and": ("bool",),
    "logical_or": ("bool",),
    "logical_xor": ("bool",),
}


def _kernel(op: str):
    def kernel(device, *operands, out_shape, out_dtype, **params):
        return device.run_op(op, operands, params, out_shape, out_dtype)

    kernel.__name__ = kernel.__qualname__ = f"onnxruntime_{op}"
    return kernel


def table(supported: dict[str, tuple[str, ...]]) -> hal.KernelTable:
    """A kernel table with the session kernel of each op for the given dtype names."""
    kernels = hal.KernelTable("onnxruntime")
    for op, dtypes in supported.items():
        kernels.register(op, [dt.dtype(d) for d in dtypes])(_kernel(op))
    return kernels


kernels = table(SUPPORTED)
kernels.register_staged_collectives()  # collectives go through host memory
