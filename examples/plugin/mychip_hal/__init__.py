"""MyChip: an out-of-tree hal backend with three kernels, the rest falling back to the CPU.

It stands in for a vendor's driver with host memory (the null backend's hooks) and
shows the step after copying backends/null.py: registering kernels one op at a time.
`hal conformance --backend mychip` then shows add, multiply and exp as pass on every
dtype they are registered for, and every other op as fallback.
"""

from __future__ import annotations

import numpy as np

import hal
from backends.null import NullDevice

kernels = hal.KernelTable("mychip")


def _host(buffer: hal.Buffer) -> np.ndarray:
    """The device buffer's bytes as an array (a real chip would launch a kernel instead)."""
    out = np.empty(buffer.shape, buffer.dtype)
    buffer.device.copy_out(out, buffer.allocation)
    return out


def _elementwise(fn):
    def kernel(device, *buffers):
        return device.upload(np.asarray(fn(*[_host(b) for b in buffers])))

    return kernel


kernels.register("add", hal.NUMERIC)(_elementwise(np.add))
kernels.register("multiply", hal.NUMERIC)(_elementwise(np.multiply))
kernels.register("exp", [hal.float32, hal.float64])(_elementwise(np.exp))


class MyChipBackend(hal.Backend):
    """One MyChip device with 256 MiB of (host) memory."""

    name = "mychip"
    kernels = kernels

    def _open_device(self, index: int) -> NullDevice:
        return NullDevice(self, index, 256 << 20)
