"""int8 quantization (ONNX QuantizeLinear / DequantizeLinear / MatMulInteger) and the
composite quantized_linear (dynamic uint8 activations, int8 weights, per-channel scales)."""

from __future__ import annotations

import numpy as np

from ..runtime import dtypes as dt
from ..runtime import host
from ..runtime.errors import ShapeError
from . import shapes
from .spec import COMPOSITE, EXTENDED, LOOSE, check_dtype, declare


def _qparams_meta(op, x, scale, zero_point, axis):
    check_dtype(op, scale.dtype, (dt.float32,), "scale")
    check_dtype(op, zero_point.dtype, (dt.int8, dt.uint8), "zero_point")
    if tuple(scale.shape) != tuple(zero_point.shape) or scale.ndim > 1:
        raise ShapeError(
            f"{op}: scale {tuple(scale.shape)} and zero_point {tuple(zero_point.shape)} must "
            "have one shape, scalar (per tensor) or 1-d (per channel along axis)"
        )
    if scale.ndim == 1:
        a = shapes.axis(op, axis, x.ndim)
        if x.shape[a] != scale.shape[0]:
            raise ShapeError(
                f"{op}: {scale.shape[0]} scales for axis {a} of size {x.shape[a]}"
            )


def _per_channel(p, x, axis):
    if p.ndim == 0:
        return p
    shape = [1] * x.ndim
    shape[axis % x.ndim] = -1
    return p.reshape(shape)


def _quantize_meta(x, scale, zero_point, *, axis=-1):
    _qparams_meta("quantize_linear", x, scale, zero_point, axis)
    return tuple(x.shape), zero_point.dtype


def _quantize_ref(x, scale, zero_point, *, axis=-1):
    """saturate(rint(x / scale) + zero_point); NaN gives the dtype's minimum, as ONNX Runtime."""
    info = np.iinfo(zero_point.dtype)
    s, z = _per_channel(scale, x, axis), _per_channel(zero_point, x, axis)
    q = np.rint(x.astype(np.float32) / s) + z.astype(np.float32)
    q = np.where(np.isnan(q), info.min, q)
    return np.clip(q, info.min, info.max).astype(zero_point.dtype)


def _dequantize_meta(q, scale, zero_point, *, axis=-1):
    _qparams_meta("dequantize_linear", q, scale, zero_point, axis)
    check_dtype("dequantize_linear", q.dtype, (zero_point.dtype,), "input (zero_point's)")
    return tuple(q.shape), scale.dtype


def _dequantize_ref(q, scale, zero_point, *, axis=-1):
    s, z = _per_channel(scale, q, axis), _per_channel(zero_point, q, axis)
    return (q.astype(np.int32) - z.astype(np.int32)).astype(np.float32) * s


def _qmatmul_meta(a, b, *, a_zero_point=0, b_zero_point=0):
    check_dtype("qmatmul", b.dtype, (dt.int8,), "second operand")
    for name, zp, d in (("a_zero_point", a_zero_point, a.dtype), ("b_zero_point", b_zero_point,
                                                                  b.dtype)):
        info = np.iinfo(d)
        if not info.min <= int(zp) <= info.max:
            raise ShapeError(f"qmatmul: {name}={zp} is outside the range of {d.name}")
    return shapes.matmul("qmatmul", tuple(a.shape), tuple(b.shape)), dt.int32


def _qmatmul_ref(a, b, *, a_zero_point=0, b_zero_point=0):
    a32 = a.astype(np.int64) - int(a_zero_point)
    b32 = b.astype(np.int64) - int(b_zero_point)
    return np.matmul(a32, b32).astype(np.int32)


declare(
    "quantize_linear", EXTENDED, "quant", dt.REALS, _quantize_ref, _quantize_meta,
    promote=(), differentiable=False,
)
declare(
    "dequantize_linear", EXTENDED, "quant", (dt.int8, dt.uint8), _dequantize_ref,
    _dequantize_meta, promote=(), differentiable=False, tolerance={dt.float32: (1e-6, 1e-7)},
)
declare(
    "qmatmul", EXTENDED, "quant", (dt.int8, dt.uint8), _qmatmul_ref, _qmatmul_meta,
    promote=(), differentiable=False,
)


U8S8 = "uint8 x int8"
U8U8 = "uint8 x uint8"
INT8_DOT_FLAGS = frozenset({"avx512_vnni", "avx_vnni", "amx_int8"})
"""CPU flags of units that sum uint8 x int8 products in int32 (VNNI vpdpbusd, AMX tdpbusd)."""


def int8_product_form(cpu_flags=None) -> str:
    """The operand form of an integer product (ONNX MatMulInteger) of a uint8 and an int8
    matrix on a CPU with `cpu_flags` (default: this one's): U8S8 where VNNI or AMX sums
    u8 x s8 products in int32; elsewhere U8U8 (the int8 operand and its zero point shifted
    by 128: the same differences), as x86-64 without them (vpmaddubsw) saturates pairs of
    u8 x s8 products in int16. Both are exact."""
    flags = host.cpu_flags() if cpu_flags is None else frozenset(cpu_flags)
    return U8S8 if flags & INT8_DOT_FLAGS else U8U8


def dynamic_qparams(lo: float, hi: float) -> tuple[np.float32, int]:
    """ONNX DynamicQuantizeLinear's uint8 scale and zero point for data in [lo, hi],
    in float32 arithmetic: the range is widened to hold 0, scale = range / 255 (1 for an
    all-zero input), zero point = saturate(rint(-lo / scale))."""
    lo32, hi32 = np.float32(min(lo, 0.0)), np.float32(max(hi, 0.0))
    scale = (hi32 - lo32) / np.float32(255)
    if scale == 0:
        scale = np.float32(1)
    return np.float32(scale), int(np.clip(np.rint(-lo32 / scale), 0, 255))


def _quantized_linear_meta(x, weight, weight_scale, bias=None):
    check_dtype("quantized_linear", weight.dtype, (dt.int8,), "weight")
    check_dtype("quantized_linear", weight_scale.dtype, (dt.float32,), "weight_scale")
    if weight.ndim != 2 or x.ndim < 1 or x.shape[-1] != weight.shape[0]:
        raise ShapeError(f"quantized_linear: x {tuple(x.shape)} and weight "
                         f"{tuple(weight.shape)} need x (..., K) and weight (K, N)")
    n = weight.shape[1]
    for name, p in (("weight_scale", weight_scale), ("bias", bias)):
        if p is not None and tuple(p.shape) != (n,):
            raise ShapeError(f"quantized_linear: {name} {tuple(p.shape)} must be ({n},)")
    if bias is not None:
        check_dtype("quantized_linear", bias.dtype, (dt.float32,), "bias")
    return (*x.shape[:-1], n), dt.float32


def _quantized_linear_ref(x, weight, weight_scale, bias=None):
    x = x.astype(np.float32)
    scale, zero = dynamic_qparams(float(x.min(initial=0.0)), float(x.max(initial=0.0)))
    q = np.clip(np.rint(x / scale) + np.float32(zero), 0, 255).astype(np.int32)
    acc = (q - zero) @ weight.astype(np.int32)
    y = acc.astype(np.float32) * (scale * weight_scale)
    return y if bias is None else y + bias


declare(
    "quantized_linear", COMPOSITE, "quant", (dt.float32,), _quantized_linear_ref,
    _quantized_linear_meta, promote=(), differentiable=False, tolerance=LOOSE,
)
