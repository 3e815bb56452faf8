"""Movement ops with cupy: views where cupy makes them (tensors are immutable), copies
otherwise. bfloat16 moves as its uint16 bit patterns, so no arithmetic touches it."""

from __future__ import annotations

import numpy as np

from hal import dtypes as dt
from hal import ops, shapes

from .elementwise import bits, from_bits
from .table import register


def _as_bits(fn):
    """`fn` applied to bit patterns of its array operands, the result viewed back."""

    def moved(*xs, **params):
        return from_bits(fn(*[bits(x) for x in xs], **params), xs[0].dtype)

    moved.__doc__ = fn.__doc__
    return moved


@register("reshape")
@_as_bits
def reshape(x, *, shape):
    """The elements in a new shape (-1 resolved as the op set resolves it)."""
    return x.reshape(shapes.reshape("reshape", x.shape, shape))


@register("permute_dims")
@_as_bits
def permute_dims(x, *, axes):
    """Axes permuted (a view)."""
    return x.transpose(tuple(a % x.ndim for a in axes))


@register("broadcast_to")
@_as_bits
def broadcast_to(x, *, shape):
    """x broadcast to shape (a view with zero strides)."""
    import cupy

    return cupy.broadcast_to(x, tuple(shape))


@register("slice")
@_as_bits
def slice_(x, *, bounds):
    """Strided slices per axis: (start, step, count) (a view, by the reference's indexing)."""
    return ops.spec("slice").reference(x, bounds=bounds)


@register("concat")
@_as_bits
def concat(*xs, axis=0):
    """Tensors joined along an axis."""
    import cupy

    return cupy.concatenate(xs, axis=axis)


@register("pad")
def pad(x, *, pad_width, mode="constant", value=0):
    """Padding per axis: constant (value), edge or wrap."""
    import cupy

    if x.ndim == 0:
        return x.copy()
    if mode != "constant":
        return from_bits(cupy.pad(bits(x), pad_width, mode=mode), x.dtype)
    if x.dtype == dt.bfloat16:  # the value's bit pattern pads the bit patterns
        value = np.asarray(value, dt.bfloat16).view(np.uint16).item()
    return from_bits(cupy.pad(bits(x), pad_width, mode="constant", constant_values=value),
                     x.dtype)


@register("roll")
@_as_bits
def roll(x, *, shift, axis=None):
    """Elements shifted cyclically along axes (flattened when axis is None)."""
    import cupy

    return cupy.roll(x, shift, axis=axis)


@register("take")
@_as_bits
def take(x, indices, *, axis=None):
    """Elements at indices along axis (of the flattened x when None); negative indices
    count from the end, as cupy's take wraps them (the op's domain check has refused
    indices out of range)."""
    import cupy

    return cupy.take(x, indices, axis=axis)


def dynamic_update_slice(operand, update, start_indices, *, out=None):
    """operand copied into out (operand itself where hal.jit passes it and it is
    contiguous), then update scattered to the flat places of its window: each start is
    clamped on the device, so nothing is read back to the host (capture records it)."""
    import cupy

    if out is None or not out.flags.c_contiguous:  # bfloat16 moves as its bit patterns
        out = from_bits(cupy.array(bits(operand), order="C"), operand.dtype)
    elif out is not operand:
        bits(out)[...] = bits(operand)
    if update.size == 0:
        return out
    places = 0
    strides = [s // out.itemsize for s in out.strides]
    for k, (n, u, stride) in enumerate(zip(out.shape, update.shape, strides)):
        start = cupy.minimum(cupy.maximum(start_indices[k], 0), n - u)
        rows = (cupy.arange(u) + start) * stride
        places = places + rows.reshape((u,) + (1,) * (out.ndim - k - 1))
    bits(out).reshape(-1)[places] = bits(update)
    return out


dynamic_update_slice.takes_out = True
register("dynamic_update_slice")(dynamic_update_slice)
