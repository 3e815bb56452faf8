"""Scans and sorts: cumulative_sum through topi.cumsum, sort and argsort through topi.argsort.

Both topi ops are extern kernels: cumsum a loop nest of its own, argsort a call into TVM's
runtime sort (a std::stable_sort, so ties keep their order both ways). That sort takes only
int32, int64 and float keys, and orders NaN at random; so every dtype is sorted by an integer
key built in TE that orders as numpy does: -0 equal to 0 and every NaN above +inf (last
ascending, first descending). sort gathers x by the order argsort found.
"""

from __future__ import annotations

from tvm import te, tirx, topi

from hal import shapes

from .table import kernels


def cumulative_sum(x: te.Tensor, *, axis: int, include_initial: bool, out: str) -> te.Tensor:
    """The running sum of x along axis in dtype out, with a leading 0 if include_initial."""
    shape = [int(n) for n in x.shape]
    out_shape = list(shape)
    out_shape[axis] += include_initial
    if 0 in shape:  # topi's cumsum writes each row's first element even when rows are empty
        return te.compute(out_shape, lambda *i: tirx.const(0, out), name="out")
    total = topi.cumsum(x, axis=axis, dtype=out)
    if not include_initial:
        return total

    def value(*i):
        before = tirx.max(i[axis] - 1, 0)  # Select reads both sides: stay in bounds
        return tirx.Select(i[axis] == 0, tirx.const(0, out),
                           total(*i[:axis], before, *i[axis + 1:]))

    return te.compute(out_shape, value, name="out")


def _sort_key(x: te.Tensor) -> te.Tensor:
    """An int32/int64 tensor that sorts like x under numpy's order (NaN last, -0 == 0)."""
    d = str(x.dtype)
    if d in ("int32", "int64"):
        return x
    if "float" not in d:  # bool, int8, uint8 (bool goes through int8: see elementwise.astype)
        return te.compute(x.shape, lambda *i: x(*i).astype("int8").astype("int32")
                          if d == "bool" else x(*i).astype("int32"), name="key")
    real, bits = ("float64", "int64") if d == "float64" else ("float32", "int32")
    top = tirx.max_value(bits)

    def key(*i):
        v = x(*i).astype(real)
        b = tirx.reinterpret(bits, v)
        monotonic = tirx.Select(b < 0, tirx.bitwise_xor(b, top), b)  # negatives: reverse order
        return tirx.Select(te.isnan(v), top,
                           tirx.Select(v == tirx.const(0, real), tirx.const(0, bits), monotonic))

    return te.compute(x.shape, key, name="key")


def argsort(x: te.Tensor, *, axis: int, descending: bool) -> te.Tensor:
    """The int64 positions that sort x along axis, stably."""
    return topi.argsort(_sort_key(x), axis=axis, is_ascend=not descending, dtype="int64")


def sort(x: te.Tensor, *, axis: int, descending: bool) -> te.Tensor:
    """x sorted along axis: gathered by its argsort."""
    order = argsort(x, axis=axis, descending=descending)
    return te.compute(x.shape, lambda *i: x(*i[:axis], order(*i), *i[axis + 1:]), name="out")


@kernels.register("cumulative_sum")
def _cumulative_sum(device, x, *, axis=None, include_initial=False, out_shape, out_dtype):
    a = shapes.axis("cumulative_sum", 0 if axis is None else axis, len(x.shape))
    return device.run("cumulative_sum", cumulative_sum, [x], axis=a,
                      include_initial=bool(include_initial), out=out_dtype.name)


def _register_sort(op: str, build) -> None:
    @kernels.register(op)
    def kernel(device, x, *, axis=-1, descending=False, stable=True):
        a = shapes.axis(op, axis, len(x.shape))
        return device.run(op, build, [x], axis=a, descending=bool(descending))


_register_sort("sort", sort)
_register_sort("argsort", argsort)
