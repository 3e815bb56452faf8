"""The cpu backend's int8 products (qmatmul, quantized_linear) on an integer GEMM.

numpy has no int8 GEMM (its integer matmul is a naive loop), so the product runs as ONNX
Runtime's MatMulInteger (MLAS: VNNI or AMX where the CPU has them) in a cached one-node
session. Measured on a Xeon with AVX-512 VNNI and AMX, u8 x s8 512^3 on one thread:
MatMulInteger 0.72 ms (374 GOP/s), its u8 x u8 form 1.7 ms, float32 BLAS over chunks short
enough to stay exact 3.5 ms, a numba integer loop 8.1 ms.

The operands take the form `hal.ops.quant.int8_product_form` chooses for this CPU: uint8 x
int8 where VNNI/AMX sum in int32; elsewhere the int8 operand is shifted to uint8 (b + 128
and its zero point + 128: the same differences), as u8 x s8 pair sums saturate in int16
there. int8 x int8 is exact in every form.
"""

from __future__ import annotations

import functools

import numpy as np

import hal
from hal import ops
from hal.ops import quant

_ONNX_TYPES = {np.dtype(np.uint8): 2, np.dtype(np.int8): 3}  # onnx.TensorProto.UINT8, INT8


def _session_for(a_dtype: np.dtype, b_dtype: np.dtype, a_rank: int, b_rank: int):
    return _session(np.dtype(a_dtype), np.dtype(b_dtype), a_rank, b_rank, hal.settings.threads)


@functools.cache
def _session(a_dtype: np.dtype, b_dtype: np.dtype, a_rank: int, b_rank: int, threads: int):
    """An ONNX Runtime session of Y = MatMulInteger(A, B, a_zero, b_zero) for operands of
    these dtypes and ranks (any sizes), on `threads` intra-op threads."""
    import onnx
    import onnxruntime as ort
    from onnx import helper

    from .onnxruntime.session import session_options

    def value(name, dtype, rank, prefix):
        return helper.make_tensor_value_info(name, _ONNX_TYPES[dtype],
                                             [f"{prefix}{i}" for i in range(rank)])

    node = helper.make_node("MatMulInteger", ["A", "B", "a_zero", "b_zero"], ["Y"])
    graph = helper.make_graph(
        [node], "qmatmul",
        [value("A", a_dtype, a_rank, "a"), value("B", b_dtype, b_rank, "b"),
         value("a_zero", a_dtype, 0, ""), value("b_zero", b_dtype, 0, "")],
        [helper.make_tensor_value_info("Y", onnx.TensorProto.INT32, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8  # what every supported onnxruntime accepts
    return ort.InferenceSession(model.SerializeToString(), session_options(threads),
                                providers=["CPUExecutionProvider"])


def integer_matmul(a: np.ndarray, b: np.ndarray, a_zero: int, b_zero: int,
                   form: str | None = None) -> np.ndarray:
    """(a - a_zero) @ (b - b_zero) in int32 (wrapping as int32 does) for uint8 or int8 a and
    int8 b, numpy matmul shapes, in the product `form` (default: this CPU's, see
    `hal.ops.quant.int8_product_form`)."""
    form = form or quant.int8_product_form()
    if form not in (quant.U8S8, quant.U8U8):
        raise hal.HalError(f"cpu qmatmul: product form {form!r} is not one of "
                           f"{quant.U8S8!r}, {quant.U8U8!r}")
    if a.dtype == np.uint8 and form == quant.U8U8:
        b = (b.view(np.uint8) ^ np.uint8(0x80))  # b + 128 as uint8, one pass
        b_zero += 128
    if a.size == 0 or b.size == 0:  # nothing to multiply: numpy gives the shape (and zeros)
        return np.matmul(a.astype(np.int32), b.astype(np.int32))
    session = _session_for(a.dtype, b.dtype, a.ndim, b.ndim)
    return session.run(None, {"A": np.ascontiguousarray(a), "B": np.ascontiguousarray(b),
                              "a_zero": np.asarray(a_zero, a.dtype),
                              "b_zero": np.asarray(b_zero, b.dtype)})[0]


def qmatmul(a, b, *, a_zero_point=0, b_zero_point=0):
    """The qmatmul kernel: an integer GEMM, exact."""
    return integer_matmul(a, b, int(a_zero_point), int(b_zero_point))


def quantized_linear(x, weight, weight_scale, bias=None):
    """The quantized_linear kernel: x quantized to uint8 as DynamicQuantizeLinear (the op's
    definition), the integer GEMM, scaled back (and the bias added) in one pass each."""
    scale, zero = ops.dynamic_qparams(float(x.min(initial=0.0)), float(x.max(initial=0.0)))
    kernels = _numba_kernels()
    q = kernels.quantize(np.ascontiguousarray(x, np.float32), np.float32(scale), zero,
                         np.empty(x.shape, np.uint8))
    acc = integer_matmul(q, weight, zero, 0)
    out_scale = np.float32(scale) * weight_scale
    acc2 = acc.reshape(-1, acc.shape[-1]) if acc.ndim != 1 else acc.reshape(1, -1)
    y = np.empty(acc2.shape, np.float32)
    if bias is None:
        kernels.dequantize(acc2, out_scale, y)
    else:
        kernels.dequantize_bias(acc2, out_scale, bias, y)
    return y.reshape(acc.shape)


@functools.cache
def _numba_kernels():
    """quantize, dequantize and dequantize_bias compiled by numba (cached on disk): one pass
    each where numpy takes five and three (measured 1024 x 1536: 2.0 -> 0.94 ms with the
    range; 0.27 -> 0.10 ms), with numpy's float32 rounding (no fast-math)."""
    import types

    import numba

    @numba.njit(cache=True, nogil=True)
    def quantize(x, scale, zero, out):
        flat_x, flat_out = x.reshape(-1), out.reshape(-1)
        for i in range(flat_x.size):
            v = np.rint(flat_x[i] / scale) + np.float32(zero)
            flat_out[i] = np.uint8(min(max(v, np.float32(0)), np.float32(255)))
        return out

    @numba.njit(cache=True, nogil=True)
    def dequantize(acc, scale, out):
        for i in range(acc.shape[0]):
            for j in range(acc.shape[1]):
                out[i, j] = np.float32(acc[i, j]) * scale[j]

    @numba.njit(cache=True, nogil=True)
    def dequantize_bias(acc, scale, bias, out):
        for i in range(acc.shape[0]):
            for j in range(acc.shape[1]):
                out[i, j] = np.float32(acc[i, j]) * scale[j] + bias[j]

    return types.SimpleNamespace(quantize=quantize, dequantize=dequantize,
                                 dequantize_bias=dequantize_bias)
