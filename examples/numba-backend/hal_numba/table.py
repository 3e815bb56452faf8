"""The backend's kernel table, and the kernels that need no compiler.

`register` is `kernels.register` that also serves half precision from a float32 kernel:
numba has no float16 or bfloat16 type on the CPU, so the operands are widened to float32
(exactly), the float32 kernel runs, and its result is rounded once to the half dtype,
which is how the reference computes them. Host memory is this device's memory, so the
movement ops are numpy's views and copies (the op's reference), dynamic_update_slice
numpy's assignment, and the collectives stage through it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import hal

kernels = hal.KernelTable("numba")
HALF = tuple(d for d in (hal.float16, hal.bfloat16) if d is not None)

for _spec in hal.ops.specs():
    if _spec.family == "movement":
        kernels.register(_spec.name, device_arg=False)(_spec.reference)
kernels.register_staged_collectives()


@kernels.register("dynamic_update_slice", device_arg=False)
def _dynamic_update_slice(operand, update, start_indices, *, out=None):
    """operand with update written over its clamped window, in place when hal.jit hands
    over a writable `out` (operand itself where the graph owns it: a KV cache), else in a
    copy."""
    if out is None or not out.flags.writeable:
        out = np.array(operand)
    elif out is not operand:
        np.copyto(out, operand)
    out[hal.ops.update_window(operand.shape, update.shape, start_indices)] = update
    return out


_dynamic_update_slice.takes_out = True


def lifted(kernel: Callable) -> Callable:
    """A float32 kernel run on half-precision operands, its result rounded once."""

    def run(device, *operands, out_shape, out_dtype, **params):
        wide = [x.astype(np.float32) if x is not None and x.dtype in HALF else x
                for x in operands]
        result = kernel(device, *wide, out_shape=out_shape,
                        out_dtype=hal.float32 if out_dtype in HALF else out_dtype, **params)
        return result.astype(out_dtype, copy=False)

    return run


def register(op: str, dtypes) -> Callable:
    """Decorator: the kernel of `op` on `dtypes`, and on half precision when float32 is one."""

    def decorate(kernel: Callable) -> Callable:
        kernels.register(op, dtypes)(kernel)
        if hal.float32 in dtypes:
            kernels.register(op, HALF)(lifted(kernel))
        return kernel

    return decorate
