"""int8 kernels: quantize_linear, dequantize_linear (per tensor or per channel), qmatmul
(int32 accumulation), and quantized_linear.

uint8 x int8 products whose K is a multiple of 4 and N of 16 take the VNNI layout: the
weight is packed as [N/16, K/4, 16, 4] (block "vnni_pack") so that the schedule can
tensorize the inner 16 x 4 block into one `vpdpbusd` (schedule.py); zero points are
applied afterwards from row and column sums by a second kernel, so the core product is a
plain u8 x s8 sum that meta_schedule can tune (it fails on a matmul whose epilogue reads
other reductions).
Other shapes and signed activations accumulate in int32 over an int32-packed weight.
"""

from __future__ import annotations

import math

import numpy as np
from tvm import te, tirx

from . import target
from .linalg import as_matrix, product
from .table import kernels

VNNI_COLS, VNNI_K = 16, 4


def _channel(p: te.Tensor, i: tuple, axis: int):
    """A scale or zero point for index i: the scalar, or the entry along the channel axis."""
    return p() if len(p.shape) == 0 else p(i[axis])


def quantize(x: te.Tensor, scale: te.Tensor, zero: te.Tensor, *, axis: int) -> te.Tensor:
    """saturate(rint(x / scale) + zero_point), divided in float32; NaN gives the minimum."""
    out = str(zero.dtype)
    limits = (-128.0, 127.0) if out == "int8" else (0.0, 255.0)
    lo, hi = (tirx.const(v, "float32") for v in limits)

    def value(*i):
        v = x(*i).astype("float32") / _channel(scale, i, axis)
        q = te.nearbyint(v) + _channel(zero, i, axis).astype("float32")  # ties to even
        return tirx.Select(te.isnan(q), lo, te.max(te.min(q, hi), lo)).astype(out)

    return te.compute(x.shape, value, name="out")


def dequantize(q: te.Tensor, scale: te.Tensor, zero: te.Tensor, *, axis: int) -> te.Tensor:
    """(q - zero_point) * scale in float32."""
    def value(*i):
        diff = q(*i).astype("int32") - _channel(zero, i, axis).astype("int32")
        return diff.astype("float32") * _channel(scale, i, axis)

    return te.compute(q.shape, value, name="out")


def vnni_ok(a_dtype: str, k: int, n: int) -> bool:
    """True if a u8 x s8 product of this K and N can use the VNNI layout on this CPU."""
    return (a_dtype == "uint8" and k > 0 and n > 0 and k % VNNI_K == 0 and n % VNNI_COLS == 0
            and target.has_vnni())


