"""Device memory: pyopencl's MemoryPool with hal's accounting and out-of-memory errors."""

from __future__ import annotations

import pyopencl as cl
import pyopencl.tools as cl_tools

import hal
from hal.errors import HalOutOfMemory


class Pool:
    """A caching allocator for pyopencl arrays (pass it as `allocator=`), counted as hal counts.

    The device's total and per-buffer limits are enforced here, because some OpenCL
    implementations (PoCL) allocate lazily and never fail a request themselves.
    """

    def __init__(self, queue: cl.CommandQueue, device_name: str, total: int, max_buffer: int):
        self._pool = cl_tools.MemoryPool(cl_tools.ImmediateAllocator(queue))
        self.device_name = device_name
        self.total = total
        self.max_buffer = max_buffer
        self.peak = 0
        self.allocations = 0
        self.device_allocations = 0

    def __call__(self, nbytes: int):
        """A pooled buffer of at least nbytes; HalOutOfMemory when the device cannot hold it."""
        if nbytes > self.max_buffer:
            self._oom(nbytes, f"the device's largest buffer is {self.max_buffer:,} bytes")
        if self._pool.active_bytes + nbytes > self.total:
            self._pool.free_held()
            self._oom(nbytes, "the live tensors and this one exceed the device memory")
        managed = self._pool.managed_bytes
        try:
            buffer = self._pool.allocate(nbytes)
        except (cl.MemoryError, cl.RuntimeError) as e:
            self._oom(nbytes, f"the driver refused: {e}")
        if self._pool.managed_bytes > managed:
            self.device_allocations += 1
        self.allocations += 1
        self.peak = max(self.peak, self._pool.active_bytes)
        return buffer

    def _oom(self, nbytes: int, why: str):
        raise HalOutOfMemory(
            f"{self.device_name}: out of memory allocating {nbytes:,} bytes: {why} "
            f"({self._pool.active_bytes:,} bytes allocated, {self._pool.managed_bytes:,} "
            f"reserved, device total {self.total:,}). Free tensors, use smaller shapes, or "
            "pick a device with more memory."
        )

    def stats(self) -> hal.MemoryStats:
        """The pool's accounting as hal.MemoryStats."""
        return hal.MemoryStats(
            allocated=self._pool.active_bytes,
            reserved=self._pool.managed_bytes,
            peak=self.peak,
            allocations=self.allocations,
            device_allocations=self.device_allocations,
            total=self.total,
        )

    def empty(self) -> None:
        """Give every cached (free) block back to the device."""
        self._pool.free_held()

    def reset_peak(self) -> None:
        """Start peak accounting afresh from the bytes allocated now."""
        self.peak = self._pool.active_bytes
