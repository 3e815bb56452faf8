"""The CUDA backend's kernel table, and how its kernels run.

`register(op, dtypes)` wraps a function on cupy arrays so that it runs on its tensors'
GPU under the device's guard (`CudaDevice.launch`: device selection, out-of-memory and
compile errors); a function that declares `out_shape` and `out_dtype` is given the
result's shape and dtype as dispatch computed them. Kernels are registered for the dtypes
their op accepts; float16/bfloat16 compute in float32 through `hal.ops.in_float32`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

import hal

kernels = hal.KernelTable("cuda")
kernels.register_device_collectives()  # NCCL where the group's transport is, else the host


def register(op: str, dtypes=None) -> Callable:
    """Decorator: `fn(*cupy arrays, **params) -> cupy array` becomes the kernel of `op`
    (one that writes into a given `out=` says so with `fn.takes_out = True`)."""

    def decorate(fn: Callable) -> Callable:
        if {"out_shape", "out_dtype"} <= set(inspect.signature(fn).parameters):
            def kernel(device, *args, out_shape, out_dtype, **params):
                return device.launch(op, fn, args,
                                     {**params, "out_shape": out_shape, "out_dtype": out_dtype})
        else:
            def kernel(device, *args, **params):
                return device.launch(op, fn, args, params)

        kernel.takes_out = getattr(fn, "takes_out", False)
        kernels.register(op, dtypes)(kernel)
        return fn

    return decorate
