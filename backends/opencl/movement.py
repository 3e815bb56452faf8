"""Movement ops: reshape is a view; permute, broadcast, slice and concat are strided copies;
pad and roll are one gather kernel that maps each output index back into the input;
dynamic_update_slice scatters the update at starts read on the device.
"""

from __future__ import annotations

import math

import numpy as np

from hal import shapes

from . import cltypes, strided
from .table import kernels


def copy(device, op: str, source: strided.View, shape) -> object:
    """A new contiguous array holding a strided view."""
    out = device.empty(shape, source.dtype)
    strided.run(device, op, "a0", [source], strided.dense(out), tuple(shape))
    return out


@kernels.register("reshape")
def reshape(device, x, *, shape):
    """The same buffer seen in a new shape (tensors are contiguous: no copy)."""
    return device.view(x, shapes.reshape("reshape", x.shape, shape))


@kernels.register("permute_dims")
def permute_dims(device, x, *, axes):
    """Axes reordered, copied into a contiguous array."""
    view = strided.dense(x)
    shape = tuple(x.shape[a] for a in axes)
    return copy(device, "permute_dims",
                strided.View(x, tuple(view.strides[a] for a in axes), view.offset), shape)


@kernels.register("broadcast_to")
def broadcast_to(device, x, *, shape):
    """x broadcast to shape, materialised."""
    return copy(device, "broadcast_to", strided.broadcast(x, tuple(shape)), tuple(shape))


@kernels.register("slice")
def slice_(device, x, *, bounds):
    """A strided slice: one (start, step, count) per axis, copied out."""
    view = strided.dense(x)
    offset = view.offset + sum(start * s for (start, _, count), s in zip(bounds, view.strides)
                               if count)
    strides = tuple(step * s for (_, step, _), s in zip(bounds, view.strides))
    return copy(device, "slice", strided.View(x, strides, offset),
                tuple(count for _, _, count in bounds))


@kernels.register("concat")
def concat(device, *xs, axis=0):
    """Tensors joined along an axis: each one copied into its band of the output."""
    axis %= xs[0].ndim
    shape = list(xs[0].shape)
    shape[axis] = sum(x.shape[axis] for x in xs)
    out = device.empty(shape, xs[0].dtype)
    full = strided.dense(out)
    start = 0
    for x in xs:
        band = strided.View(out, full.strides, full.offset + start * full.strides[axis])
        strided.run(device, "concat", "a0", [strided.dense(x)], band, tuple(x.shape))
        start += x.shape[axis]
    return out


def gather(device, op: str, x, out_shape, before, mode: str, value=0):
    """out[i] = x[map(i - before)] per axis; outside x: `value` (constant), clamp (edge), wrap."""
    out_shape = tuple(out_shape)
    out = device.empty(out_shape, x.dtype)
    total = math.prod(out_shape)
    if total == 0:
        return out
    key = ("gather", op, x.dtype, x.shape, out_shape, tuple(before), mode)
    found = device.cache.get(key)
    if found is None:
        found = device.cache[key] = _gather_kernel(device, op, x, out_shape, before, mode)
    kernel, tail = found
    device.run_items(kernel, total, out.base_data, x.base_data, x.offset // x.dtype.itemsize,
                     cltypes.scalar(x.dtype, value), *tail)
    return out


def _gather_kernel(device, op: str, x, out_shape, before, mode: str):
    """gather's built kernel and its arguments after (out, x, x offset, fill)."""
    ndim = len(out_shape)
    d = x.dtype
    lines = ["const long i = get_global_id(0);", "long r = i, src = 0;",
             "int inside = 1;"]
    in_strides = strided.dense_strides(x.shape)
    for k in range(ndim - 1, -1, -1):
        lines.append(f"{{ long j = r % od{k} - b{k}; r /= od{k};")
        if mode == "constant":
            lines.append(f"  inside &= (j >= 0 && j < id{k});")
        elif mode == "edge":
            lines.append(f"  j = clamp(j, 0L, id{k} - 1);")
        else:
            lines.append(f"  j = ((j % id{k}) + id{k}) % id{k};")
        lines.append(f"  src += j * {in_strides[k]}L; }}")
    value_type = cltypes.compute(d)
    read = cltypes.load(d, "x", "x_off + src")
    if mode == "constant":
        lines += [f"{value_type} v = fill;", f"if (inside) v = {read};"]
    else:
        lines.append(f"{value_type} v = {read};")
    lines.append(cltypes.store(d, "out", "i", "v"))
    params = [f"__global {cltypes.storage(d)} *out", f"__global const {cltypes.storage(d)} *x",
              "long x_off", f"{value_type} fill"]
    params += [f"long od{k}, long id{k}, long b{k}" for k in range(ndim)]
    source = (cltypes.preamble([d]) + "__kernel void gather(" + ", ".join(params) + ")\n{\n  "
              + "\n  ".join(lines) + "\n}\n")
    tail = tuple(v for k in range(ndim) for v in (out_shape[k], x.shape[k], before[k]))
    return device.build(op, source, "gather"), tail


