"""Reductions over any axes: sum, max, min, and the fused composites mean and var.

The reduced axes and the kept axes of the (contiguous) input are each merged where they
are contiguous, then a generated kernel reduces: one work-item per output when outputs
are many or rows short, one work-group per output with a local-memory tree when rows are
long, and two stages (contiguous chunks to partials, then the partials) when a few
outputs cover many elements. Float sums accumulate in double where the device has it;
var is two-pass in one kernel (mean, then squares).
"""

from __future__ import annotations

import math

import numpy as np

from hal import dtypes as dt
from hal import shapes

from . import cltypes, strided
from .table import kernels


def _collapse(dims, strides):
    dims, strides = list(dims), list(strides)
    i = len(dims) - 1
    while i > 0:
        if strides[i - 1] == strides[i] * dims[i]:
            dims[i - 1] *= dims[i]
            strides[i - 1] = strides[i]
            del dims[i], strides[i]
        i -= 1
    return dims, strides


def _offset_code(var: str, index: str, prefix: str, ndim: int) -> list[str]:
    """C lines adding the offset of flat `index` over dims prefix_d0.. (strides prefix_s..)."""
    lines = [f"{{ long q = {index};"]
    for k in range(ndim - 1, -1, -1):
        if k:
            lines.append(f"  {var} += (q % {prefix}d{k}) * {prefix}s{k}; q /= {prefix}d{k};")
        else:
            lines.append(f"  {var} += q * {prefix}s{k};")
    return [*lines, "}"]


def acc_type(device, kind: str, d: np.dtype) -> np.dtype:
    """The dtype a reduction of `kind` over d accumulates in on this device."""
    if kind in ("max", "min"):
        return d
    if dt.is_integer(d) or dt.is_bool(d):
        return dt.int64
    if dt.is_complex(d):
        return dt.complex128 if device.fp64 else dt.complex64
    return dt.float64 if device.fp64 else dt.float32


class Algebra:
    """C snippets of one reduction: identity, map from input, combine, and final value."""

    def __init__(self, kind: str, d: np.dtype, acc: np.dtype, out: np.dtype):
        self.kind, self.d, self.acc, self.out = kind, d, acc, out
        self.ctype = "ulong" if kind == "sum" and dt.is_integer(acc) else cltypes.compute(acc)
        self.double = dt.float64 in (acc, dt.real_dtype(acc))
        self.real = "double" if self.double else "float"
        complex_ = dt.is_complex(acc)
        p = cltypes.cprefix(acc) if complex_ else ""
        if kind in ("max", "min"):
            cmp = ">" if kind == "max" else "<"
            self.identity = self._extreme(kind, d)
            nan = " || A != A" if dt.is_floating(d) else ""  # NaN propagates, as in numpy
            self.combine = f"((A {cmp} B{nan}) ? A : B)"
            self.map = "V"
        elif complex_:
            self.identity = f"{p}_new(0, 0)"
            self.combine = f"{p}_add(A, B)"
            self.map = f"{p}_new(V.real, V.imag)"
        else:
            self.identity = "0"
            self.combine = "(A + B)"
            self.map = f"(({self.ctype})V)"

    @staticmethod
    def _extreme(kind, d):
        if dt.is_bool(d):
            return "0" if kind == "max" else "1"
        if dt.is_integer(d):
            lo, hi = cltypes.INTEGER_LIMITS[d]
            value = lo if kind == "max" else hi
            return f"(({cltypes.storage(d)})({value}L))" if value != -(2**63) else "(LONG_MIN)"
        return "(-INFINITY)" if kind == "max" else "INFINITY"

    def final(self, value: str) -> str:
        """The output value from the accumulator (the mean and var divide by `divisor`)."""
        if dt.is_complex(self.acc):
            p = cltypes.cprefix(self.out)
            if self.kind == "mean":
                return f"{p}_new({value}.real / divisor, {value}.imag / divisor)"
            return f"{p}_new({value}.real, {value}.imag)"
        if self.kind in ("mean", "var"):
            return f"({value} / divisor)"
        return value


