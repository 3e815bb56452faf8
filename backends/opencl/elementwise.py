"""Elementwise ops as OpenCL C expressions: unary, binary (floor division and remainder as
numpy computes them too), where, casts, complex parts, and fused composites (activations,
the isnan/isinf/isfinite predicates and clip: each chain of primitives one kernel).

Each expression is the op set's (hal/ops/expressions/c.py, spelled for OpenCL by
dialect.py), so these eager kernels and the fused groups of graph_kernels.py compute the
same C; `strided.run` wraps it in a kernel that broadcasts by strides.
`fused(device, expr, *arrays)` is the same engine for any expression, the backend's answer
to chains of elementwise ops such as a*b + c.
"""

from __future__ import annotations

import math

import numpy as np

from hal import UnsupportedDType, ops
from hal.ops.expressions import c

from . import strided
from .dialect import DIALECT
from .table import kernels


def expression(op: str, operands, d: np.dtype, out: np.dtype) -> tuple[str, str]:
    """(the OpenCL C of `op` over operand texts, the helper source it needs) for key operand
    dtype d and result dtype out: the op set's C table (hal/ops/expressions/c.py)."""
    text, helpers = c.render(op, operands, d, out, DIALECT)
    return text, "".join(helpers)


class Mapped:
    """An expression over operands of fixed shapes and dtypes, prepared: `mapped(arrays,
    scalars)` allocates the output, sets each operand's buffer and offset and enqueues."""

    def __init__(self, device, shape: tuple, dtype: np.dtype, launch):
        self.device, self.shape, self.dtype, self.launch = device, shape, dtype, launch

    def __call__(self, arrays, scalars=()):
        out = self.device.empty(self.shape, self.dtype)
        if self.launch is not None:  # out is fresh: element offset 0
            self.launch([(out.base_data, 0),
                         *[(a.base_data, a.offset // a.dtype.itemsize) for a in arrays]],
                        scalars)
        return out


def prepare(device, op: str, expr: str, arrays, out_dtype, *, shape=None, helpers: str = "",
            scalar_types=()) -> Mapped:
    """map_arrays's work for operands of these shapes and dtypes, done once."""
    if shape is None:
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
    shape = tuple(shape)
    if math.prod(shape) == 0:
        return Mapped(device, shape, out_dtype, None)
    strides = (strided.dense_strides(shape),
               *[strided.broadcast_strides(a.shape, shape) for a in arrays])
    dtypes = (np.dtype(out_dtype), *[a.dtype for a in arrays])
    return Mapped(device, shape, out_dtype, strided.prepare(
        device, op, expr, dtypes, strides, shape, tuple(scalar_types), helpers))


def map_arrays(device, op: str, expr: str, arrays, out_dtype, *, shape=None,
               helpers: str = "", scalars=(), scalar_types=()):
    """A new array of out_dtype: expr over the arrays (a0, a1, ...) broadcast to one shape
    (prepared once per shapes and dtypes: device.cache)."""
    key = ("map", op, expr, out_dtype, None if shape is None else tuple(shape),
           tuple([(a.shape, a.dtype) for a in arrays]), tuple(scalar_types), helpers)
    found = device.cache.get(key)
    if found is None:
        found = device.cache[key] = prepare(device, op, expr, arrays, out_dtype, shape=shape,
                                            helpers=helpers, scalar_types=scalar_types)
    return found(arrays, scalars)


def fused(device, expr: str, *arrays, out_dtype=None):
    """One kernel computing a C expression over broadcast device arrays (a0, a1, ...).

    The elementwise chain `a*b + c` is `fused(dev, "a0 * a1 + a2", a, b, c)`: one pass
    over memory instead of one kernel and one temporary per primitive.
    """
    dtypes = {a.dtype for a in arrays}
    if len(dtypes) != 1:
        raise UnsupportedDType(
            f"fused: operands have dtypes {sorted(d.name for d in dtypes)}; cast them to one "
            "dtype first")
    d = dtypes.pop()
    device.check_dtype(d, "fused")
    return map_arrays(device, "fused", expr, arrays, out_dtype or d)


# -- registrations: every op of the C table, and the composites built from its expressions --
def _kernel(name: str):
    """The kernel of an op of the C table: one prepared kernel per operand shapes and dtypes
    (device.cache), the result's shape and dtype as dispatch computed them."""
    key_operand = ops.spec(name).key

    def kernel(device, *arrays, out_shape, out_dtype):
        key = ("op", name, out_dtype, tuple([(a.shape, a.dtype) for a in arrays]))
        found = device.cache.get(key)
        if found is None:
            text, helpers = expression(name, [f"a{i}" for i in range(len(arrays))],
                                       arrays[key_operand].dtype, out_dtype)
            found = device.cache[key] = prepare(device, name, text, arrays, out_dtype,
                                                shape=out_shape, helpers=helpers)
        return found(arrays)

    return kernel


for _name in ops.names():
    if _name in c.TABLE and _name != "gelu":  # gelu has its approximation parameter
        kernels.register(_name, [d for d in ops.spec(_name).dtypes if c.has(_name, d)])(
            _kernel(_name))


@kernels.register("gelu")
def gelu(device, x, *, approximate="none", out_shape, out_dtype):
    """0.5 x (1 + erf(x / sqrt 2)), or the tanh approximation, in one pass."""
    name = "gelu_tanh" if approximate == "tanh" else "gelu"
    text, helpers = expression(name, ["a0"], x.dtype, out_dtype)
    return map_arrays(device, name, text, [x], out_dtype, shape=out_shape, helpers=helpers)


@kernels.register("clip")
def clip(device, x, lo=None, hi=None, *, out_shape, out_dtype):
    """x limited to [lo, hi] (either may be absent), broadcast; NaN in any operand wins."""
    text, arrays = "a0", [x]
    for bound, pick in ((lo, "maximum"), (hi, "minimum")):
        if bound is not None:
            arrays.append(bound)
            text = expression(pick, [text, f"a{len(arrays) - 1}"], x.dtype, out_dtype)[0]
    return map_arrays(device, "clip", text, arrays, out_dtype, shape=out_shape)


@kernels.register("astype")
def astype(device, x, *, dtype, out_shape, out_dtype):
    """x converted to dtype as numpy converts."""
    if out_dtype == x.dtype:
        return x
    device.check_dtype(out_dtype, "astype")
    text, helpers = expression("astype", ["a0"], x.dtype, out_dtype)
    return map_arrays(device, "astype", text, [x], out_dtype, shape=out_shape, helpers=helpers)
