"""Movement ops: reshape, permute_dims, broadcast_to, slice, concat, pad (primitives), take
and dynamic_update_slice (extended) and roll (a composite): they move elements without
computing new values."""

from __future__ import annotations

import numpy as np

from ..runtime import dtypes as dt
from ..runtime.errors import DomainError, ShapeError
from . import shapes
from .spec import COMPOSITE, EXTENDED, PRIMITIVE, check_dtype, declare


def _reshape_meta(x, *, shape):
    return shapes.reshape("reshape", tuple(x.shape), shape), x.dtype


def _permute_meta(x, *, axes):
    perm = shapes.axes("permute_dims", axes, x.ndim, allow_none=False)
    if len(perm) != x.ndim:
        raise ShapeError(f"permute_dims: axes {axes!r} is not a permutation of {x.ndim} axes")
    return tuple(x.shape[a] for a in perm), x.dtype


def _broadcast_to_meta(x, *, shape):
    shape = shapes.as_shape("broadcast_to", shape)
    if len(shape) < x.ndim or shapes.broadcast("broadcast_to", x.shape, shape) != shape:
        raise ShapeError(f"broadcast_to: shape {tuple(x.shape)} cannot broadcast to {shape}")
    return shape, x.dtype


def _slice_meta(x, *, bounds):
    if len(bounds) != x.ndim:
        raise ShapeError(f"slice: {len(bounds)} bounds for a {x.ndim}-d tensor")
    for dim, (start, step, count) in zip(x.shape, bounds):
        last = start + step * (count - 1)
        if step == 0 or count < 0 or (count and not (0 <= start < dim and 0 <= last < dim)):
            raise ShapeError(f"slice: bounds {(start, step, count)} out of range for size {dim}")
    return tuple(c for _, _, c in bounds), x.dtype


def slice_index(bounds) -> tuple[slice, ...]:
    """The numpy index of a slice op's (start, step, count) bounds, one per axis."""
    index = []
    for start, step, count in bounds:
        stop = start + step * count
        index.append(slice(start, stop if stop >= 0 else None, step))
    return tuple(index)


def _slice_ref(x, *, bounds):
    return x[slice_index(bounds)]


def _concat_meta(*xs, axis=0):
    if not xs:
        raise ShapeError("concat: needs at least one tensor")
    first = xs[0]
    if first.ndim == 0:
        raise ShapeError("concat: 0-d tensors cannot be concatenated; reshape them to 1-d")
    a = shapes.axis("concat", axis, first.ndim)
    for x in xs[1:]:
        if x.ndim != first.ndim or any(
            m != n for i, (m, n) in enumerate(zip(x.shape, first.shape)) if i != a
        ):
            raise ShapeError(
                f"concat: shapes {[tuple(t.shape) for t in xs]} differ outside axis {a}"
            )
    shape = list(first.shape)
    shape[a] = sum(x.shape[a] for x in xs)
    return tuple(shape), first.dtype


PAD_MODES = ("constant", "edge", "wrap")


def _pad_meta(x, *, pad_width, mode="constant", value=0):
    if mode not in PAD_MODES:
        raise ShapeError(f"pad: mode {mode!r} is not one of {', '.join(PAD_MODES)}")
    if len(pad_width) != x.ndim or any(len(p) != 2 or min(p) < 0 for p in pad_width):
        raise ShapeError(
            f"pad: pad_width needs one non-negative (before, after) pair per axis of "
            f"{tuple(x.shape)}, got {pad_width!r}"
        )
    if mode != "constant" and any(n == 0 and sum(p) for n, p in zip(x.shape, pad_width)):
        raise ShapeError(f"pad: mode {mode!r} cannot pad an empty axis of {tuple(x.shape)}")
    if mode == "wrap" and any(b > n or a > n for n, (b, a) in zip(x.shape, pad_width)):
        raise ShapeError(f"pad: wrap padding wider than the axis in {tuple(x.shape)}")
    return tuple(n + b + a for n, (b, a) in zip(x.shape, pad_width)), x.dtype


def _pad_ref(x, *, pad_width, mode="constant", value=0):
    if x.ndim == 0:
        return x.copy()
    if mode == "constant":
        return np.pad(x, pad_width, mode="constant", constant_values=value)
    return np.pad(x, pad_width, mode=mode)


