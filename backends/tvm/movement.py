"""Movement: reshape is a view of the same memory; transposes, broadcasts, strided slices,
concatenation, padding, take and dynamic_update_slice are copy kernels.
"""

from __future__ import annotations

import numpy as np
from tvm import te, tirx, topi

from .table import kernels


def permute(x: te.Tensor, *, axes: tuple) -> te.Tensor:
    """x with its axes reordered."""
    shape = tuple(int(x.shape[a]) for a in axes)

    def value(*i):
        index = [None] * len(axes)
        for out_axis, in_axis in enumerate(axes):
            index[in_axis] = i[out_axis]
        return x(*index)

    return te.compute(shape, value, name="out")


def broadcast(x: te.Tensor, *, shape: tuple) -> te.Tensor:
    """x broadcast to shape."""
    from . import te_util as tu

    return te.compute(shape, lambda *i: tu.at(x, i, shape), name="out")


def strided_slice(x: te.Tensor, *, bounds: tuple) -> te.Tensor:
    """Elements start + step * i along each axis, count of them."""
    shape = tuple(c for _, _, c in bounds)
    return te.compute(shape, lambda *i: x(*[s + st * k for (s, st, _), k in zip(bounds, i)]),
                      name="out")


def concat(*xs: te.Tensor, axis: int) -> te.Tensor:
    """The inputs joined along an axis."""
    sizes = [int(x.shape[axis]) for x in xs]
    shape = list(int(n) for n in xs[0].shape)
    shape[axis] = sum(sizes)

    def value(*i):
        starts = [sum(sizes[:k]) for k in range(len(xs))]
        result = _take(xs[-1], i, axis, starts[-1])
        for x, start, size in reversed(list(zip(xs[:-1], starts[:-1], sizes[:-1]))):
            inside = tirx.all(i[axis] >= start, i[axis] < start + size)
            result = tirx.Select(inside, _take(x, i, axis, start), result) if size else result
        return result

    return te.compute(tuple(shape), value, name="out")


def _take(x: te.Tensor, i: tuple, axis: int, start: int):
    size = int(x.shape[axis])
    k = tirx.max(tirx.min(i[axis] - start, size - 1), 0) if size else 0
    return x(*i[:axis], k, *i[axis + 1:])


def pad(x: te.Tensor, *, pad_width: tuple, mode: str, value) -> te.Tensor:
    """x padded with a constant, its edge values or wrapped around."""
    shape = tuple(int(n) + b + a for n, (b, a) in zip(x.shape, pad_width))
    sizes = [int(n) for n in x.shape]
    fill = tirx.const(value, str(x.dtype))

    def at(*i):
        index, inside = [], []
        for k, n, (before, _) in zip(i, sizes, pad_width):
            j = k - before
            if mode == "constant":
                inside.append(tirx.all(j >= 0, j < n))
                index.append(tirx.max(tirx.min(j, n - 1), 0))
            elif mode == "edge":
                index.append(tirx.max(tirx.min(j, n - 1), 0))
            else:  # wrap: at most one period each side (checked by the op's meta)
                index.append(tirx.Select(j < 0, j + n, tirx.Select(j >= n, j - n, j)))
        v = x(*index)
        return tirx.Select(tirx.all(*inside), v, fill) if len(inside) > 1 else (
            tirx.Select(inside[0], v, fill) if inside else v)

    return te.compute(shape, at, name="out")


def take(x: te.Tensor, indices: te.Tensor, *, axis: int | None) -> te.Tensor:
    """x's elements at indices along axis (None: of x flattened); a negative index counts
    from the end (the op's domain check has refused any out of range). x is not empty."""
    return topi.take(x, indices, axis=axis, mode="wrap")


def update_slice(x: te.Tensor, update: te.Tensor, starts: te.Tensor) -> te.Tensor:
    """x with update in the window at starts (read on the device, each clamped so the
    update fits): a copy that selects the update inside the window."""
    sizes = [(int(n), int(u)) for n, u in zip(x.shape, update.shape)]

    def value(*i):
        if any(u == 0 for _, u in sizes):
            return x(*i)
        inside, index = [], []
        for k, (j, (n, u)) in enumerate(zip(i, sizes)):  # clamped, then as an index
            start = tirx.max(tirx.min(starts[k], n - u), 0).astype("int32")
            inside += [j >= start, j < start + u]
            index.append(tirx.max(tirx.min(j - start, u - 1), 0))
        return tirx.Select(tirx.all(*inside), update(*index), x(*i)) if inside else update()

    return te.compute(tuple(n for n, _ in sizes), value, name="out")


@kernels.register("reshape")
def _reshape(device, x, *, shape, out_shape, out_dtype):
    return device.view(x, out_shape)


@kernels.register("permute_dims")
def _permute_dims(device, x, *, axes):
    from hal import shapes

    perm = shapes.axes("permute_dims", axes, len(x.shape), allow_none=False)
    return device.run("permute_dims", permute, [x], axes=tuple(perm))


@kernels.register("broadcast_to")
def _broadcast_to(device, x, *, shape):
    return device.run("broadcast_to", broadcast, [x], shape=tuple(int(n) for n in shape))


@kernels.register("slice")
def _slice(device, x, *, bounds):
    return device.run("slice", strided_slice, [x], bounds=tuple(map(tuple, bounds)))


@kernels.register("concat")
def _concat(device, *xs, axis=0):
    from hal import shapes

    a = shapes.axis("concat", axis, len(xs[0].shape))
    return device.run("concat", concat, list(xs), axis=a)


@kernels.register("pad")
def _pad(device, x, *, pad_width, mode="constant", value=0):
    if len(x.shape) == 0:
        return x  # nothing to pad; tensors are immutable, so the input itself is the result
    value = bool(value) if x.dtype == np.bool_ else value
    return device.run("pad", pad, [x], pad_width=tuple(map(tuple, pad_width)), mode=mode,
                      value=value)


@kernels.register("take")
def _take_kernel(device, x, indices, *, axis=None, out_shape, out_dtype):
    from hal import shapes

    if 0 in x.shape:  # an empty result (topi.take would divide by the size 0 of x)
        return device.empty(out_shape, out_dtype)
    a = None if axis is None else shapes.axis("take", axis, len(x.shape))
    return device.run("take", take, [x, indices], axis=a)


@kernels.register("dynamic_update_slice")
def _dynamic_update_slice(device, x, update, start_indices):
    return device.run("dynamic_update_slice", update_slice, [x, update, start_indices])
