"""The strided elementwise engine: one generated kernel maps inputs to an output over a shape.

Every operand is a view (array, element strides over the iteration shape, element
offset): broadcasting is a zero stride, slicing and transposition are strides, so
binary ops, casts, slices, permutations and concatenation share this one generator.
Adjacent axes that are contiguous for every operand are merged before generating,
and unit/zero strides are compiled in, so the common dense case is a plain `p[i]`.
A `Launch` is that kernel prepared once per shape and stride pattern (device.cache):
a repeated call sets the operands' buffers and offsets and enqueues, nothing more.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from ..fusion import collapse
from . import cltypes


@dataclass(frozen=True)
class View:
    """An array seen over an iteration shape: strides and offset in elements."""

    array: object
    strides: tuple[int, ...]
    offset: int = 0

    @property
    def dtype(self) -> np.dtype:
        """The element dtype."""
        return self.array.dtype


def dense_strides(shape) -> tuple[int, ...]:
    """Element strides of a C-contiguous array of this shape."""
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return tuple(reversed(strides))


def dense(array) -> View:
    """A contiguous array seen over its own shape."""
    return View(array, dense_strides(array.shape), array.offset // array.dtype.itemsize)


def broadcast_strides(array_shape, shape) -> tuple[int, ...]:
    """Element strides of a contiguous array broadcast (numpy rules, validated) over shape."""
    own = dense_strides(array_shape)
    lead = len(shape) - len(array_shape)
    return (0,) * lead + tuple(0 if n == 1 and m != 1 else s
                               for n, m, s in zip(array_shape, shape[lead:], own))


def broadcast(array, shape) -> View:
    """A contiguous array broadcast (numpy rules, already validated) over shape."""
    return View(array, broadcast_strides(array.shape, shape), array.offset // array.dtype.itemsize)


def _stride_class(s: int) -> str:
    return str(s) if s in (0, 1) else "v"


class Launch:
    """The strided kernel prepared for one shape, dtypes and strides (offsets vary per call).

    `launch(operands, scalars)` with operands the (buffer, element offset) of the output
    then of each input: sets the arguments and enqueues; it neither waits nor allocates.
    """

    def __init__(self, device, op: str, expr: str, dtypes: tuple, strides: tuple, shape: tuple,
                 scalar_types: tuple, helpers: str):
        dims, merged = collapse(shape, strides)
        classes = tuple(tuple(_stride_class(s) for s in st) for st in merged)
        source = _source(expr, dtypes, len(dims), classes, scalar_types, helpers)
        self.kernel = device.build(op, source, "ew")
        self.queue = device.queue
        self.strides = [tuple(s for s, c in zip(st, cls) if c == "v")
                        for st, cls in zip(merged, classes)]
        self.tail = tuple(dims[1:])
        self.launches = device.work_split(math.prod(shape))

    def __call__(self, operands, scalars=()):
        args = []
        for (buffer, offset), strides in zip(operands, self.strides):
            args += (buffer, offset, *strides)
        args += self.tail
        args += scalars
        for global_size, local_size, offset in self.launches:
            self.kernel(self.queue, global_size, local_size, *args, global_offset=offset)


def prepare(device, op: str, expr: str, dtypes: tuple, strides: tuple, shape: tuple,
            scalar_types: tuple = (), helpers: str = "") -> Launch:
    """The cached Launch of expr over operands (output first) of these dtypes and
    element strides over shape."""
    key = ("strided", op, expr, dtypes, strides, shape, scalar_types, helpers)
    found = device.cache.get(key)
    if found is None:
        found = device.cache[key] = Launch(device, op, expr, dtypes, strides, shape,
                                           scalar_types, helpers)
    return found


def run(device, op: str, expr: str, inputs: list[View], out: View, shape,
        scalars: tuple = (), scalar_types: tuple = (), helpers: str = "") -> None:
    """Compute out[idx] = expr(a0, a1, ..., s0, ...) for every idx of shape, as one kernel.

    `aK` is input K loaded in its compute type; `sK` is scalar argument K with C type
    scalar_types[K]; `helpers` is C code (functions) placed before the kernel. The
    expression's value is converted to the output's dtype.
    """
    shape = tuple(shape)
    if math.prod(shape) == 0:
        return
    views = [out, *inputs]
    launch = prepare(device, op, expr, tuple(v.dtype for v in views),
                     tuple(v.strides for v in views), shape, tuple(scalar_types), helpers)
    launch([(v.array.base_data, v.offset) for v in views], scalars)


@functools.lru_cache(maxsize=4096)  # generating the text costs more than the launch
def _source(expr, dtypes, ndim, classes, scalar_types, helpers) -> str:
    params, body = [], []
    names = ["out"] + [f"p{k}" for k in range(len(dtypes) - 1)]
    for k, (name, d, cls) in enumerate(zip(names, dtypes, classes)):
        const = "" if k == 0 else "const "
        params += [f"__global {const}{cltypes.storage(d)} *{name}", f"long {name}_off"]
        params += [f"long {name}_s{i}" for i, c in enumerate(cls) if c == "v"]
    params += [f"long d{i}" for i in range(1, ndim)]
    params += [f"{t} s{k}" for k, t in enumerate(scalar_types)]
    body.append("const long i = get_global_id(0);")
    body.append("long r = i;")
    body += [f"long {name}_o = {name}_off;" for name in names]
    for dim in range(ndim - 1, -1, -1):
        index = "r" if dim == 0 else f"(r % d{dim})"
        body.append(f"{{ long id = {index};")
        for name, cls in zip(names, classes):
            c = cls[dim]
            if c == "1":
                body.append(f"  {name}_o += id;")
            elif c == "v":
                body.append(f"  {name}_o += id * {name}_s{dim};")
        body.append(f"  r /= d{dim}; }}" if dim else "}")
    for k, d in enumerate(dtypes[1:]):
        body.append(f"{cltypes.compute(d)} a{k} = {cltypes.load(d, f'p{k}', f'p{k}_o')};")
    body.append(cltypes.store(dtypes[0], "out", "out_o", expr))
    return (cltypes.preamble(dtypes) + helpers + "__kernel void ew(" + ", ".join(params)
            + ")\n{\n  " + "\n  ".join(body) + "\n}\n")
