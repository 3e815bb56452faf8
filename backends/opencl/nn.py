"""Fused row kernels for the composites softmax, log_softmax and layer_norm, and attention.

A row is the elements along one axis (any axis: strided); a work-group takes a row
through its passes (max, sum of exponentials kept in the output, scale; or mean,
variance, write) with a local-memory tree between passes. Short rows, and many rows on
CPU devices, take one work-item per row instead (no barriers, which PoCL pays for).
Attention is GEMM with the scale fused (Q K^T read transposed in place), a row softmax
with the causal mask fused, and GEMM.
"""

from __future__ import annotations

import math

import numpy as np

from hal import dtypes as dt

from . import cltypes
from .gemm import gemm
from .table import kernels


def _row_source(d, out_d, kind: str, group: int, weight: bool, bias: bool, causal: bool) -> str:
    acc = "double" if d == dt.float64 else "float"
    params = [f"__global {cltypes.storage(out_d)} *out", f"__global const {cltypes.storage(d)} *x",
              "long x_off", "long n", "long inner", f"{acc} eps", "long lq",
              "long shift"]
    if weight:
        params.append(f"__global const {cltypes.storage(d)} *w")
    if bias:
        params.append(f"__global const {cltypes.storage(d)} *b")
    read = cltypes.load(d, "x", "base + j * inner")
    value = f"(({acc}){read})"
    if causal:
        value = f"(j > (row % lq) + shift ? -INFINITY : {value})"
    first = "sum" if kind == "layer_norm" else "max"

    def reduce_block(name, init, update, combine):
        code = [f"{acc} {name} = {init};",
                f"for (long j = lid; j < n; j += {group}) {{ const {acc} v = {value}; {update} }}"]
        if group > 1:
            code += [f"part[lid] = {name};", "barrier(CLK_LOCAL_MEM_FENCE);",
                     f"for (int s = {group // 2}; s > 0; s >>= 1) {{",
                     f"  if (lid < s) part[lid] = {combine('part[lid]', 'part[lid + s]')};",
                     "  barrier(CLK_LOCAL_MEM_FENCE);", "}",
                     f"{name} = part[0];", "barrier(CLK_LOCAL_MEM_FENCE);"]
        return code

    if group > 1:
        lines = ["const long row = get_group_id(0);", "const int lid = get_local_id(0);"]
    else:
        lines = ["const long row = get_global_id(0);", "const int lid = 0;"]
    lines.append("const long base = x_off + (row / inner) * n * inner + row % inner;")
    at = "base + j * inner - x_off"
    if group > 1:
        lines.append(f"__local {acc} part[{group}];")
    if first == "max":
        lines += reduce_block("m", "-INFINITY", "m = (v > m || v != v) ? v : m;",
                              lambda a, b: f"(({b} > {a} || {b} != {b}) ? {b} : {a})")
        if kind == "softmax":  # keep each exponential in out: one exp per element
            keep = cltypes.store(out_d, "out", at, "e")
            lines += reduce_block("s", "0", f"const {acc} e = exp(v - m); s += e; {keep}",
                                  lambda a, b: f"{a} + {b}")
            lines.append(f"for (long j = lid; j < n; j += {group}) "
                         + cltypes.store(out_d, "out", at, f"{cltypes.load(out_d, 'out', at)} / s"))
            return _kernel(d, out_d, group, params, lines)
        lines += reduce_block("s", "0", "s += exp(v - m);", lambda a, b: f"{a} + {b}")
        result = "v - m - log(s)"
    else:
        lines += reduce_block("m", "0", "m += v;", lambda a, b: f"{a} + {b}")
        lines.append("m /= n;")
        lines += reduce_block("s", "0", "s += (v - m) * (v - m);", lambda a, b: f"{a} + {b}")
        lines.append("const " + acc + " r = rsqrt(s / n + eps);")
        result = "(v - m) * r"
        if weight:
            result = f"({result}) * {cltypes.load(d, 'w', 'j')}"
        if bias:
            result = f"({result}) + {cltypes.load(d, 'b', 'j')}"
    lines.append(f"for (long j = lid; j < n; j += {group}) {{ const {acc} v = {value}; "
                 + cltypes.store(out_d, "out", at, result) + " }")
    return _kernel(d, out_d, group, params, lines)


def _kernel(d, out_d, group, params, lines) -> str:
    attr = f"__attribute__((reqd_work_group_size({group}, 1, 1))) " if group > 1 else ""
    return (cltypes.preamble([d, out_d]) + f"__kernel {attr}void rows(" + ", ".join(params)
            + ")\n{\n  " + "\n  ".join(lines) + "\n}\n")


def rows(device, op: str, kind: str, x, axis: int, *, weight=None, bias=None, eps=0.0,
         causal_lengths=None, out_dtype=None):
    """Run a row kernel over every row of x along axis; returns the new array."""
    out = device.empty(x.shape, out_dtype or x.dtype)
    if x.size == 0:
        return out
    shape = tuple(x.shape) or (1,)
    axis %= len(shape)
    n = shape[axis]
    inner = math.prod(shape[axis + 1:])
    count = x.size // n
    many = device.is_cpu and count >= 16 * device.cl_device.max_compute_units
    group = 1 if n <= 32 or many else device.group_size(min(256, 1 << (n - 1).bit_length()))
    source = _row_source(x.dtype, out.dtype, kind, group, weight is not None, bias is not None,
                         causal_lengths is not None)
    kernel = device.build(op, source, "rows")
    lq, lk = causal_lengths or (1, 1)
    real = np.float64 if x.dtype == dt.float64 else np.float32
    args = [out.base_data, x.base_data, np.int64(x.offset // x.dtype.itemsize), np.int64(n),
            np.int64(inner), real(eps), np.int64(lq), np.int64(lk - lq)]
    args += [p.base_data for p in (weight, bias) if p is not None]
    if group > 1:
        device.run(kernel, (count * group,), (group,), *args)
    else:
        device.run_items(kernel, count, *args, group=device.group_size(64))
    return out


@kernels.register("softmax")
def softmax(device, x, *, axis=-1):
    """exp(x - max) / sum along axis, one kernel."""
    return rows(device, "softmax", "softmax", x, axis if x.ndim else 0)


@kernels.register("log_softmax")
def log_softmax(device, x, *, axis=-1):
    """x - max - log(sum(exp(x - max))) along axis, one kernel."""
    return rows(device, "log_softmax", "log_softmax", x, axis if x.ndim else 0)


@kernels.register("layer_norm")
def layer_norm(device, x, weight=None, bias=None, *, eps=1e-5):
    """(x - mean) / sqrt(var + eps) * weight + bias over the last axis, one kernel."""
    return rows(device, "layer_norm", "layer_norm", x, -1, weight=weight, bias=bias, eps=eps)


@kernels.register("scaled_dot_product_attention")
def attention(device, q, k, v, *, causal=False, scale=None):
    """softmax(q k^T * scale, causal mask) v: scaled GEMM, masked row softmax, GEMM.

    float16 inputs keep the scores and probabilities in float32.
    """
    inner = dt.float32 if q.dtype == dt.float16 else q.dtype
    s = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = gemm(device, "scaled_dot_product_attention", q, k, out_dtype=inner,
                  transpose_b=True, scale=s)
    lengths = (q.shape[-2], k.shape[-2]) if causal else None
    probs = rows(device, "scaled_dot_product_attention", "softmax", scores, -1,
                 causal_lengths=lengths)
    return gemm(device, "scaled_dot_product_attention", probs, v, out_dtype=q.dtype)
