"""Device memory: allocations from the caching allocator, raw buffers, size classes, stats."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class MemoryStats:
    """Device memory accounting in bytes; None where the device cannot tell."""

    allocated: int | None  # bytes in live allocations
    reserved: int | None  # allocated + held in the cache for reuse
    peak: int | None  # highest `allocated` since open or reset_peak()
    allocations: int | None  # allocation requests served (cache hits included)
    device_allocations: int | None  # requests that reached the device (cache misses)
    total: int | None  # device memory size

    def to_dict(self) -> dict:
        """A JSON-ready dict."""
        return dataclasses.asdict(self)


class Allocation:
    """A block of device memory from the caching allocator; give it back with Device.free."""

    __slots__ = ("handle", "nbytes", "size")

    def __init__(self, handle: Any, nbytes: int, size: int):
        self.handle = handle  # the backend's own object (a pointer, a cl.Buffer, a bytearray)
        self.nbytes = nbytes  # bytes asked for
        self.size = size  # bytes reserved (the size class)


class Buffer:
    """A dense tensor's storage on a raw-memory device: an Allocation plus shape and dtype.

    It returns its memory to the device's cache when garbage collected. Backends whose
    library has its own array type (numpy, pyopencl.array, cupy) use that type instead.
    """

    __slots__ = ("allocation", "device", "dtype", "shape")

    def __init__(self, device, allocation: Allocation, shape: tuple, dtype: np.dtype):
        self.device = device
        self.allocation = allocation
        self.shape = shape
        self.dtype = dtype

    def __del__(self):
        try:
            self.device.free(self.allocation)
        except Exception:  # interpreter shutdown: nothing left to return the memory to
            pass


def size_class(nbytes: int) -> int:
    """The reserved size for a request: 512-byte granules, then quarter powers of two (<=25%)."""
    if nbytes <= 4096:
        return max(512, -(-nbytes // 512) * 512)
    step = 1 << max(nbytes.bit_length() - 3, 9)
    return -(-nbytes // step) * step

