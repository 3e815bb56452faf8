"""Ops along one axis: cumulative_sum, sort and argsort, and take (a gather by indices).

Each works on rows: the elements along the axis, read in place by a strided address
(`hal_at`), so no axis is moved first. cumulative_sum scans chunks of rows serially, in
order, after a scan of the chunk sums where rows are few and long. sort and argsort run a
bitonic network over (key, index) pairs, whose comparisons break ties by index: a total
order, so the result is the stable sort; rows are padded to a power of two virtually
(positions past the row compare greatest and are never touched). take is one gather
kernel.
"""

from __future__ import annotations

import math

import numpy as np

from hal import dtypes as dt

from . import cltypes
from .table import kernels

# The element at position j of row `row` when x is laid out (outer, n, inner) and rows are
# numbered outer-major: the address of an axis of length n with `inner` elements after it.
ROW_ADDRESS = """
inline long hal_at(long row, long j, long n, long inner)
{
  return (row / inner) * n * inner + j * inner + row % inner;
}
"""


def _rows(shape, axis: int) -> tuple[int, int, int]:
    """(rows, n, inner) of shape along axis."""
    n = shape[axis]
    inner = math.prod(shape[axis + 1:])
    return math.prod(shape) // n if n else 0, n, inner


# -- cumulative_sum ------------------------------------------------------------------------
SCAN_CHUNK = 256  # elements a work-item sums serially when a few rows are long
SCAN_ITEMS = 4096  # work-items worth keeping busy before rows are split into chunks


def _scan_source(d: np.dtype, out_d: np.dtype) -> str:
    """Kernels `scan_sums` (the sum of each chunk of each row), `scan_offsets` (each row's
    chunk sums made exclusive running sums, in place) and `scan_rows` (each chunk's running
    sums from its offset, written along the axis, after a zero when `initial`)."""
    if dt.is_complex(out_d):
        p = cltypes.cprefix(out_d)
        acc, zero = cltypes.storage(out_d), f"{p}_new(0, 0)"

        def add(a, b):
            return f"{p}_add({a}, {b})"
    else:  # integers add through ulong: they wrap as numpy's do, with no C overflow
        acc = "ulong" if dt.is_integer(out_d) else cltypes.compute(out_d)
        zero = f"(({acc})0)"

        def add(a, b):
            return f"{a} + ({acc})({b})"
    read = cltypes.load(d, "x", "x_off + hal_at(row, j, n, inner)")
    at = "hal_at(row, j + initial, n + initial, inner)"
    return cltypes.preamble([d, out_d]) + ROW_ADDRESS + f"""
__kernel void scan_sums(__global {acc} *part, __global const {cltypes.storage(d)} *x,
                        long x_off, long n, long inner, long chunk, long chunks)
{{
  const long g = get_global_id(0), row = g / chunks, first = (g % chunks) * chunk;
  {acc} s = {zero};
  for (long j = first; j < min(n, first + chunk); ++j) s = {add("s", read)};
  part[g] = s;
}}

__kernel void scan_offsets(__global {acc} *part, long chunks)
{{
  const long row = get_global_id(0);
  {acc} s = {zero};
  for (long c = row * chunks; c < (row + 1) * chunks; ++c) {{
    const {acc} v = part[c];
    part[c] = s;
    s = {add("s", "v")};
  }}
}}

__kernel void scan_rows(__global {cltypes.storage(out_d)} *out,
                        __global const {cltypes.storage(d)} *x, long x_off,
                        __global const {acc} *part, long n, long inner, long chunk, long chunks,
                        long initial)
{{
  const long g = get_global_id(0), row = g / chunks, first = (g % chunks) * chunk;
  {acc} s = chunks > 1 ? part[g] : {zero};
  if (initial && first == 0) {{ {cltypes.store(out_d, "out", "hal_at(row, 0, n + 1, inner)",
                                                 zero)} }}
  for (long j = first; j < min(n, first + chunk); ++j) {{
    s = {add("s", read)};
    {cltypes.store(out_d, "out", at, "s")}
  }}
}}
"""


