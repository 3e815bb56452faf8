"""Elementwise ops on CUDA: each an ElementwiseKernel generated from the op set's C expression
(hal/ops/expressions/c.py, spelled by dialect.py), the same C as the fused groups of
graph_kernels.py: numpy's semantics (NaN-propagating maximum/minimum, floor division and
remainder as numpy's divmod, integer arithmetic wrapping, integer powers by squaring).
cupy broadcasts the operands and compiles each kernel once per op and dtype. float16
computes in float and rounds once on the store, in the same kernel; bfloat16, which cupy
cannot compute in, through float32 arrays (`hal.ops.in_float32`); where, astype, real,
imag and conj are cupy's own (they select, convert or view: nothing to compute), bfloat16
moved or selected as its 16-bit pattern, which is exact.
"""

from __future__ import annotations

import functools

import numpy as np

from hal import dtypes as dt
from hal import ops
from hal.ops.expressions import c

from .dialect import CTYPES, DIALECT
from .table import register

GENERATED = tuple(n for n in ops.names() if n in c.TABLE and n not in ("where", "real", "imag",
                                                                         "conj", "gelu"))
"""The ops whose eager kernels are generated from the C table (all it has but the selection
and the views, which cupy's own do, and gelu with its approximation parameter)."""


@functools.cache
def kernel_of(op: str, d: np.dtype, out: np.dtype, operands: int):
    """The cupy ElementwiseKernel of `op` (or an activation) on `operands` operands of dtype
    d with result dtype out; float16 computes in float and rounds once, on the store."""
    import cupy

    names = [f"a{i}" for i in range(operands)]
    half = d == dt.float16
    text, helpers = c.render(op, [f"((float){n})" if half else n for n in names],
                             dt.float32 if half else d,
                             dt.float32 if out == dt.float16 else out, DIALECT)
    store = "float16" if out == dt.float16 else CTYPES[out]
    return cupy.ElementwiseKernel(", ".join(f"{d.name} {n}" for n in names), f"{out.name} out",
                                  f"out = ({store})({text});", f"hal_{op}_{d.name}",
                                  preamble="".join(dict.fromkeys(helpers)))


def generated(op: str):
    """The eager kernel of an op of the C table: its generated kernel over the operands
    (cupy broadcasts them and allocates the result of the dtype dispatch computed)."""
    key = ops.spec(op).key
    kernels: dict[tuple, object] = {}

    def run(*arrays, out_shape, out_dtype):
        d = arrays[key].dtype
        found = kernels.get((d, out_dtype))
        if found is None:
            found = kernels[(d, out_dtype)] = kernel_of(op, d, out_dtype, len(arrays))
        return found(*arrays)

    run.__doc__ = f"{op}: the op set's C expression as a cupy ElementwiseKernel"
    return run


for _name in GENERATED:
    _kernel = generated(_name)
    register(_name, [d for d in ops.spec(_name).dtypes if d != dt.bfloat16 and c.has(_name, d)])(
        _kernel)
    if dt.bfloat16 in ops.spec(_name).dtypes:  # cupy has no bfloat16 arithmetic
        register(_name, [dt.bfloat16])(ops.in_float32(_kernel))


def gelu(x, *, approximate="none", out_shape, out_dtype):
    """0.5 x (1 + erf(x / sqrt 2)), or the tanh approximation, one generated kernel."""
    name = "gelu_tanh" if approximate == "tanh" else "gelu"
    return kernel_of(name, x.dtype, out_dtype, 1)(x)


register("gelu", [d for d in ops.spec("gelu").dtypes if d != dt.bfloat16])(gelu)
register("gelu", [dt.bfloat16])(ops.in_float32(gelu))


def bits(x):
    """A bfloat16 array seen as its uint16 bit patterns (other dtypes unchanged)."""
    return x.view(np.uint16) if x.dtype == dt.bfloat16 else x


def from_bits(x, dtype):
    """The inverse of `bits` for an array that should have `dtype`."""
    return x.view(dtype) if dtype == dt.bfloat16 else x


@register("where")
def where(condition, x, y):
    """cupy.where; bfloat16 selected as bit patterns."""
    import cupy

    return from_bits(cupy.where(condition, bits(x), bits(y)), x.dtype)


@register("astype")
def astype(x, *, dtype):
    """x.astype(dtype); to or from float16/bfloat16 through float32, as the reference does."""
    target = dt.dtype(dtype)
    if x.dtype == target:
        return x
    if x.dtype in ops.HALF and target != dt.float32:
        x = x.astype(dt.float32)
    if target in ops.HALF and x.dtype not in (dt.float32, *ops.HALF):
        x = x.astype(dt.float32)
    return x.astype(target)


@register("real")
def real(x):
    """The real part (a view)."""
    import cupy

    return cupy.real(x)


@register("imag")
def imag(x):
    """The imaginary part (a view)."""
    import cupy

    return cupy.imag(x)


@register("conj")
def conj(x):
    """The complex conjugate."""
    import cupy

    return cupy.conj(x)
