"""The Array API's manipulation functions that compose the movement ops: flip, tile, repeat,
tril, triu, moveaxis, broadcast_arrays, meshgrid, unstack.

Each is slices, reshapes, broadcasts and `where` over the op set, so every backend runs
it with its own kernels, `hal.jit` records it and autograd differentiates it. The one
exception: `repeat` with per-element counts (a tensor) has a result shape that depends on
the counts' values, so it reads them on the host (refused while tracing).
"""

from __future__ import annotations

import operator

import numpy as np

from .compile.trace import Tracer
from .functions import broadcast_to, permute_dims, reshape, slice, take, where
from .ops import arguments, shapes
from .runtime.errors import HalError, ShapeError, UnsupportedDType
from .tensor import Tensor, tensor_argument


def flip(x, /, *, axis=None) -> Tensor:
    """x with the order of elements reversed along axis (all axes when None)."""
    x = tensor_argument("flip", x)
    flipped = set(shapes.axes("flip", axis, x.ndim))
    bounds = tuple((n - 1, -1, n) if i in flipped and n > 0 else (0, 1, n)
                   for i, n in enumerate(x.shape))
    return slice(x, bounds)


def moveaxis(x, source, destination, /) -> Tensor:
    """x with axes `source` moved to positions `destination` (the others keep their order)."""
    x = tensor_argument("moveaxis", x)
    src = shapes.axes("moveaxis", source, x.ndim)
    dst = shapes.axes("moveaxis", destination, x.ndim)
    if isinstance(source, int) != isinstance(destination, int) or len(src) != len(dst):
        raise ShapeError(f"moveaxis: source {source!r} and destination {destination!r} must "
                         "name as many axes")
    order = [a for a in range(x.ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute_dims(x, order)


def tile(x, repetitions, /) -> Tensor:
    """x repeated `repetitions[i]` times along each axis (numpy.tile; leading axes added)."""
    x = tensor_argument("tile", x)
    reps = shapes.ints("tile", "repetitions", repetitions)
    if any(r < 0 for r in reps):
        raise ShapeError(f"tile: repetitions {reps} must be >= 0")
    ndim = max(x.ndim, len(reps))
    reps = (1,) * (ndim - len(reps)) + tuple(reps)
    shape = (1,) * (ndim - x.ndim) + tuple(x.shape)
    # a new axis of each repetition count before each axis, broadcast, then merged
    spread = reshape(x, [v for n in shape for v in (1, n)])
    wide = broadcast_to(spread, [v for r, n in zip(reps, shape) for v in (r, n)])
    return reshape(wide, [r * n for r, n in zip(reps, shape)])


def repeat(x, repeats, /, *, axis: int | None = None) -> Tensor:
    """Each element of x repeated along axis (of the flattened x when None), as numpy.repeat:
    `repeats` an int (every element alike) or a 1-d integer tensor or list (one count per
    element; the result's shape then depends on the counts, which are read on the host)."""
    x = tensor_argument("repeat", x)
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    a = shapes.axis("repeat", axis, x.ndim)
    if isinstance(repeats, (int, np.integer)) and not isinstance(repeats, bool):
        r = operator.index(repeats)
        if r < 0:
            raise ShapeError(f"repeat: repeats {r} must be >= 0")
        n = x.shape[a]
        spread = reshape(x, (*x.shape[:a + 1], 1, *x.shape[a + 1:]))
        wide = broadcast_to(spread, (*x.shape[:a + 1], r, *x.shape[a + 1:]))
        return reshape(wide, (*x.shape[:a], n * r, *x.shape[a + 1:]))
    counts = host_values("repeat", repeats)
    if counts.size and counts.dtype.kind not in "iu":
        raise UnsupportedDType(f"repeat: repeats must be an int or integer counts, got "
                               f"{repeats!r:.60}")
    counts = counts.astype(np.int64).reshape(-1)
    if counts.size not in (1, x.shape[a]) or (counts < 0).any():
        raise ShapeError(f"repeat: repeats must be >= 0 and one per element along axis {a} "
                         f"({x.shape[a]}) or a single count, got {counts.size} counts")
    index = np.repeat(np.arange(x.shape[a]), np.broadcast_to(counts, (x.shape[a],)))
    return take(x, Tensor.from_host(index, x.device), axis=a)


def host_values(op: str, values) -> np.ndarray:
    """The values of a tensor (or list) on the host, for a result whose shape depends on
    them; refused while hal.jit traces (a traced value has no data)."""
    if isinstance(values, Tracer):
        raise HalError(f"{op}: its result's shape depends on the input's values, which "
                       "hal.jit cannot record; call it outside the jitted function (it runs "
                       "eagerly: the values are read on the host and the result uploaded)")
    return values.numpy() if isinstance(values, Tensor) else np.asarray(values)


def _triangle(op: str, x, k: int, keep_lower: bool) -> Tensor:
    x = tensor_argument(op, x)
    if x.ndim < 2:
        raise ShapeError(f"{op}: needs at least 2 axes, shape is {x.shape}")
    rows, cols = x.shape[-2:]
    k = arguments.integer(op, "k", k)
    offset = np.arange(cols)[None, :] - np.arange(rows)[:, None]  # column - row
    mask = offset <= k if keep_lower else offset >= k
    return where(Tensor.from_host(mask, x.device), x, Tensor.from_host(
        np.zeros((), x.dtype), x.device))


def tril(x, /, *, k: int = 0) -> Tensor:
    """The lower triangle of the last two axes (elements above diagonal k zeroed)."""
    return _triangle("tril", x, k, True)


def triu(x, /, *, k: int = 0) -> Tensor:
    """The upper triangle of the last two axes (elements below diagonal k zeroed)."""
    return _triangle("triu", x, k, False)


def broadcast_arrays(*arrays) -> list[Tensor]:
    """The tensors broadcast to their common shape."""
    arrays = [tensor_argument("broadcast_arrays", a, "each of arrays") for a in arrays]
    shape = shapes.broadcast("broadcast_arrays", *(a.shape for a in arrays))
    return [broadcast_to(a, shape) for a in arrays]


def meshgrid(*arrays, indexing: str = "xy") -> list[Tensor]:
    """Coordinate grids from 1-d tensors, as numpy.meshgrid ("xy": the first two axes
    swapped, "ij": matrix indexing)."""
    if indexing not in ("xy", "ij"):
        raise ShapeError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    arrays = [tensor_argument("meshgrid", a, "each of arrays") for a in arrays]
    if any(a.ndim != 1 for a in arrays):
        raise ShapeError("meshgrid: every array must be 1-d, shapes are "
                         f"{[a.shape for a in arrays]}")
    sizes = [a.shape[0] for a in arrays]
    if indexing == "xy" and len(arrays) > 1:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for i, a in enumerate(arrays):
        at = (1 - i if i < 2 else i) if indexing == "xy" and len(arrays) > 1 else i
        out.append(broadcast_to(reshape(a, [-1 if j == at else 1 for j in range(len(sizes))]),
                                sizes))
    return out


def unstack(x, /, *, axis: int = 0) -> tuple[Tensor, ...]:
    """The slices of x along axis, as a tuple of tensors one axis smaller."""
    x = tensor_argument("unstack", x)
    a = shapes.axis("unstack", axis, x.ndim)
    rest = (*x.shape[:a], *x.shape[a + 1:])
    return tuple(reshape(slice(x, tuple((i, 1, 1) if j == a else (0, 1, n)
                                        for j, n in enumerate(x.shape))), rest)
                 for i in range(x.shape[a]))

