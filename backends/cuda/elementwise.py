"""Elementwise ops on CUDA, each generated from the op set's C expression
(hal/ops/expressions/c.py, spelled by dialect.py), the same C as the fused groups of
graph_kernels.py: numpy's semantics (NaN-propagating maximum/minimum, floor division and
remainder as numpy's divmod, integer arithmetic wrapping, integer powers by squaring).
Contiguous operands of the output's shape run as a 16-byte vector kernel (vector.py);
broadcast, strided or misaligned ones as a cupy ElementwiseKernel of the same lane
expression (the strided path). float16 and bfloat16 move as their 16-bit patterns and
compute in float, rounding once on the store; where, astype, real, imag and conj are
cupy's own (they select, convert or view: nothing to compute), bfloat16 moved or selected
as its 16-bit pattern, which is exact.
"""

from __future__ import annotations

import functools

import numpy as np

from hal import dtypes as dt
from hal import ops
from hal.ops.expressions import c

from . import vector
from .table import register

GENERATED = tuple(n for n in ops.names() if n in c.TABLE and n not in ("where", "real", "imag",
                                                                         "conj", "gelu"))
"""The ops whose eager kernels are generated from the C table (all it has but the selection
and the views, which cupy's own do, and gelu with its approximation parameter)."""


def _held(d: np.dtype) -> np.dtype:
    """The dtype an array of d is passed to a kernel as: half precision as uint16."""
    return np.dtype(np.uint16) if d in ops.HALF else d


@functools.cache
def kernel_of(op: str, d: np.dtype, out: np.dtype, operands: int):
    """The strided path: a cupy ElementwiseKernel of `op` (or an activation) on `operands`
    operands of dtype d with result dtype out (half precision as uint16 patterns), the
    vector kernel's lane expression."""
    import cupy

    names = [f"a{i}" for i in range(operands)]
    text, helpers = vector.lane(op, names, d, out)
    return cupy.ElementwiseKernel(", ".join(f"{_held(d).name} {n}" for n in names),
                                  f"{_held(out).name} out", f"out = {text};",
                                  f"hal_{op}_{d.name}",
                                  preamble="".join(dict.fromkeys(helpers)))


def elementwise(op: str, arrays, out_shape, out_dtype):
    """`op` over `arrays` (cupy arrays of the output's shape, broadcastable ones or 0-d;
    typed as the op's key operand): the vector kernel where `vector.choose` allows it, else
    the strided one."""
    out_dtype = np.dtype(out_dtype)
    scalars = vector.choose(arrays, out_shape, out_dtype)
    if scalars is not None:
        return vector.run(op, arrays, out_shape, out_dtype, scalars)
    key = ops.spec("gelu" if op == "gelu_tanh" else op).key
    fn = kernel_of(op, arrays[key].dtype, out_dtype, len(arrays))
    out = fn(*[a.view(np.uint16) if a.dtype in ops.HALF else a for a in arrays])
    return out.view(out_dtype) if out_dtype in ops.HALF else out


def generated(op: str):
    """The eager kernel of an op of the C table (dispatch computed the result's dtype)."""

    def run(*arrays, out_shape, out_dtype):
        return elementwise(op, arrays, out_shape, out_dtype)

    run.__doc__ = f"{op}: the op set's C expression, vector or strided kernel"
    return run


def computed(op: str) -> list[np.dtype]:
    """The dtypes of op that the C table computes (half precision in float32)."""
    return [d for d in ops.spec(op).dtypes if c.has(op, dt.float32 if d in ops.HALF else d)]


for _name in GENERATED:
    register(_name, computed(_name))(generated(_name))


@register("gelu", computed("gelu"))
def gelu(x, *, approximate="none", out_shape, out_dtype):
    """0.5 x (1 + erf(x / sqrt 2)), or the tanh approximation, one generated kernel."""
    return elementwise("gelu_tanh" if approximate == "tanh" else "gelu", (x,), out_shape,
                       out_dtype)


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
