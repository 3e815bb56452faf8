"""The Array API's searching and set functions: searchsorted (composed of ops), and nonzero
and the unique_* family, whose result shapes depend on the input's values.

Those are computed on the host with numpy and their results uploaded to the input's
device: eager only, refused with a HalError while hal.jit traces (`host_values`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .functions import (
    astype,
    isnan,
    less,
    less_equal,
    logical_and,
    logical_not,
    logical_or,
    reshape,
    sum,
)
from .manipulation import host_values
from .runtime import dtypes as dt
from .runtime.errors import ArgumentError, ShapeError
from .tensor import Tensor, tensor_argument


def nonzero(x, /) -> tuple[Tensor, ...]:
    """The int64 indices of x's non-zero elements, one tensor per axis (row-major order)."""
    x = tensor_argument("nonzero", x)
    if x.ndim == 0:
        raise ShapeError("nonzero: a 0-d tensor has no axes to index; reshape it to 1-d")
    found = np.nonzero(host_values("nonzero", x))
    return tuple(Tensor.from_host(i.astype(np.int64), x.device) for i in found)


class UniqueAll(NamedTuple):
    """unique_all's result: the values, first indices, inverse indices and counts."""

    values: Tensor
    indices: Tensor
    inverse_indices: Tensor
    counts: Tensor


class UniqueCounts(NamedTuple):
    """unique_counts' result."""

    values: Tensor
    counts: Tensor


class UniqueInverse(NamedTuple):
    """unique_inverse's result."""

    values: Tensor
    inverse_indices: Tensor


def _unique(op: str, x):
    """(values, first indices, inverse (x's shape), counts) as numpy arrays, NaNs distinct
    as the Array API asks (numpy 2 merges them)."""
    x = tensor_argument(op, x)
    a = host_values(op, x)
    flat = a.reshape(-1)
    values, index, inverse, counts = np.unique(flat, return_index=True, return_inverse=True,
                                               return_counts=True, equal_nan=False)
    return x, values, index, inverse.reshape(a.shape), counts


def _up(x: Tensor, *arrays):
    return [Tensor.from_host(a if a.dtype == x.dtype else a.astype(np.int64), x.device)
            for a in arrays]


def unique_values(x, /) -> Tensor:
    """The distinct values of x, sorted, as a 1-d tensor (each NaN distinct)."""
    x, values, *_ = _unique("unique_values", x)
    return _up(x, values)[0]


def unique_counts(x, /) -> UniqueCounts:
    """The distinct values of x and how often each occurs."""
    x, values, _, _, counts = _unique("unique_counts", x)
    return UniqueCounts(*_up(x, values, counts))


def unique_inverse(x, /) -> UniqueInverse:
    """The distinct values of x and, for each element of x, its value's index among them."""
    x, values, _, inverse, _ = _unique("unique_inverse", x)
    return UniqueInverse(*_up(x, values, inverse))


def unique_all(x, /) -> UniqueAll:
    """The distinct values, the index of each one's first occurrence, the inverse indices
    and the counts."""
    x, values, index, inverse, counts = _unique("unique_all", x)
    return UniqueAll(*_up(x, values, index, inverse, counts))


def searchsorted(x1, x2, /, *, side: str = "left", sorter=None) -> Tensor:
    """int64 insertion points of x2's values in the sorted 1-d x1 that keep it sorted
    (side "left": before equal elements, "right": after them); NaN sorts last, as numpy.

    Composed of ops as the count of x1's elements ordered before each value (an
    x1.size-by-x2.size comparison: simple and traceable, quadratic in memory).
    """
    x1 = tensor_argument("searchsorted", x1)
    if x1.ndim != 1:
        raise ShapeError(f"searchsorted: x1 must be 1-d, shape is {x1.shape}")
    if side not in ("left", "right"):
        raise ArgumentError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    if sorter is not None:
        from .functions import take

        x1 = take(x1, sorter, axis=0)
    x2 = tensor_argument("searchsorted", x2, "x2")
    values = reshape(x2, (*x2.shape, 1))
    before = less(x1, values) if side == "left" else less_equal(x1, values)
    if dt.is_floating(x1.dtype):  # numpy's order: NaN after every number, NaNs equal
        nan_value = isnan(values)
        if side == "left":
            before = logical_or(before, logical_and(nan_value, logical_not(isnan(x1))))
        else:
            before = logical_or(before, nan_value)
    elif dt.is_bool(x1.dtype):
        raise ArgumentError("searchsorted: bool x1 is not accepted; cast it to an integer "
                            "dtype with hal.astype")
    return astype(sum(before, axis=-1), dt.int64)


