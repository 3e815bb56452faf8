"""Shape rules shared by the op declarations: axes, broadcasting, contraction, indexing.

Every function raises ShapeError naming the op and the shapes, so a bad call fails
here, before any backend sees it.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from ..runtime.errors import ShapeError

MAX_RANK = 32  # tensors of more axes are refused (numpy's own limit is 64)


def ints(op: str, name: str, value) -> tuple[int, ...]:
    """An int, or a sequence of ints, as a tuple of ints; ShapeError naming the op and the
    argument otherwise (2.5, "x", None, (nan,))."""
    if isinstance(value, (int, np.integer)):
        value = (value,)
    try:
        if isinstance(value, (str, bytes, dict)):
            raise TypeError
        return tuple(operator.index(n) for n in value)
    except TypeError:
        raise ShapeError(f"{op}: {name} {value!r} is not an int or a sequence of ints; give "
                         "e.g. 3 or (2, 3)") from None


def as_shape(op: str, shape) -> tuple[int, ...]:
    """A shape argument (an int, or a sequence of ints) as a tuple of sizes >= 0, at most
    MAX_RANK of them; ShapeError naming the op otherwise (2.5, "x", (-1,), (nan,))."""
    sizes = ints(op, "shape", shape)
    if any(n < 0 for n in sizes):
        raise ShapeError(f"{op}: shape {sizes} has a negative size; sizes are 0 or more")
    check_rank(op, sizes)
    return sizes


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
    if not isinstance(value, (int, np.integer, tuple)):
        raise ShapeError(f"{op}: axis must be None, an int or a tuple of ints, got {value!r}")
    items = (value,) if isinstance(value, (int, np.integer)) else value
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
    new = list(ints(op, "shape", new_shape))
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
    Python bools insert one axis where the first stands, as numpy's: of size 1 when all
    are True, else 0 (which empties the result: the first axis is sliced to nothing).
    """
    key = key if isinstance(key, tuple) else (key,)
    key = _bools_as_new_axis(shape, key)
    for k in key:
        if not (k is None or k is Ellipsis or k is _EMPTY_AXIS
                or isinstance(k, (slice, int, np.integer))):
            raise ShapeError(
                f"index: only basic indexing (ints, slices, None, ...) is supported, got "
                f"{type(k).__name__}; use hal.where or a gather of your own for the rest"
            )
    if sum(k is Ellipsis for k in key) > 1:
        raise ShapeError("index: at most one Ellipsis (...)")
    used = sum(k is not None and k is not Ellipsis and k is not _EMPTY_AXIS for k in key)
    if used > len(shape):
        raise ShapeError(f"index: {used} indices for a {len(shape)}-d tensor of shape {shape}")
    if Ellipsis in key:
        at = key.index(Ellipsis)
        key = key[:at] + (slice(None),) * (len(shape) - used) + key[at + 1:]
    else:
        key = key + (slice(None),) * (len(shape) - used)
    bounds, result, dim = [], [], 0
    for k in key:
        if k is None or k is _EMPTY_AXIS:
            result.append(0 if k is _EMPTY_AXIS else 1)
            continue
        n = shape[dim]
        if isinstance(k, slice):
            try:
                start, stop, step = k.indices(n)
            except (TypeError, ValueError) as e:  # a zero step, a bound that is no integer
                raise ShapeError(f"index: slice {k} of axis {dim}: {e}") from None
            count = len(range(start, stop, step))
            bounds.append((start if count else 0, step, count))
            result.append(count)
        else:
            i = operator.index(k)
            if not -n <= i < n:
                raise ShapeError(f"index: {i} is out of bounds for axis {dim} of size {n}")
            bounds.append((i % n, 1, 1))
        dim += 1
    if _EMPTY_AXIS in key:
        bounds[0] = (0, 1, 0)
    sliced = tuple(c for _, _, c in bounds)
    return tuple(bounds), tuple(result), sliced


_EMPTY_AXIS = object()  # in a key: a new axis of size 0 (from a False index)


def _bools_as_new_axis(shape: tuple, key: tuple) -> tuple:
    """key with its Python bools made one new axis at the first: None when all are True,
    else _EMPTY_AXIS. A False that would empty a 0-d tensor, and bools beside integers
    (numpy makes them one advanced index), are ShapeErrors."""
    flags = [i for i, k in enumerate(key) if isinstance(k, (bool, np.bool_))]
    if not flags:
        return key
    if any(isinstance(k, (int, np.integer)) and i not in flags for i, k in enumerate(key)):
        raise ShapeError("index: Python bools beside integer indices are not supported; "
                         "index with the integers first, then add the axis with None")
    empty = not all(key[i] for i in flags)
    if empty and not shape:
        raise ShapeError("index: x[False] of a 0-d tensor is not supported; index "
                         "hal.reshape(x, (1,)) with [:0] instead")
    axis = _EMPTY_AXIS if empty else None
    return tuple(axis if i == flags[0] else k for i, k in enumerate(key) if i not in flags[1:])


def check_rank(op: str, shape: tuple) -> None:
    """ShapeError for a shape of more than MAX_RANK axes."""
    if len(shape) > MAX_RANK:
        raise ShapeError(f"{op}: {len(shape)} axes exceed hal's limit of {MAX_RANK}; "
                         "reshape to fewer axes")