declare(
    "reshape", PRIMITIVE, "movement", dt.ALL,
    lambda x, *, shape: np.reshape(x, shapes.reshape("reshape", x.shape, shape)), _reshape_meta,
)
declare("permute_dims", PRIMITIVE, "movement", dt.ALL, np.transpose, _permute_meta)
declare("broadcast_to", PRIMITIVE, "movement", dt.ALL, np.broadcast_to, _broadcast_to_meta)
declare("slice", PRIMITIVE, "movement", dt.ALL, _slice_ref, _slice_meta)
declare(
    "concat", PRIMITIVE, "movement", dt.ALL,
    lambda *xs, axis=0: np.concatenate(xs, axis=axis), _concat_meta, promote=(-1,),
)
declare("pad", PRIMITIVE, "movement", dt.ALL, _pad_ref, _pad_meta)


def _roll_meta(x, *, shift, axis=None):
    shifts = shapes.ints("roll", "shift", shift)
    if axis is None and not isinstance(shift, (int, np.integer)):
        raise ShapeError(f"roll: shift {shift!r} with axis None (the flattened tensor) must be "
                         "one int; give axis a tuple as long as shift")
    if axis is not None:
        ax = shapes.ints("roll", "axis", axis)
        if len(shifts) != len(ax):
            raise ShapeError(f"roll: {len(shifts)} shifts for {len(ax)} axes")
        shapes.axes("roll", ax, x.ndim)
    return tuple(x.shape), x.dtype


declare("roll", COMPOSITE, "movement", dt.ALL,
        lambda x, *, shift, axis=None: np.roll(x, shift, axis=axis), _roll_meta)


def _take_meta(x, indices, *, axis=None):
    check_dtype("take", indices.dtype, dt.INTEGERS, "indices")
    if axis is None:
        return tuple(indices.shape), x.dtype
    a = shapes.axis("take", axis, x.ndim)
    return (*x.shape[:a], *indices.shape, *x.shape[a + 1:]), x.dtype


def _take_domain(x, indices, *, axis=None):
    n = x.size if axis is None else x.shape[axis]
    idx = np.asarray(indices)
    if idx.size and not (-n <= idx.min() and idx.max() < n):
        bad = idx.min() if idx.min() < -n else idx.max()
        raise DomainError(f"take: index {bad} is out of range for an axis of size {n} "
                          f"(valid: {-n}..{n - 1})")


declare("take", EXTENDED, "take", dt.ALL, lambda x, i, *, axis=None: np.take(x, i, axis),
        _take_meta, promote=(), domain=_take_domain)


def update_window(shape: tuple, size: tuple, starts) -> tuple[slice, ...]:
    """The slices of a tensor of `shape` that dynamic_update_slice writes a `size` block to
    at `starts` (host ints), each start clamped into 0..dim - size (XLA's rule)."""
    window = []
    for s, dim, n in zip(np.asarray(starts).tolist(), shape, size):
        s = min(max(s, 0), dim - n)
        window.append(slice(s, s + n))
    return tuple(window)


def _dynamic_update_slice_meta(operand, update, start_indices):
    name = "dynamic_update_slice"
    check_dtype(name, update.dtype, (operand.dtype,), "update")
    check_dtype(name, start_indices.dtype, dt.INTEGERS, "start_indices")
    if update.ndim != operand.ndim or any(u > o for u, o in zip(update.shape, operand.shape)):
        raise ShapeError(f"{name}: update of shape {tuple(update.shape)} does not fit in "
                         f"operand of shape {tuple(operand.shape)}; it needs as many axes, "
                         "none longer")
    if tuple(start_indices.shape) != (operand.ndim,):
        raise ShapeError(f"{name}: start_indices of shape {tuple(start_indices.shape)} must be "
                         f"({operand.ndim},), one start per axis of the operand")
    return tuple(operand.shape), operand.dtype


def _dynamic_update_slice_ref(operand, update, start_indices):
    out = np.array(operand)
    out[update_window(operand.shape, update.shape, start_indices)] = update
    return out


declare("dynamic_update_slice", EXTENDED, "update", dt.ALL, _dynamic_update_slice_ref,
        _dynamic_update_slice_meta, promote=(), inplace=0)
