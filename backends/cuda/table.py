"""The CUDA backend's kernel table, and the two ways its kernels run.

`register(op, dtypes)` wraps a function on cupy arrays so that it runs on its tensors'
GPU under the device's guard (`CudaDevice.launch`: device selection, out-of-memory and
compile errors). `in_float32` runs a kernel for float16/bfloat16 in float32 and rounds
the result once, which is what the op set's reference computes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import hal
from hal import dtypes as dt

kernels = hal.KernelTable("cuda")
kernels.register_staged_collectives()  # through host memory (the mpich wheel is not CUDA-aware)
HALF = tuple(d for d in (dt.float16, dt.bfloat16) if d is not None)


def register(op: str, dtypes=None) -> Callable:
    """Decorator: `fn(*cupy arrays, **params) -> cupy array` becomes the kernel of `op`."""

    def decorate(fn: Callable) -> Callable:
        def kernel(device, *args, **params):
            return device.launch(op, fn, args, params)

        kernels.register(op, dtypes)(kernel)
        return fn

    return decorate


def in_float32(fn: Callable) -> Callable:
    """`fn` with float16/bfloat16 operands lifted to float32 and the result cast back."""

    @functools.wraps(fn)
    def lifted(*args, **params):
        half = next((a.dtype for a in args if a is not None and a.dtype in HALF), None)
        if half is None:
            return fn(*args, **params)
        wide = [a.astype(dt.float32) if a is not None and a.dtype in HALF else a for a in args]
        out = fn(*wide, **params)
        return out.astype(half) if out.dtype == dt.float32 else out  # comparisons stay bool

    return lifted


def accepted(op: str, among=None) -> list:
    """The dtypes `op` accepts, optionally only those in `among`."""
    return [d for d in hal.ops.spec(op).dtypes if among is None or d in among]
