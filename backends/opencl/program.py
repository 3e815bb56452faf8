"""Programs built once per (device, source, options), their kernels, build errors, launches.

Every kernel gets its scalar argument dtypes declared once, from its own parameter list:
pyopencl then packs Python ints and floats directly (an undeclared numpy scalar costs
tens of microseconds per launch, a declared one about one).
"""

from __future__ import annotations

import re
import time
import warnings

import numpy as np
import pyopencl as cl

from hal import HalError

BASE_OPTIONS = ("-cl-fp32-correctly-rounded-divide-sqrt",)


class KernelBuildError(HalError):
    """An OpenCL program that failed to build; `op` names the op and `log` holds the build log."""

    def __init__(self, op: str, device: str, log: str):
        self.op, self.device, self.log = op, device, log
        super().__init__(
            f"{op}: the OpenCL program for {device} failed to build; build log:\n{log}\n"
            "This is a backend bug for this op or device: report it with the log, or run the "
            "op on another device."
        )


class Programs:
    """The program and kernel cache of one OpenCL context, with build counts and times."""

    def __init__(self, context: cl.Context, device_name: str):
        self.context = context
        self.device_name = device_name
        self._programs: dict[tuple[str, tuple[str, ...]], cl.Program] = {}
        self._kernels: dict[tuple, cl.Kernel] = {}
        self.builds = 0
        self.build_seconds = 0.0

    def kernel(self, op: str, source: str, name: str, options: tuple[str, ...] = ()) -> cl.Kernel:
        """Kernel `name` of `source`, building the program on first use."""
        key = (source, options, name)
        kernel = self._kernels.get(key)
        if kernel is None:
            kernel = cl.Kernel(self.program(op, source, options), name)
            kernel.set_scalar_arg_dtypes(arg_dtypes(op, source, name))
            self._kernels[key] = kernel
        return kernel

    def program(self, op: str, source: str, options: tuple[str, ...] = ()) -> cl.Program:
        """The built program for source and options; KernelBuildError naming op on failure."""
        key = (source, options)
        program = self._programs.get(key)
        if program is None:
            start = time.perf_counter()
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", cl.CompilerWarning)
                    program = cl.Program(self.context, source).build(
                        options=[*BASE_OPTIONS, *options])
            except cl.RuntimeError as e:
                raise KernelBuildError(op, self.device_name, str(e)) from None
            self.build_seconds += time.perf_counter() - start
            self.builds += 1
            self._programs[key] = program
        return program


SCALARS = {
    "char": np.int8, "uchar": np.uint8, "short": np.int16, "ushort": np.uint16,
    "int": np.int32, "uint": np.uint32, "long": np.int64, "ulong": np.uint64,
    "float": np.float32, "double": np.float64,
    "cfloat_t": np.complex64, "cdouble_t": np.complex128,
}
_SIGNATURE = re.compile(r"__kernel\b[^{;]*?\bvoid\s+(\w+)\s*\(([^)]*)\)")


def arg_dtypes(op: str, source: str, name: str) -> list:
    """The argument dtypes of kernel `name` in source, for `set_scalar_arg_dtypes`: None
    for a pointer (global or local memory), the numpy dtype of a scalar parameter."""
    params = next((p for found, p in _SIGNATURE.findall(source) if found == name), None)
    if params is None:
        raise HalError(f"{op}: no `__kernel void {name}(...)` in the OpenCL source; the "
                       "kernel generator and its caller disagree (a backend bug)")
    dtypes = []
    for param in params.split(",") if params.strip() else ():
        if "*" in param:
            dtypes.append(None)
            continue
        words = param.split()
        ctype = words[-2] if len(words) >= 2 else None
        if ctype not in SCALARS:
            raise HalError(f"{op}: kernel {name} has parameter `{param.strip()}` of a type "
                           "program.SCALARS does not know; add its numpy dtype there")
        dtypes.append(SCALARS[ctype])
    return dtypes


def launch(queue: cl.CommandQueue, kernel: cl.Kernel, global_size, local_size, *args,
           offset=None):
    """Enqueue kernel over global_size (nothing when it is empty); returns the event or None."""
    if any(g == 0 for g in global_size):
        return None
    return kernel(queue, tuple(global_size), None if local_size is None else tuple(local_size),
                  *args, global_offset=offset)