@kernels.register("cumulative_sum")
def cumulative_sum(device, x, *, axis=None, include_initial=False, out_shape, out_dtype):
    """Running sums along an axis (ints and bool to int64), a zero first if include_initial.

    A work-item scans a chunk of a row; when rows are too few to keep the device busy they
    are split into chunks whose sums are scanned first, to start each chunk at its offset.
    """
    axis = 0 if axis is None else axis % x.ndim
    rows, n, inner = _rows(x.shape, axis)
    if rows == 0:  # an empty axis: include_initial leaves only the zeros
        return device.upload(np.zeros(out_shape, out_dtype))
    chunks = max(1, min(-(-n // SCAN_CHUNK), SCAN_ITEMS // rows))
    chunk = -(-n // chunks)
    chunks = -(-n // chunk)
    source = _scan_source(x.dtype, out_dtype)
    out = device.empty(out_shape, out_dtype)
    acc = dt.float32 if out_dtype == dt.float16 else out_dtype
    part = device.empty((rows * chunks,), acc)
    x_off = np.int64(x.offset // x.dtype.itemsize)
    sizes = [np.int64(v) for v in (n, inner, chunk, chunks)]
    if chunks > 1:
        device.run_items(device.build("cumulative_sum", source, "scan_sums"), rows * chunks,
                         part.base_data, x.base_data, x_off, *sizes)
        device.run_items(device.build("cumulative_sum", source, "scan_offsets"), rows,
                         part.base_data, sizes[3])
    device.run_items(device.build("cumulative_sum", source, "scan_rows"), rows * chunks,
                     out.base_data, x.base_data, x_off, part.base_data, *sizes,
                     np.int64(bool(include_initial)))
    return out


# -- sort and argsort ----------------------------------------------------------------------
def _sort_source(d: np.dtype, positions: bool) -> str:
    """Kernels `sort_load` (rows of x into keys and positions), `sort_step` (one pass of the
    bitonic network) and `sort_store` (the keys, or the positions, back along the axis)."""
    s, c = cltypes.storage(d), cltypes.compute(d)
    less = "(A == A && (B != B || A < B))" if dt.is_floating(d) else "(A < B)"  # NaN greatest

    def lt(a, b):
        return less.replace("A", a).replace("B", b)

    result, src = (dt.int64, "idx") if positions else (d, "keys")
    return cltypes.preamble([d]) + ROW_ADDRESS + f"""
__kernel void sort_load(__global {s} *keys, __global long *idx, __global const {s} *x,
                        long x_off, long n, long inner)
{{
  const long g = get_global_id(0);
  {cltypes.store(d, "keys", "g", cltypes.load(d, "x", "x_off + hal_at(g / n, g % n, n, inner)"))}
  idx[g] = g % n;
}}

__kernel void sort_step(__global {s} *keys, __global long *idx, long n, long half_p,
                        long half_block, long dist, int descending, int later_first)
{{
  const long g = get_global_id(0), base = (g / half_p) * n, t = g % half_p;
  long lo, hi;
  if (dist == 0) {{  /* first pass of a block: compare mirrored positions */
    const long start = (t / half_block) * 2 * half_block, off = t % half_block;
    lo = start + off;
    hi = start + 2 * half_block - 1 - off;
  }} else {{
    lo = (t / dist) * 2 * dist + t % dist;
    hi = lo + dist;
  }}
  if (hi >= n) return;  /* past the row: the virtual padding, greatest of all */
  const {c} a = {cltypes.load(d, "keys", "base + lo")}, b = {cltypes.load(d, "keys", "base + hi")};
  const long ia = idx[base + lo], ib = idx[base + hi];
  const {c} first = descending ? a : b, second = descending ? b : a;
  const int tie_swap = later_first ? ia < ib : ib < ia;
  if ({lt("first", "second")} || (!{lt("second", "first")} && tie_swap)) {{
    {cltypes.store(d, "keys", "base + lo", "b")}
    {cltypes.store(d, "keys", "base + hi", "a")}
    idx[base + lo] = ib;
    idx[base + hi] = ia;
  }}
}}

__kernel void sort_store(__global {cltypes.storage(result)} *out, __global const {s} *keys,
                         __global const long *idx, long n, long inner)
{{
  const long g = get_global_id(0);
  {cltypes.store(result, "out", "hal_at(g / n, g % n, n, inner)",
                 cltypes.load(result, src, "g"))}
}}
"""


def _sort(device, op: str, x, axis: int, descending: bool, out_shape, out_dtype):
    """Sorted keys (sort) or their positions (argsort, stable) along axis."""
    out = device.empty(out_shape, out_dtype)
    rows, n, inner = _rows(x.shape, axis % x.ndim)
    if rows == 0:
        return out
    source = _sort_source(x.dtype, op == "argsort")
    keys, idx = device.empty((rows * n,), x.dtype), device.empty((rows * n,), dt.int64)
    total, n_, inner_ = rows * n, np.int64(n), np.int64(inner)
    device.run_items(device.build(op, source, "sort_load"), total, keys.base_data,
                     idx.base_data, x.base_data, np.int64(x.offset // x.dtype.itemsize), n_, inner_)
    step = device.build(op, source, "sort_step")
    # sort descending is the ascending sort reversed, as the reference computes it: equal
    # keys (0 and -0) come out in reverse order; argsort keeps them in order (stable)
    later_first = np.int32(descending and op == "sort")
    half_p = (1 << (n - 1).bit_length()) // 2  # half the row padded to a power of two
    block = 1
    while block <= half_p:  # blocks of 2, 4, ... 2 * half_p elements
        dist = 0
        while True:
            device.run_items(step, rows * half_p, keys.base_data, idx.base_data, n_,
                             np.int64(half_p), np.int64(block), np.int64(dist),
                             np.int32(descending), later_first)
            dist = block // 2 if dist == 0 else dist // 2
            if dist == 0:
                break
        block *= 2
    device.run_items(device.build(op, source, "sort_store"), total, out.base_data,
                     keys.base_data, idx.base_data, n_, inner_)
    return out


@kernels.register("sort")
def sort(device, x, *, axis=-1, descending=False, stable=True, out_shape, out_dtype):
    """x sorted along axis, NaN last (first descending); equal keys in the reference's order."""
    return _sort(device, "sort", x, axis, descending, out_shape, out_dtype)


@kernels.register("argsort")
def argsort(device, x, *, axis=-1, descending=False, stable=True, out_shape, out_dtype):
    """int64 positions that sort x along axis; ties keep their order (always stable)."""
    return _sort(device, "argsort", x, axis, descending, out_shape, out_dtype)


# -- take ----------------------------------------------------------------------------------
def _take_source(d: np.dtype, index: np.dtype) -> str:
    read = cltypes.load(d, "x", "x_off + (o * n + k) * inner + r % inner")
    return cltypes.preamble([d]) + f"""
__kernel void take(__global {cltypes.storage(d)} *out, __global const {cltypes.storage(d)} *x,
                   long x_off, __global const {cltypes.storage(index)} *ind, long ind_off,
                   long m, long n, long inner)
{{
  const long g = get_global_id(0), o = g / (m * inner), r = g % (m * inner);
  long k = ind[ind_off + r / inner];
  if (k < 0) k += n;
  {cltypes.store(d, "out", "g", read)}
}}
"""


@kernels.register("take")
def take(device, x, indices, *, axis=None, out_shape, out_dtype):
    """Elements of x at indices along axis (of the flattened x when axis is None); negative
    indices count from the end (dispatch has refused any out of range)."""
    out = device.empty(out_shape, out_dtype)
    if out.size == 0:
        return out
    if axis is None:
        n, inner = x.size, 1
    else:
        axis %= x.ndim
        n, inner = x.shape[axis], math.prod(x.shape[axis + 1:])
    kernel = device.build("take", _take_source(x.dtype, indices.dtype), "take")
    device.run_items(kernel, out.size, out.base_data, x.base_data,
                     np.int64(x.offset // x.dtype.itemsize), indices.base_data,
                     np.int64(indices.offset // indices.dtype.itemsize),
                     np.int64(indices.size), np.int64(n), np.int64(inner))
    return out
