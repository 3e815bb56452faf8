"""Programs built once per (device, source, options), their kernels, build errors, launches."""

from __future__ import annotations

import time
import warnings

import pyopencl as cl

from hal.errors import HalError

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
            kernel = self._kernels[key] = cl.Kernel(self.program(op, source, options), name)
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


def launch(queue: cl.CommandQueue, kernel: cl.Kernel, global_size, local_size, *args,
           offset=None):
    """Enqueue kernel over global_size (nothing when it is empty); returns the event or None."""
    if any(g == 0 for g in global_size):
        return None
    return kernel(queue, tuple(global_size), None if local_size is None else tuple(local_size),
                  *args, global_offset=offset)