def reduce(device, op: str, x, kind: str, axis, keepdims: bool, out_dtype, correction=0,
           divisor=None):
    """Reduce x over axes; returns the output array (the plan is prepared once per input
    shape, dtype and parameters: device.cache)."""
    key = ("reduce", op, kind, x.shape, x.dtype, axis if axis is None or isinstance(axis, int)
           else tuple(axis), keepdims, out_dtype, correction, divisor)
    found = device.cache.get(key)
    if found is None:
        found = device.cache[key] = _plan(device, op, x.shape, x.dtype, kind, axis, keepdims,
                                          out_dtype, correction, divisor)
    return found(x)


class _Reduction:
    """A reduction prepared for one input shape and dtype: `plan(x)` allocates the output,
    enqueues, and returns it. Few outputs over many elements (a full sum) reduce in two
    stages: contiguous chunks to partials in the accumulator type, then the partials."""

    def __init__(self, device, out_shape, out_dtype, kernel, tail, launches, then=None):
        self.device, self.out_shape, self.out_dtype = device, out_shape, out_dtype
        self.kernel, self.tail, self.launches, self.then = kernel, tail, launches, then

    def __call__(self, x):
        device = self.device
        out = device.empty(self.out_shape, self.out_dtype)
        args = (out.base_data, x.base_data, x.offset // x.dtype.itemsize, *self.tail)
        for global_size, local_size, offset in self.launches:
            self.kernel(device.queue, global_size, local_size, *args, global_offset=offset)
        if self.then is None:
            return out
        final, shape = self.then
        return device.view(final(out), shape)


def _plan(device, op, shape, d, kind, axis, keepdims, out_dtype, correction, divisor):
    """The _Reduction of an input of this shape and dtype (reduce's arguments)."""
    ndim = len(shape)
    red = shapes.axes(op, axis, ndim)
    out_shape = shapes.reduced(tuple(shape), red, keepdims)
    n_out = math.prod(out_shape)
    st = strided.dense_strides(shape)
    kd, ks = _collapse([shape[i] for i in range(ndim) if i not in red],
                       [st[i] for i in range(ndim) if i not in red])
    rd, rs = _collapse([shape[i] for i in red], [st[i] for i in red])
    size = math.prod(rd)
    acc = acc_type(device, kind, d)
    if divisor is None:
        divisor = max(size - correction, 0) if kind == "var" else size  # numpy's rule
    dims = (kd, ks, rd, rs)
    if kind != "var" and n_out < 64 and size >= 1 << 15:
        parts = min(256, size // 4096)
        first = Algebra("sum" if kind == "mean" else kind, d, acc, acc)
        final = _plan(device, op, (n_out, parts), acc, kind, 1, False, out_dtype, 0, divisor)
        return _Reduction(device, (n_out, parts), acc,
                          *_launch(device, op, first, dims, n_out, size, 1, parts),
                          then=(final, out_shape))
    alg = Algebra(kind, d, acc, out_dtype)
    launch = _launch(device, op, alg, dims, n_out, size, divisor, 1) if n_out else (None, (), ())
    return _Reduction(device, out_shape, out_dtype, *launch)


def _launch(device, op, alg, dims, n_out, size, divisor, parts):
    """One reduction kernel (per output, and per chunk when parts > 1): the built kernel,
    its arguments after (out, x, x offset), and its launches."""
    kd, ks, rd, rs = dims
    many = n_out >= (16 * device.cl_device.max_compute_units if device.is_cpu else 1024)
    group = 1 if size <= 64 or many or parts > 1 else device.group_size()
    kernel = device.build(op, _source(alg, len(kd), len(rd), group), "reduce")
    tail = (n_out, size, float(divisor), parts, -(-size // parts),
            *[v for pair in zip(kd, ks) for v in pair], *[v for pair in zip(rd, rs) for v in pair])
    if group == 1:
        return kernel, tail, device.work_split(n_out * parts)
    return kernel, tail, (((n_out * group,), (group,), None),)


def _source(alg: Algebra, nkept: int, nred: int, group: int) -> str:
    d, acc_t = alg.d, alg.ctype
    real = alg.real
    params = [f"__global {cltypes.storage(alg.out)} *out",
              f"__global const {cltypes.storage(d)} *x", "long x_off", "long n_out",
              "long size", f"{real} divisor", "long parts", "long chunk"]
    params += [f"long kd{k}, long ks{k}" for k in range(nkept)]
    params += [f"long rd{k}, long rs{k}" for k in range(nred)]

    def combine(a, b):
        return alg.combine.replace("A", a).replace("B", b)

    def loop(start, step, body, stop="size"):
        return [f"for (long r = {start}; r < {stop}; r += {step}) {{", "  long at = base;",
                *["  " + s for s in _offset_code("at", "r", "r", nred)],
                f"  {cltypes.compute(d)} v = {cltypes.load(d, 'x', 'at')};", *body, "}"]

    take = [f"  acc = {combine('acc', alg.map.replace('V', 'v'))};"]
    square = ["  const " + acc_t + " c = ((" + acc_t + ")v) - mean;", "  acc += c * c;"]
    lines = []
    if group == 1:
        lines += ["const long g = get_global_id(0);",
                  "const long o = g / parts, first = (g % parts) * chunk;",
                  "const long last = min(size, first + chunk);"]
    else:
        lines += ["long o = get_group_id(0);", "int lid = get_local_id(0);",
                  f"__local {acc_t} part[{group}];"]
    lines += ["long base = x_off;", *_offset_code("base", "o", "k", nkept),
              f"{acc_t} acc = {alg.identity};"]
    start, step, stop = ("first", "1", "last") if group == 1 else ("lid", str(group), "size")
    lines += loop(start, step, take, stop)
    tree = ["part[lid] = acc;", "barrier(CLK_LOCAL_MEM_FENCE);",
            f"for (int s = {group // 2}; s > 0; s >>= 1) {{",
            f"  if (lid < s) part[lid] = {combine('part[lid]', 'part[lid + s]')};",
            "  barrier(CLK_LOCAL_MEM_FENCE);", "}", "acc = part[0];"]
    if group > 1:
        lines += tree
    if alg.kind == "var":
        lines += [f"const {acc_t} mean = acc / ({real})size;", f"acc = {alg.identity};"]
        if group > 1:
            lines.append("barrier(CLK_LOCAL_MEM_FENCE);")
        lines += loop(start, step, square, stop)
        if group > 1:
            lines += tree
    write = cltypes.store(alg.out, "out", "g" if group == 1 else "o", alg.final("acc"))
    lines.append(write if group == 1 else f"if (lid == 0) {{ {write} }}")
    attr = f"__attribute__((reqd_work_group_size({group}, 1, 1))) " if group > 1 else ""
    return (cltypes.preamble([d, alg.acc, alg.out]) + f"__kernel {attr}void reduce("
            + ", ".join(params) + ")\n{\n  " + "\n  ".join(lines) + "\n}\n")


def _sum_out(d):
    return dt.int64 if dt.is_integer(d) or dt.is_bool(d) else d


@kernels.register("sum")
def sum_(device, x, *, axis=None, keepdims=False):
    """Sum over axes (integers and bool to int64)."""
    return reduce(device, "sum", x, "sum", axis, keepdims, _sum_out(x.dtype))


@kernels.register("max")
def max_(device, x, *, axis=None, keepdims=False):
    """Maximum over axes; NaN propagates."""
    return reduce(device, "max", x, "max", axis, keepdims, x.dtype)


@kernels.register("min")
def min_(device, x, *, axis=None, keepdims=False):
    """Minimum over axes; NaN propagates."""
    return reduce(device, "min", x, "min", axis, keepdims, x.dtype)


@kernels.register("mean")
def mean(device, x, *, axis=None, keepdims=False):
    """Arithmetic mean over axes, one kernel."""
    return reduce(device, "mean", x, "mean", axis, keepdims, x.dtype)


@kernels.register("var")
def var(device, x, *, axis=None, keepdims=False, correction=0):
    """Variance over axes (two passes in one kernel), dividing by N - correction."""
    return reduce(device, "var", x, "var", axis, keepdims, x.dtype, correction)