@kernels.register("pad")
def pad(device, x, *, pad_width, mode="constant", value=0):
    """x padded per axis by (before, after): constant value, edge values, or wrapped."""
    if x.ndim == 0:
        return copy(device, "pad", strided.dense(x), ())
    shape = tuple(n + b + a for n, (b, a) in zip(x.shape, pad_width))
    return gather(device, "pad", x, shape, [b for b, _ in pad_width], mode, value)


@kernels.register("roll")
def roll(device, x, *, shift, axis=None):
    """Elements shifted cyclically along axes (flattened when axis is None)."""
    if axis is None:
        flat = device.view(x, (x.size,))
        return device.view(roll(device, flat, shift=shift, axis=0), x.shape)
    shifts = (shift,) if isinstance(shift, int) else tuple(shift)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    before = [0] * x.ndim
    for s, a in zip(shifts, axes):
        before[a % x.ndim] += s
    before = [b % n if n else 0 for b, n in zip(before, x.shape)]
    return gather(device, "roll", x, tuple(x.shape), before, "wrap")


def _update_source(d: np.dtype, index: np.dtype, ndim: int) -> str:
    """One work-item per update element: its place in out, each start clamped on the device."""
    lines = ["const long i = get_global_id(0);", "long r = i, dst = 0, stride = 1;"]
    for k in range(ndim - 1, -1, -1):
        lines.append(f"{{ const long s = clamp((long)st[st_off + {k}], 0L, od{k} - ud{k});"
                     f" dst += (s + r % ud{k}) * stride; r /= ud{k}; stride *= od{k}; }}")
    lines.append(cltypes.store(d, "out", "out_off + dst", cltypes.load(d, "u", "u_off + i")))
    params = [f"__global {cltypes.storage(d)} *out", "long out_off",
              f"__global const {cltypes.storage(d)} *u", "long u_off",
              f"__global const {cltypes.storage(index)} *st", "long st_off",
              *(f"long od{k}, long ud{k}" for k in range(ndim))]
    return (cltypes.preamble([d]) + "__kernel void update(" + ", ".join(params) + ")\n{\n  "
            + "\n  ".join(lines) + "\n}\n")


@kernels.register("dynamic_update_slice")
def dynamic_update_slice(device, operand, update, start_indices, *, out=None):
    """operand copied into out (a new array; none when hal.jit passes operand itself), then
    update scattered at the clamped starts."""
    if out is None:
        out = copy(device, "dynamic_update_slice", strided.dense(operand), operand.shape)
    elif out is not operand:
        strided.run(device, "dynamic_update_slice", "a0", [strided.dense(operand)],
                    strided.dense(out), tuple(operand.shape))
    if update.size == 0:
        return out
    kernel = device.build("dynamic_update_slice",
                          _update_source(out.dtype, start_indices.dtype, out.ndim), "update")
    item = (out.dtype.itemsize, update.dtype.itemsize, start_indices.dtype.itemsize)
    dims = [np.int64(n) for pair in zip(out.shape, update.shape) for n in pair]
    device.run_items(kernel, update.size, out.base_data, np.int64(out.offset // item[0]),
                     update.base_data, np.int64(update.offset // item[1]),
                     start_indices.base_data, np.int64(start_indices.offset // item[2]), *dims)
    return out


dynamic_update_slice.takes_out = True