def vnni_product(a: te.Tensor, b: te.Tensor) -> te.Tensor:
    """sum_k a[m, k] * b[k, n] in int32 over b packed [N/16, K/4, 16, 4] (no zero points)."""
    m, k = (int(s) for s in a.shape)
    n = int(b.shape[1])
    r = te.reduce_axis((0, k), name="k")
    packed = te.compute((n // VNNI_COLS, k // VNNI_K, VNNI_COLS, VNNI_K),
                        lambda jo, ko, ji, ki: b(ko * VNNI_K + ki, jo * VNNI_COLS + ji),
                        name="vnni_pack")
    return te.compute((m, n), lambda i, j: te.sum(
        a(i, r).astype("int32") *
        packed(j // VNNI_COLS, r // VNNI_K, j % VNNI_COLS, r % VNNI_K).astype("int32"),
        axis=r), name="vnni_matmul")


def raw_product(a: te.Tensor, b: te.Tensor, *, vnni: bool) -> te.Tensor:
    """sum_k a[m, k] * b[k, n] in int32, no zero points (VNNI layout when vnni)."""
    return vnni_product(a, b) if vnni else product(a, b, "int32")


def corrected(a: te.Tensor, b: te.Tensor, raw: te.Tensor, *, a_zero: int,
              b_zero: int) -> te.Tensor:
    """(a - a_zero) @ (b - b_zero) from raw = a @ b: raw - za colsum(b) - zb rowsum(a) +
    K za zb, each sum computed only where its zero point is nonzero."""
    k = int(a.shape[1])
    za, zb = tirx.const(a_zero, "int32"), tirx.const(b_zero, "int32")
    cols = _sums(b, 0, "colsum") if a_zero else None
    rows = _sums(a, 1, "rowsum") if b_zero else None

    def value(i, j):
        v = raw(i, j) + tirx.const(k * a_zero * b_zero, "int32")
        if cols is not None:
            v = v - za * cols(j)
        if rows is not None:
            v = v - zb * rows(i)
        return v

    return te.compute(raw.shape, value, name="out")


def _sums(t: te.Tensor, axis: int, name: str) -> te.Tensor:
    """int32 sums of a 2-d tensor along an axis."""
    r = te.reduce_axis((0, int(t.shape[axis])), name=f"{name}_r")
    if axis == 1:
        return te.compute((int(t.shape[0]),), lambda i: te.sum(t(i, r).astype("int32"), axis=r),
                          name=name)
    return te.compute((int(t.shape[1]),), lambda j: te.sum(t(r, j).astype("int32"), axis=r),
                      name=name)


def qmatmul(a: te.Tensor, b: te.Tensor, *, a_zero: int, b_zero: int) -> te.Tensor:
    """(a - a_zero) @ (b - b_zero) accumulated in int32 over an int32-packed weight."""
    return product(a, b, "int32", a_zero, b_zero)


def qparams(x: te.Tensor) -> te.Tensor:
    """[scale, zero point] of x for uint8 (hal.ops.dynamic_qparams, in float32)."""
    m, k = (int(s) for s in x.shape)
    f32, zero_f = "float32", tirx.const(0, "float32")
    r1, c1 = te.reduce_axis((0, m), name="r1"), te.reduce_axis((0, k), name="c1")
    lo = te.compute((), lambda: te.min(x[r1, c1], axis=[r1, c1]), name="lo")
    r2, c2 = te.reduce_axis((0, m), name="r2"), te.reduce_axis((0, k), name="c2")
    hi = te.compute((), lambda: te.max(x[r2, c2], axis=[r2, c2]), name="hi")

    def value(i):
        lo0, hi0 = te.min(lo(), zero_f), te.max(hi(), zero_f)
        raw_scale = (hi0 - lo0) / tirx.const(255, f32)
        scale = tirx.Select(raw_scale == zero_f, tirx.const(1, f32), raw_scale)
        zero = te.max(te.min(te.nearbyint(-lo0 / scale), tirx.const(255, f32)), zero_f)
        return tirx.Select(i == 0, scale, zero)

    return te.compute((2,), value, name="out")


def dynamic_quantize(x: te.Tensor, params: te.Tensor) -> te.Tensor:
    """x quantized to uint8 with [scale, zero point] (ONNX DynamicQuantizeLinear)."""
    f32 = "float32"
    return te.compute(x.shape, lambda i, j: te.max(te.min(
        te.nearbyint(x[i, j] / params[0]) + params[1], tirx.const(255, f32)),
        tirx.const(0, f32)).astype("uint8"), name="out")


def dequantized(w: te.Tensor, raw: te.Tensor, params: te.Tensor, w_scale: te.Tensor,
                *bias: te.Tensor) -> te.Tensor:
    """(raw - zero * colsum(w)) * scale * w_scale + bias: the product of the quantized x and
    w in float32."""
    cols = _sums(w, 0, "colsum")

    def value(i, j):
        acc = raw(i, j) - params[1].astype("int32") * cols(j)
        y = acc.astype("float32") * (params[0] * w_scale[j])
        return y + bias[0][j] if bias else y

    return te.compute(raw.shape, value, name="out")


@kernels.register("quantized_linear")
def _quantized_linear(device, x, weight, weight_scale, bias=None, *, out_shape, out_dtype):
    """Four kernels: x's scale and zero point, quantize x, the int8 product (VNNI where it
    fits), rescale. Separate so that meta_schedule never computes x's range per element."""
    shape = out_shape
    rows = math.prod(x.shape[:-1])
    if x.shape[-1] == 0:  # an empty sum: the bias alone (no loops to compile)
        host = device.download(bias) if bias is not None else np.zeros(shape[-1:], np.float32)
        return device.upload(np.broadcast_to(host, shape))
    x2 = device.view(x, (rows, x.shape[-1]))
    params = device.run("quantized_linear", qparams, [x2])
    q = device.run("quantized_linear", dynamic_quantize, [x2, params])
    vnni = vnni_ok("uint8", weight.shape[0], weight.shape[1])
    raw = device.run("quantized_linear", raw_product, [q, weight], vnni=vnni)
    inputs = [weight, raw, params, weight_scale] + ([bias] if bias is not None else [])
    return device.view(device.run("quantized_linear", dequantized, inputs), shape)


@kernels.register("quantize_linear")
def _quantize(device, x, scale, zero_point, *, axis=-1):
    a = axis % len(x.shape) if len(x.shape) else 0
    return device.run("quantize_linear", quantize, [x, scale, zero_point], axis=a)


@kernels.register("dequantize_linear")
def _dequantize(device, q, scale, zero_point, *, axis=-1):
    a = axis % len(q.shape) if len(q.shape) else 0
    return device.run("dequantize_linear", dequantize, [q, scale, zero_point], axis=a)


@kernels.register("qmatmul")
def _qmatmul(device, a, b, *, a_zero_point=0, b_zero_point=0, out_shape, out_dtype):
    """One kernel; with VNNI (u8 x s8, K % 4 == 0, N % 16 == 0) the raw product and, for
    nonzero zero points, a correction kernel."""
    shape = out_shape
    a2 = as_matrix(device, a, False) if len(a.shape) == 1 else a
    b2 = as_matrix(device, b, True) if len(b.shape) == 1 else b
    if len(b2.shape) == 2 and len(a2.shape) > 2:  # batch of rows times one matrix
        a2 = device.view(a2, (math.prod(a2.shape[:-1]), a2.shape[-1]))
    za, zb = int(a_zero_point), int(b_zero_point)
    if len(a2.shape) == 2 and len(b2.shape) == 2 and vnni_ok(a2.dtype.name, a2.shape[1],
                                                              b2.shape[1]):
        out = device.run("qmatmul", raw_product, [a2, b2], vnni=True)
        if za or zb:
            out = device.run("qmatmul", corrected, [a2, b2, out], a_zero=za, b_zero=zb)
    else:
        out = device.run("qmatmul", qmatmul, [a2, b2], a_zero=za, b_zero=zb)
    return device.view(out, shape)
