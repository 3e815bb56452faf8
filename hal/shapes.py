"""Shape rules shared by the op declarations: axes, broadcasting, contraction, indexing.

Every function raises ShapeError naming the op and the shapes, so a bad call fails
here, before any backend sees it.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from .errors import ShapeError


def axis(op: str, value, ndim: int) -> int:
    """A non-negative axis in range for ndim."""
    try:
        a = operator.index(value)
    except TypeError:
        raise ShapeError(f"{op}: axis must be an int, got {value!r}") from None
    if not -ndim <= a < ndim:
        raise ShapeError(f"{op}: axis {a} is out of range for a {ndim}-d tensor "
                         f"(valid: {-ndim}..{ndim - 1})" if ndim else
                         f"{op}: axis {a} given for a 0-d tensor, which has no axes")
    return a % ndim


def axes(op: str, value, ndim: int, *, allow_none: bool = True) -> tuple[int, ...]:
    """Sorted unique non-negative axes; None means all axes."""
    if value is None:
        if not allow_none:
            raise ShapeError(f"{op}: axes must be given")
        return tuple(range(ndim))
    items = (value,) if isinstance(value, (int, np.integer)) else tuple(value)
    out = tuple(axis(op, a, ndim) for a in items)
    if len(set(out)) != len(out):
        raise ShapeError(f"{op}: repeated axis in {value!r}")
    return out


def broadcast(op: str, *shapes: tuple) -> tuple:
    """The broadcast shape of operands, as numpy broadcasts them."""
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        raise ShapeError(
            f"{op}: shapes {', '.join(map(str, shapes))} do not broadcast together; "
            "each dimension must match or be 1"
        ) from None


def reduced(shape: tuple, reduce_axes: tuple[int, ...], keepdims: bool) -> tuple:
    """The shape after reducing over axes."""
    if keepdims:
        return tuple(1 if i in reduce_axes else n for i, n in enumerate(shape))
    return tuple(n for i, n in enumerate(shape) if i not in reduce_axes)


def matmul(op: str, a: tuple, b: tuple) -> tuple:
    """numpy.matmul's output shape: batched, broadcasting, 1-d operands promoted and removed."""
    if not a or not b:
        raise ShapeError(f"{op}: operands must be at least 1-d, got shapes {a} and {b}")
    a2 = (1, *a) if len(a) == 1 else a
    b2 = (*b, 1) if len(b) == 1 else b
    if a2[-1] != b2[-2]:
        raise ShapeError(
            f"{op}: contraction dimensions differ: {a} @ {b} ({a2[-1]} != {b2[-2]}); "
            "the last axis of the first operand must equal the second-to-last of the second"
        )
    batch = broadcast(op, a2[:-2], b2[:-2])
    out = (*batch, a2[-2], b2[-1])
    if len(a) == 1:
        out = out[:-2] + out[-1:]
    if len(b) == 1:
        out = out[:-1]
    return out


def reshape(op: str, shape: tuple, new_shape) -> tuple:
    """A target shape with at most one -1 resolved; ShapeError if the sizes differ."""
    items = (new_shape,) if isinstance(new_shape, (int, np.integer)) else tuple(new_shape)
    new = [operator.index(n) for n in items]
    size = math.prod(shape)
    unknown = [i for i, n in enumerate(new) if n == -1]
    if len(unknown) > 1 or any(n < -1 for n in new):
        raise ShapeError(f"{op}: shape {tuple(new)} may hold one -1 and no other negative size")
    known = math.prod(n for n in new if n != -1)
    if unknown:
        if known == 0 or size % known:
            raise ShapeError(f"{op}: cannot reshape {shape} (size {size}) to {tuple(new)}")
        new[unknown[0]] = size // known
    if math.prod(new) != size:
        raise ShapeError(f"{op}: cannot reshape {shape} (size {size}) to {tuple(new)}")
    return tuple(new)


def index_bounds(shape: tuple, key) -> tuple[tuple, tuple, tuple]:
    """Resolve basic indexing (ints, slices, None, Ellipsis) into slice bounds and a reshape.

    Returns (bounds, result_shape, sliced_shape): bounds is one (start, step, count) per
    axis for the `slice` op; result_shape drops int-indexed axes and inserts None axes.
    """
    key = key if isinstance(key, tuple) else (key,)
    for k in key:
        if not (k is None or k is Ellipsis or isinstance(k, (slice, int, np.integer))):
            raise ShapeError(
                f"index: only basic indexing (ints, slices, None, ...) is supported, got "
                f"{type(k).__name__}; use hal.where or a gather of your own for the rest"
            )
    if sum(k is Ellipsis for k in key) > 1:
        raise ShapeError("index: at most one Ellipsis (...)")
    used = sum(k is not None and k is not Ellipsis for k in key)
    if used > len(shape):
        raise ShapeError(f"index: {used} indices for a {len(shape)}-d tensor of shape {shape}")
    if Ellipsis in key:
        at = key.index(Ellipsis)
        key = key[:at] + (slice(None),) * (len(shape) - used) + key[at + 1:]
    else:
        key = key + (slice(None),) * (len(shape) - used)
    bounds, result, dim = [], [], 0
    for k in key:
        if k is None:
            result.append(1)
            continue
        n = shape[dim]
        if isinstance(k, slice):
            start, stop, step = k.indices(n)
            count = len(range(start, stop, step))
            bounds.append((start if count else 0, step, count))
            result.append(count)
        else:
            i = operator.index(k)
            if not -n <= i < n:
                raise ShapeError(f"index: {i} is out of bounds for axis {dim} of size {n}")
            bounds.append((i % n, 1, 1))
        dim += 1
    sliced = tuple(c for _, _, c in bounds)
    return tuple(bounds), tuple(result), sliced
