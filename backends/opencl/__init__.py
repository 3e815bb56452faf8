"""The OpenCL backend (pyopencl): the whole op set on any OpenCL device, PoCL by default.

Devices are listed over every platform, simulators (Oclgrind) last, so `opencl:0` is a
real device. Kernels are generated OpenCL C, built once per device and source:
strided elementwise and movement kernels with broadcasting, reductions, tiled GEMM,
Stockham/Bluestein FFT, scans (pyopencl.scan), bitonic sorts, gathers, fused kernels
for the composites, and one generated kernel per fused group of a graph
(graph_kernels); a jitted graph is then replayed as one prepared enqueue plan (capture).
The kernel modules import no pyopencl at their top, so this module
loads (and says why) without it.
"""

from __future__ import annotations

import hal

from . import conv, elementwise, fft, gemm, movement, nn, quant, reduce, scan_sort
from .table import kernels

SIMULATORS = ("Oclgrind",)


def _cl_devices() -> list:
    import pyopencl as cl

    found = [(p.name in SIMULATORS, p.name, d) for p in cl.get_platforms() for d in p.get_devices()]
    return [d for _, _, d in sorted(found, key=lambda f: (f[0], f[1]))]


class OpenCLBackend(hal.Backend):
    """Every OpenCL device pyopencl sees; opencl:0 is the first non-simulator device."""

    name = "opencl"
    kernels = kernels
    unsupported = {"bfloat16": "OpenCL C has no bfloat16 type; cast to float32 first"}

    def __init__(self):
        super().__init__()
        self._devices: list | None = None

    def _list(self) -> list:
        if self._devices is None:
            self._devices = _cl_devices()
        return self._devices

    def why_unavailable(self) -> str | None:
        """Why no OpenCL device can be opened here, or None."""
        try:
            import pyopencl
        except ImportError as e:
            return (f"pyopencl is not importable ({e}); "
                    "pip install pyopencl pocl-binary-distribution")
        try:
            if not self._list():
                return "no OpenCL platform lists a device; pip install pocl-binary-distribution"
        except Exception as e:  # the ICD loader's own failures come in many types
            return f"OpenCL platforms could not be listed: {type(e).__name__}: {e}"
        return None

    def device_count(self) -> int:
        """How many OpenCL devices all platforms list."""
        return len(self._list())

    def _open_device(self, index: int):
        from .device import OpenCLDevice

        return OpenCLDevice(self, index, self._list()[index])

    def capture(self, device, run):
        """One call of a jitted graph recorded from pyopencl's launches (see capture.py)."""
        from .capture import capture

        return capture(device, run)

    def replay(self, device, graph, copies, outputs):
        """The recorded call as one prepared enqueue plan (see capture.py)."""
        from .capture import replay

        return replay(device, graph, copies, outputs)

    def compile_fused(self, body, device):
        """One generated kernel for a fused group (see graph_kernels), or None to decline."""
        from .graph_kernels import compile_fused

        return compile_fused(device, body)

    def unsupported_on(self, device) -> dict:
        """bfloat16 everywhere; float64 and complex128 where the device lacks cl_khr_fp64."""
        reasons = dict(self.unsupported)
        if not device.fp64:
            why = "the device has no cl_khr_fp64 (no double precision)"
            reasons.update(float64=why, complex128=why)
        return reasons
