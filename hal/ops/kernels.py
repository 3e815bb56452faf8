"""Kernel tables: a backend's kernels by (op, dtype), bound to a device when it opens.

The table checks each name against the op set and defaults a kernel's dtypes to the ones
its op accepts, so it belongs to the op set's floor; the runtime sees it only through
`bind(device)` and `ops()`.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ..runtime import dtypes as dt
from ..runtime.groups import ON_DEVICE
from .collectives import OPS as COLLECTIVES
from .collectives import P2P, device_kernel, staged_kernel
from .spec import spec

Kernel = Callable[..., Any]


class KernelTable:
    """A backend's kernels: op name -> function on device-native arrays, per dtype."""

    def __init__(self, backend: str):
        self.backend = backend
        self._entries: dict[tuple[str, np.dtype], tuple[Kernel, bool]] = {}

    def register_staged_collectives(self) -> None:
        """Kernels for the collective and point-to-point ops that stage through host memory:
        download, run the process group's collective (or send, recv) on the host, upload
        (hal/ops/collectives.py). A backend
        whose library has its own collectives (NCCL, say) registers those instead."""
        for op in (*COLLECTIVES, *P2P):
            self.register(op)(staged_kernel(op))

    def register_device_collectives(self) -> None:
        """Kernels for the collective and point-to-point ops of a backend with collectives
        of its own (`Backend.open_collectives`): all_reduce, all_gather, reduce_scatter and
        gather_to_group through the group's device library where its transport is one,
        everything else (and every op on a group whose transport is host) staged."""
        self.register_staged_collectives()
        for op in (*ON_DEVICE, "gather_to_group"):
            self.register(op)(device_kernel("all_gather" if op == "gather_to_group" else op))

    def register(self, op: str, dtypes: Iterable | None = None, *, device_arg: bool = True):
        """Decorator: `fn(device, *natives, **params) -> native` for `op` on `dtypes`.

        dtypes defaults to every dtype the op accepts. With device_arg=False the function
        takes no device argument (a numpy ufunc, say), which saves a call on the hot path.
        A kernel that declares keyword parameters `out_shape` and `out_dtype` receives the
        result's shape and dtype as the op's rule computed them (to allocate its output
        with `device.empty`). A kernel with the attribute `takes_out = True` also accepts
        `out=`, a native array of the result's shape and dtype to write and return: hal.jit's
        executables pass their preallocated buffers, eager calls none. A kernel with the
        attribute `for_shape(shapes, dtypes, **params)` (shape and dtype per operand) gives
        for those a function of the natives alone to call instead, or None: what a graph
        node or a repeated eager call keeps (a planned FFT, say). Whatever a kernel
        returns must have that shape and dtype:
        dispatch checks it, and wraps a kernel's own exception in a KernelError.
        """
        op_spec = spec(op)  # the op set is declared once: names are checked against it
        chosen = op_spec.dtypes if dtypes is None else tuple(dt.dtype(d) for d in dtypes)

        def decorate(fn: Kernel) -> Kernel:
            for d in chosen:
                self._entries[(op_spec.name, d)] = (fn, device_arg)
            return fn

        return decorate

    def ops(self) -> set[str]:
        """Names of the ops that have at least one kernel."""
        return {op for op, _ in self._entries}

    def bind(self, device) -> dict[tuple[str, np.dtype], Kernel]:
        """The kernels with the device argument bound: (op, dtype) -> callable(*natives).

        A bound kernel that wants the result's shape and dtype has `takes_meta = True`.
        """
        bound = {}
        for key, (fn, device_arg) in self._entries.items():
            kernel = functools.partial(fn, device) if device_arg else fn
            if _takes_meta(fn):
                kernel = functools.partial(fn, device) if device_arg else functools.partial(fn)
                kernel.takes_meta = True
            bound[key] = kernel
        return bound


def _takes_meta(fn: Kernel) -> bool:
    """True when fn declares the keyword parameters out_shape and out_dtype."""
    try:
        parameters = inspect.signature(fn).parameters
    except (TypeError, ValueError):  # builtins and ufuncs have no inspectable signature
        return False
    return "out_shape" in parameters and "out_dtype" in parameters
