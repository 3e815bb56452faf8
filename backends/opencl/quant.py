"""int8 quantization (ONNX QuantizeLinear/DequantizeLinear), per tensor or per channel.

Scale and zero point are broadcast by strides (a zero stride everywhere, or a unit stride
along the channel axis), so each op is one pass of the strided elementwise engine.
qmatmul, the int32-accumulating matrix product, is in gemm.py.
"""

from __future__ import annotations

from hal import dtypes as dt

from . import cltypes, strided
from .table import kernels


def _param_view(p, x, axis) -> strided.View:
    """A scale or zero point seen over x's shape: per tensor (0-d) or per channel along axis."""
    strides = [0] * x.ndim
    if p.ndim == 1:
        strides[axis % x.ndim] = 1
    return strided.View(p, tuple(strides), p.offset // p.dtype.itemsize)


def _run(device, op, expr, x, scale, zero_point, axis, out_dtype):
    out = device.empty(x.shape, out_dtype)
    views = [strided.dense(x), _param_view(scale, x, axis), _param_view(zero_point, x, axis)]
    strided.run(device, op, expr, views, strided.dense(out), tuple(x.shape))
    return out


@kernels.register("quantize_linear")
def quantize_linear(device, x, scale, zero_point, *, axis=-1):
    """saturate(rint(x / scale) + zero_point) in int8 or uint8 (x divided in float32); NaN
    gives the minimum (fmax of NaN and lo is lo), as the reference and ONNX Runtime do."""
    lo, hi = cltypes.INTEGER_LIMITS[zero_point.dtype]
    expr = f"fmin(fmax(rint((float)a0 / a1) + (float)a2, {float(lo)!r}f), {float(hi)!r}f)"
    return _run(device, "quantize_linear", expr, x, scale, zero_point, axis, zero_point.dtype)


@kernels.register("dequantize_linear")
def dequantize_linear(device, q, scale, zero_point, *, axis=-1):
    """(q - zero_point) * scale in float32."""
    expr = "(float)((int)a0 - (int)a2) * a1"
    return _run(device, "dequantize_linear", expr, q, scale, zero_point, axis, dt.float32)
