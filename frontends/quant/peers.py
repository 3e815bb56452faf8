"""ONNX Runtime as the peer of hal's INT8: its dynamic quantization of an ONNX file (int8
weights, uint8 activations quantized per call, as quant_post_dynamic) and a CPU session.

    ort_quantize_dynamic("model.onnx", "model.int8.onnx")
    outputs = ort_session("model.int8.onnx").run(None, {"x": x})
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

import hal
from hal import HalError
from hal.ops import quant


def _onnxruntime():
    try:
        import onnxruntime
    except ImportError:
        raise HalError("the ONNX Runtime peer needs the onnxruntime package "
                       "(pip install onnxruntime)") from None
    return onnxruntime


def _existing(path: str | Path, what: str) -> Path:
    path = Path(path)
    if not path.is_file():
        raise HalError(f"{what}: no ONNX file {path}")
    return path


def ort_quantize_dynamic(onnx_in: str | Path, onnx_out: str | Path,
                         per_channel: bool = True) -> Path:
    """Write onnx_out: onnx_in with the weights of its MatMul/Gemm nodes in int8 (per output
    channel, or one scale per tensor) and activations quantized per call (ONNX Runtime's
    quantize_dynamic, QInt8 weights). Works on ORT-fused graphs too (tensors whose type
    ORT's inference misses are taken as float). Returns onnx_out's path."""
    source = _existing(onnx_in, "ort_quantize_dynamic")
    _onnxruntime()
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    try:
        quantize_dynamic(source, Path(onnx_out), per_channel=per_channel,
                         weight_type=QuantType.QInt8,
                         extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    except Exception as e:  # the quantizer raises plain errors for models it cannot read
        raise HalError(f"ort_quantize_dynamic: ONNX Runtime could not quantize {source}: "
                       f"{type(e).__name__}: {e}") from e
    return Path(onnx_out)


def has_vnni() -> bool:
    """True if the CPU has VNNI (AVX-512 or AVX) or AMX-INT8: u8 x s8 dot products without
    saturation (`hal.ops.quant.int8_product_form`)."""
    return quant.int8_product_form() == quant.U8S8


def ort_session(path: str | Path, threads: int | None = None, exact_int8: bool | None = None,
                provider: str = "CPUExecutionProvider"):
    """An onnxruntime.InferenceSession of an ONNX file on `provider` (the CPU's by default;
    the CPU's is kept as the fallback of another), with `threads` intra-op threads
    (default: hal.settings.threads, HAL_THREADS).

    Without VNNI, ORT's u8 x s8 GEMM (vpmaddubsw) saturates pairs of products in int16 and
    gives wrong int8 results (errors of ~0.7 on a 384 -> 1536 layer whose outputs are ~1);
    `exact_int8` (default: on where the CPU lacks VNNI) sets ORT's
    session.x64quantprecision, which widens to int16 first (measured ~10% slower).
    """
    ort = _onnxruntime()
    source = _existing(path, "ort_session")
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads or hal.settings.threads
    exact = not has_vnni() if exact_int8 is None else exact_int8
    if exact:
        options.add_session_config_entry("session.x64quantprecision", "1")
    try:
        providers = list(dict.fromkeys([provider, "CPUExecutionProvider"]))
        return ort.InferenceSession(str(source), options, providers=providers)
    except Exception as e:  # ORT's own exception types are not importable by one name
        raise HalError(f"ort_session: ONNX Runtime could not load {source}: "
                       f"{type(e).__name__}: {e}") from e


def ort_matmul_integer(a: np.ndarray, b: np.ndarray, a_zero_point: int = 0,
                       b_zero_point: int = 0) -> np.ndarray:
    """(a - a_zero_point) @ (b - b_zero_point) in int32 by ONNX Runtime's MatMulInteger for a
    uint8 a and an int8 b (2-D), in this CPU's product form (`int8_product_form`: u8 x s8
    with VNNI/AMX, else b shifted to uint8), on hal.settings.threads threads."""
    if a.dtype != np.uint8 or b.dtype != np.int8 or a.ndim != 2 or b.ndim != 2:
        raise HalError(f"ort_matmul_integer: needs 2-D uint8 a and int8 b, got {a.dtype} "
                       f"{a.shape} and {b.dtype} {b.shape}")
    if quant.int8_product_form() == quant.U8U8:
        b, b_zero_point = b.view(np.uint8) ^ np.uint8(0x80), b_zero_point + 128
    session = _matmul_integer_session(b.dtype.name, hal.settings.threads)
    return session.run(None, {"A": a, "B": b, "a_zero": np.asarray(a_zero_point, np.uint8),
                              "b_zero": np.asarray(b_zero_point, b.dtype)})[0]


@functools.cache
def _matmul_integer_session(b_dtype: str, threads: int):
    ort = _onnxruntime()
    from onnx import TensorProto, helper

    b_type = {"int8": TensorProto.INT8, "uint8": TensorProto.UINT8}[b_dtype]
    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["A", "B", "a_zero", "b_zero"], ["Y"])], "qmatmul",
        [helper.make_tensor_value_info("A", TensorProto.UINT8, ["M", "K"]),
         helper.make_tensor_value_info("B", b_type, ["K", "N"]),
         helper.make_tensor_value_info("a_zero", TensorProto.UINT8, []),
         helper.make_tensor_value_info("b_zero", b_type, [])],
        [helper.make_tensor_value_info("Y", TensorProto.INT32, ["M", "N"])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8  # what every supported onnxruntime accepts
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    return ort.InferenceSession(model.SerializeToString(), options,
                                providers=["CPUExecutionProvider"])
