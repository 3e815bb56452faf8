"""The null backend: the copy-me template for a new chip.

It implements the runtime protocol over host memory (a bytearray per allocation) and
registers no kernels, so every op runs through decomposition and the CPU fallback.
Copy this file to `mychip_hal/backend.py`, replace each hook with your driver's calls,
register kernels one op at a time, and watch `hal conformance --backend mychip` move
ops from `fallback` to `pass`. The entry point in your package's pyproject.toml:

    [project.entry-points."hal.backends"]
    mychip = "mychip_hal.backend:MyChipBackend"
"""

from __future__ import annotations

import hal

# Register kernels here: @kernels.register("add") def add(device, a, b): return <native>.
# A kernel receives device-native arrays (here hal.Buffer: allocation, shape, dtype)
# and returns one; broadcasting and dtype promotion are already resolved by dispatch.
kernels = hal.KernelTable("null")


class NullDevice(hal.Device):
    """A device whose memory is host bytearrays; a vendor replaces each hook with driver calls."""

    def __init__(self, backend: hal.Backend, index: int, memory_bytes: int):
        self._memory_bytes = memory_bytes
        super().__init__(backend, index)

    def _alloc(self, nbytes: int) -> bytearray:
        """Vendor: allocate nbytes of device memory and return your handle (a pointer, an object).

        Raise MemoryError when the device is full: the base class then empties its cache,
        retries once, and raises HalOutOfMemory with the device's name and sizes.
        """
        return bytearray(nbytes)

    def _free(self, handle: bytearray) -> None:
        """Vendor: release a handle from _alloc (called when the cache is emptied)."""

    def _copy_in(self, handle: bytearray, host: memoryview) -> None:
        """Vendor: copy host bytes into device memory; return when the copy is complete."""
        handle[: len(host)] = host

    def _copy_out(self, host: memoryview, handle: bytearray) -> None:
        """Vendor: copy device memory into host bytes; return when the copy is complete."""
        host[:] = handle[: len(host)]

    def synchronize(self) -> None:
        """Vendor: block until every queued kernel and copy has finished."""

    def _describe(self) -> dict:
        """Vendor: facts read from the device: name, vendor, versions, memory, compute units."""
        return {
            "name": "null device (host memory, no kernels)",
            "vendor": "hal",
            "driver_version": hal.__version__,
            "memory_bytes": self._memory_bytes,
            "compute_units": 1,
        }


class NullBackend(hal.Backend):
    """A backend with the runtime protocol and no kernels: every op falls back to the CPU."""

    name = "null"
    kernels = kernels
    memory_bytes = 1 << 30  # what the null device claims to have; the allocator enforces it

    def why_unavailable(self) -> str | None:
        """Vendor: return why no device can be opened (driver missing, no hardware), else None.

        Keep it cheap: check that the library imports and a device is listed; open nothing.
        """
        return None

    def device_count(self) -> int:
        """Vendor: how many devices the driver lists."""
        return 1

    def _open_device(self, index: int) -> NullDevice:
        """Vendor: open device `index` (hal calls this once per index and caches it)."""
        return NullDevice(self, index, self.memory_bytes)
