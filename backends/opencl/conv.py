"""Convolution and pooling kernels: conv, max_pool and avg_pool over 1 to 3 spatial axes in
either layout, one work-item per output element.

The sizes are constants of each program (PoCL unrolls and vectorises the tap loops), so a
program serves one shape; PoCL caches its binaries. A direct loop, no tiling: it keeps the
data on the device; the CPU backend's ONNX Runtime path is far faster on a CPU.
"""

from __future__ import annotations

import math

from hal import dtypes as dt
from hal.ops import conv as C

from . import cltypes
from .table import kernels

_DTYPES = (dt.float16, dt.float32, dt.float64)


def _indexing(shape, layout: str) -> list[str]:
    """Lines splitting the work-item id into n, ch and o0.. for an output of this shape."""
    r = len(shape) - 2
    names = ["n", "ch", *(f"o{a}" for a in range(r))]
    order = names if layout == "channels_first" else ["n", *names[2:], "ch"]
    lines, rest = ["long rest = get_global_id(0);"], list(zip(order, _dims(shape)))
    for name, size in reversed(rest[1:]):
        lines.append(f"const long {name} = rest % {size}; rest /= {size};")
    return [*lines, "const long n = rest;"]


def _dims(shape):
    return [int(s) for s in shape]


def _flat(order: list[str], shape) -> str:
    """The row-major index of the named coordinates over shape."""
    expr = order[0]
    for name, size in zip(order[1:], _dims(shape)[1:], strict=True):
        expr = f"({expr}) * {size} + {name}"
    return expr


def _taps(kernel, stride, padding, dilation, spatial, body: list[str]) -> list[str]:
    """Nested loops over the kernel taps with the input position p<a>, skipping padding."""
    lines, close = [], []
    for a, (k, s, (lo, _), d, size) in enumerate(zip(kernel, stride, padding, dilation,
                                                     spatial, strict=True)):
        lines += [f"for (long k{a} = 0; k{a} < {k}; ++k{a}) {{",
                  f"  const long p{a} = o{a} * {s} + k{a} * {d} - {lo};",
                  f"  if (p{a} < 0 || p{a} >= {size}) continue;"]
        close.append("}")
    return lines + body + close


def _source(op: str, d, x_shape, out_shape, layout: str, body: list[str], result: str,
            extra_params: list[str], init: str) -> str:
    acc = "double" if d == dt.float64 else "float"
    r = len(x_shape) - 2
    lines = _indexing(out_shape, layout)
    x_order = ["n", "c", *(f"p{a}" for a in range(r))] if layout == "channels_first" \
        else ["n", *(f"p{a}" for a in range(r)), "c"]
    params = [f"__global {cltypes.storage(d)} *out", f"__global const {cltypes.storage(d)} *x",
              "long x_off", *extra_params]
    at = f"x_off + {_flat(x_order, x_shape)}"
    lines += [f"{acc} acc = {init};", *[line.replace("XAT", at) for line in body],
              cltypes.store(d, "out", "get_global_id(0)", result)]
    return (cltypes.preamble([d]) + f"__kernel void {op}(" + ", ".join(params) + ")\n{\n  "
            + "\n  ".join(lines) + "\n}\n")


def _spatial(shape, layout: str):
    return _dims(shape[2:] if layout == "channels_first" else shape[1:-1])


@kernels.register("conv", _DTYPES)
def conv(device, x, weight, bias=None, *, stride=1, padding=0, dilation=1, groups=1,
         layout="channels_first", out_shape, out_dtype):
    """Cross-correlation, one output element per work-item."""
    r = x.ndim - 2
    stride = C.per_axis("conv", "stride", stride, r, 1)
    pads = C.pads("conv", padding, r)
    dilation = C.per_axis("conv", "dilation", dilation, r, 1)
    o, cg, *kernel = _dims(weight.shape)
    og = o // groups
    d = x.dtype
    acc = "double" if d == dt.float64 else "float"
    taps = " + ".join([f"cc * {math.prod(kernel)}"] + [f"k{a} * {math.prod(kernel[a + 1:])}"
                                                    for a in range(r)])
    read = cltypes.load(d, "x", "XAT")
    mac = [f"acc += ({acc}){read} * ({acc})"
           f"{cltypes.load(d, 'w', f'w_off + ch * {cg * math.prod(kernel)} + {taps}')};"]
    body = [f"for (long cc = 0; cc < {cg}; ++cc) {{",
            f"  const long c = (ch / {og}) * {cg} + cc;",
            *_taps(kernel, stride, pads, dilation, _spatial(x.shape, layout), mac), "}"]
    params = [f"__global const {cltypes.storage(d)} *w", "long w_off"]
    result = "acc"
    if bias is not None:
        params += [f"__global const {cltypes.storage(d)} *b", "long b_off"]
        result = f"acc + ({acc}){cltypes.load(d, 'b', 'b_off + ch')}"
    source = _source("conv", d, x.shape, out_shape, layout, body, result, params, "0")
    return _launch(device, "conv", source, x, out_shape, out_dtype, weight, bias)


def _pool(kind: str):
    def kernel(device, x, *, kernel, stride=None, padding=0, count_include_pad=False,
               layout="channels_first", out_shape, out_dtype):
        r = x.ndim - 2
        k = C.per_axis(kind, "kernel", kernel, r, 1)
        s = k if stride is None else C.per_axis(kind, "stride", stride, r, 1)
        pads = C.pads(kind, padding, r)
        d = x.dtype
        acc = "double" if d == dt.float64 else "float"
        read = f"({acc}){cltypes.load(d, 'x', 'XAT')}"
        body = ["const long c = ch;"]
        if kind == "max_pool":
            body += _taps(k, s, pads, (1,) * r, _spatial(x.shape, layout),
                          [f"{{ const {acc} v = {read}; acc = (v > acc || v != v) ? v : acc; }}"])
            result, init = "acc", "-INFINITY"
        else:
            body += [f"{acc} count = 0;", *_taps(k, s, pads, (1,) * r, _spatial(x.shape, layout),
                                                 [f"acc += {read}; count += 1;"])]
            result = f"acc / {float(math.prod(k))}" if count_include_pad else "acc / count"
            init = "0"
        source = _source(kind, d, x.shape, out_shape, layout, body, result, [], init)
        return _launch(device, kind, source, x, out_shape, out_dtype)

    return kernel


def _launch(device, op: str, source: str, x, out_shape, out_dtype, *params):
    out = device.empty(tuple(out_shape), out_dtype)
    if out.size == 0:
        return out
    args = [out.base_data, x.base_data, x.offset // x.dtype.itemsize]
    for p in params:
        if p is not None:
            args += [p.base_data, p.offset // p.dtype.itemsize]
    device.run_items(device.build(op, source, op), out.size, *args,
                     group=device.group_size(64))
    return out


kernels.register("max_pool", _DTYPES)(_pool("max_pool"))
kernels.register("avg_pool", _DTYPES)(_pool("avg_pool"))
