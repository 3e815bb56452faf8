"""Device: one opened device, its public protocol over the private hooks a backend writes.

Public methods live here, over small private hooks that a backend writes (raw memory:
`_alloc`, `_free`, `_copy_in`, `_copy_out`; or a library's arrays: `_empty`, `_upload`,
`_download`, `_pool_stats`; and `synchronize`, `_describe`), so pooling, accounting,
out-of-memory text and timing are written once. `backends/null.py` is a backend that
shows every hook; read it first when porting a chip.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from . import dtypes as dt
from . import host
from .capabilities import Capabilities
from .errors import DeviceError, HalOutOfMemory, ShapeError, UnsupportedDType
from .memory import Allocation, Buffer, MemoryStats, size_class


class Device:
    """One opened device of a backend. Backends subclass it and write the private hooks.

    Memory comes through one of two sets of hooks. A raw-memory device writes `_alloc`,
    `_free`, `_copy_in` and `_copy_out`, and hal's caching allocator pools it (tensors are
    `hal.Buffer`s). A device whose library has its own arrays (numpy, pyopencl, cupy, TVM)
    writes `_empty`, `_upload`, `_download`, `_pool_stats` and `empty_cache` instead, and
    names the library's out-of-memory exceptions in `oom_errors`. Either way the public
    `empty`, `upload`, `download` and `memory_stats` check sizes, count, retry once after
    emptying the cache, and word `HalOutOfMemory` in one place.
    """

    timer = "host perf_counter after synchronize()"  # what record_event/elapsed measure
    oom_errors: tuple[type[BaseException], ...] = (MemoryError,)  # "memory is full" exceptions
    max_allocation: int | None = None  # bytes of the largest single allocation, if smaller

    def __init__(self, backend, index: int = 0):  # backend: the Backend opening it
        self.backend = backend
        self.index = index
        self.name = f"{backend.name}:{index}"
        self._cache: dict[int, list[Allocation]] = {}
        self._allocated = self._reserved = self._peak = 0
        self._allocations = self._device_allocations = 0
        self._capabilities: Capabilities | None = None
        self._limit: int | None = None  # bytes of the largest allocation that can fit
        self._dtypes: frozenset[np.dtype] | None = None
        # the backend's kernels bound to this device: (op, dtype) -> fn(*natives, **params)
        self.kernels: dict = backend.kernels.bind(self) if backend.kernels else {}

    def __repr__(self) -> str:
        return f"<hal.Device {self.name}>"

    # -- hooks of a raw-memory device -----------------------------------------------------
    def _alloc(self, nbytes: int) -> Any:
        """Allocate raw device memory, return a handle; raise MemoryError when it does not fit."""
        raise DeviceError(f"{self.name}: this backend has no raw memory allocator")

    def _free(self, handle: Any) -> None:
        """Release a handle from `_alloc`."""

    def _copy_in(self, handle: Any, host: memoryview) -> None:
        """Copy host bytes into device memory (blocking)."""
        raise DeviceError(f"{self.name}: this backend has no host-to-device copy")

    def _copy_out(self, host: memoryview, handle: Any) -> None:
        """Copy device memory into host bytes (blocking)."""
        raise DeviceError(f"{self.name}: this backend has no device-to-host copy")

    # -- hooks of a device with its own array type (defaults: over the raw hooks) ----------
    def _empty(self, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        """A new uninitialised device-native array (default: a Buffer from the allocator)."""
        return Buffer(self, self.alloc(math.prod(shape) * dtype.itemsize), shape, dtype)

    def _upload(self, array: np.ndarray) -> Any:
        """A device-native array holding a copy of a host array (any strides)."""
        array = np.asarray(array, order="C")  # keeps 0-d arrays 0-d
        out = self._empty(array.shape, array.dtype)
        self.copy_in(out.allocation, array)
        return out

    def _download(self, native: Any) -> np.ndarray:
        """A host numpy array holding a copy of a device-native array."""
        out = np.empty(native.shape, native.dtype)
        self.copy_out(out, native.allocation)
        return out

    def _pool_stats(self) -> dict[str, int] | None:
        """What the memory pool knows: any of allocated, reserved, peak, allocations,
        device_allocations (keys left out are counted by the base class); None when the
        library keeps no accounting (default: the caching allocator's)."""
        return {"allocated": self._allocated, "reserved": self._reserved,
                "allocations": self._allocations,
                "device_allocations": self._device_allocations}

    def empty_cache(self) -> None:
        """Give every cached (free) block back to the device."""
        for bucket in self._cache.values():
            for allocation in bucket:
                self._free(allocation.handle)
                self._reserved -= allocation.size
        self._cache.clear()

    # -- hooks of every device ----------------------------------------------------------
    def synchronize(self) -> None:
        """Block until all work queued on the device has finished."""

    def _describe(self) -> dict:
        """Capabilities fields this device knows: name, vendor, versions, memory_bytes, ..."""
        return {"name": self.name}

    def _record_event(self) -> Any:
        """A timing mark after the work queued so far (default: synchronize, host clock)."""
        self.synchronize()
        return time.perf_counter()

    def _elapsed(self, start: Any, end: Any) -> float:
        """Seconds between two marks from `_record_event`."""
        return end - start

    # -- tensors' storage -------------------------------------------------------------------
    def empty(self, shape, dtype) -> Any:
        """A new uninitialised device-native array; HalOutOfMemory when it cannot fit."""
        shape, dtype = _request(self, "empty", shape, dtype)
        return self._allocating("empty", math.prod(shape) * dtype.itemsize, self._empty,
                                shape, dtype)

    def empty_factory(self, shape, dtype) -> Callable[[], Any]:
        """A function making new uninitialised arrays of one shape and dtype, checked once
        here: what a compiled graph calls on every run for the results it hands out."""
        shape, dtype = _request(self, "empty", shape, dtype)
        self._check_room(math.prod(shape) * dtype.itemsize, "empty")
        return functools.partial(self._empty, shape, dtype)


    def upload(self, array: np.ndarray) -> Any:
        """A device-native array holding a copy of a host array (the host device may share it)."""
        array = np.asarray(array)
        return self._allocating("upload", array.nbytes, self._upload, array)

    def download(self, native: Any) -> np.ndarray:
        """A host numpy array holding the values of a device-native array."""
        return self._download(native)

    def from_dlpack(self, obj: Any) -> Any:
        """A device-native array from a DLPack producer (default: through host memory)."""
        return self.upload(np.from_dlpack(obj))

    def check_fits(self, shape, dtype, op: str = "tensor", *, host_bytes: int | None = None
                   ) -> None:
        """Raise HalOutOfMemory if a tensor of this shape and dtype can never fit the device,
        or if the host array it is built from first (`host_bytes`, by default the tensor's
        size) does not fit the host's available memory: so creation refuses before numpy
        allocates."""
        nbytes = math.prod(int(n) for n in shape) * dt.dtype(dtype).itemsize
        self._check_room(nbytes, op)
        staged = nbytes if host_bytes is None else host_bytes
        available = host.lacks_memory_for(staged)
        if available is not None:
            raise self.out_of_memory(f"building {staged:,} bytes on the host for {op}",
                                     f"the host has {available:,} bytes available")

    def _check_room(self, nbytes: int, op: str) -> None:
        if self._limit is None:
            total = self.capabilities.memory_bytes
            self._limit = min(n for n in (total, self.max_allocation, 1 << 62) if n is not None)
        if nbytes > self._limit:
            largest = self.max_allocation
            why = (f"the device's largest buffer is {largest:,} bytes"
                   if largest is not None and nbytes > largest else
                   "more than the device's memory")
            raise self.out_of_memory(f"allocating {nbytes:,} bytes for {op}", why)

    def _allocating(self, op: str, nbytes: int, make: Callable, *args) -> Any:
        """make(*args) under the one memory policy: refuse what cannot fit; on one of
        `oom_errors` empty the cache and retry once, then HalOutOfMemory; count it."""
        self._check_room(nbytes, op)

        def doing() -> str:
            return f"allocating {nbytes:,} bytes for {op}"

        before = self._pool_stats()
        if before is None:  # the library keeps no accounting: nothing more to check or count
            return self.retrying(doing, make, *args)
        total = self.capabilities.memory_bytes
        if total is not None and before["allocated"] + nbytes > total:
            self.empty_cache()
            raise self.out_of_memory(doing(), "the live tensors and this one exceed the memory")
        native = self.retrying(doing, make, *args)
        after = self._pool_stats()
        self._allocations += "allocations" not in after
        self._device_allocations += ("device_allocations" not in after
                                     and after["reserved"] > before["reserved"])
        self._peak = max(self._peak, after["allocated"])
        return native

    def retrying(self, doing: Callable[[], str], fn: Callable, /, *args, **kwargs) -> Any:
        """fn(*args, **kwargs); on one of `oom_errors` the cache is emptied and fn retried
        once, then HalOutOfMemory saying what was being done (`doing()`, called only then)."""
        try:
            return fn(*args, **kwargs)
        except HalOutOfMemory:
            raise
        except self.oom_errors:
            pass  # leave the except block first, so its traceback frees the temporaries
        self.empty_cache()
        try:
            return fn(*args, **kwargs)
        except HalOutOfMemory:
            raise
        except self.oom_errors as e:
            why = f"{type(e).__name__}: {e}"
        self.empty_cache()
        raise self.out_of_memory(doing(), why) from None

    def out_of_memory(self, doing: str, why: str) -> HalOutOfMemory:
        """The out-of-memory error: device, what was asked, what is allocated, what to do."""
        stats = self.memory_stats()
        total = "unknown" if stats.total is None else f"{stats.total:,}"
        held = "" if stats.allocated is None else (
            f"{stats.allocated:,} bytes allocated, {stats.reserved or 0:,} reserved, ")
        return HalOutOfMemory(
            f"{self.name}: out of memory {doing}: {why} ({held}device total {total}). "
            "Free tensors, use smaller shapes, or pick a device with more memory."
        )

    # -- public protocol ------------------------------------------------------------------
    @property
    def capabilities(self) -> Capabilities:
        """The device's Capabilities (built once)."""
        if self._capabilities is None:
            facts = self._describe()
            self._capabilities = Capabilities(
                backend=self.backend.name,
                device=self.name,
                dtypes=tuple(dt.names(self.backend.dtypes(self))),
                ops=tuple(sorted(self.backend.kernels.ops()) if self.backend.kernels else ()),
                unsupported=dict(self.backend.unsupported_on(self)),
                timer=self.timer,
                **facts,
            )
        return self._capabilities

    def supports_dtype(self, dtype: np.dtype) -> bool:
        """True if tensors of this dtype can live and compute on the device."""
        if self._dtypes is None:
            self._dtypes = frozenset(self.backend.dtypes(self))
        return dtype in self._dtypes

    def check_dtype(self, dtype: np.dtype, op: str = "tensor") -> None:
        """Raise UnsupportedDType if the device cannot hold or compute this dtype."""
        if not self.supports_dtype(dtype):
            why = self.capabilities.unsupported.get(dtype.name, "not in the device's dtypes")
            raise UnsupportedDType(
                f"{op}: {self.name} does not support {dtype.name} ({why}); cast with "
                f"hal.astype or use a device whose capabilities list it"
            )

    def alloc(self, nbytes: int) -> Allocation:
        """Allocate raw device memory through the cache; HalOutOfMemory if it cannot fit."""
        size = size_class(nbytes)
        bucket = self._cache.get(size)
        if bucket:
            allocation = bucket.pop()
            allocation.nbytes = nbytes
        else:
            allocation = Allocation(self._alloc_or_oom(size, nbytes), nbytes, size)
            self._reserved += size
            self._device_allocations += 1
        self._allocations += 1
        self._allocated += size
        self._peak = max(self._peak, self._allocated)
        return allocation

    def _alloc_or_oom(self, size: int, nbytes: int) -> Any:
        doing = f"allocating {nbytes:,} bytes (size class {size:,})"
        total = self.capabilities.memory_bytes
        if total is not None and self._reserved + size > total:
            self.empty_cache()
            if self._reserved + size > total:
                raise self.out_of_memory(doing, "the device memory is full")
        return self.retrying(lambda: doing, self._alloc, size)

    def free(self, allocation: Allocation) -> None:
        """Return an allocation to the cache for reuse."""
        self._allocated -= allocation.size
        self._cache.setdefault(allocation.size, []).append(allocation)

    def copy_in(self, allocation: Allocation, host: np.ndarray) -> None:
        """Copy a contiguous host array into an allocation."""
        self._check_fits(allocation, host)
        self._copy_in(allocation.handle, _bytes(host))

    def copy_out(self, host: np.ndarray, allocation: Allocation) -> None:
        """Copy an allocation into a contiguous, writable host array."""
        self._check_fits(allocation, host)
        self._copy_out(_bytes(host), allocation.handle)

    def _check_fits(self, allocation: Allocation, host: np.ndarray) -> None:
        if not host.flags.c_contiguous:
            raise DeviceError(f"{self.name}: copies need a C-contiguous host array")
        if host.nbytes > allocation.size:
            raise DeviceError(
                f"{self.name}: copy of {host.nbytes:,} bytes into an allocation of "
                f"{allocation.size:,} bytes"
            )

    def memory_stats(self) -> MemoryStats:
        """Memory accounting in bytes: the pool's numbers, the rest counted here."""
        total = self.capabilities.memory_bytes
        pool = self._pool_stats()
        if pool is None:
            return MemoryStats(None, None, None, None, None, total)
        counted = {"peak": max(self._peak, pool["allocated"]), "allocations": self._allocations,
                   "device_allocations": self._device_allocations}
        return MemoryStats(**{**counted, **pool}, total=total)

    def reset_peak(self) -> None:
        """Start peak accounting afresh from the bytes allocated now."""
        pool = self._pool_stats()
        self._peak = pool["allocated"] if pool is not None else 0

    def record_event(self) -> Any:
        """A timing mark after the work queued so far."""
        return self._record_event()

    def elapsed(self, start: Any, end: Any) -> float:
        """Seconds between two marks from record_event (waits for `end` to complete)."""
        return self._elapsed(start, end)

    def kernel(self, op: str, dtype: np.dtype) -> Callable | None:
        """This device's kernel for an op on a dtype, or None."""
        return self.kernels.get((op, dtype))


def _request(device: Device, op: str, shape, dtype) -> tuple[tuple[int, ...], np.dtype]:
    """(shape, dtype) of an allocation request, checked: sizes not negative, dtype held."""
    shape = tuple(int(n) for n in shape)
    dtype = dt.dtype(dtype)
    if any(n < 0 for n in shape):
        raise ShapeError(f"{op} on {device.name}: negative size in shape {shape}")
    device.check_dtype(dtype, op)
    return shape, dtype


def _bytes(host: np.ndarray) -> memoryview:
    """A flat byte view of a contiguous array (any dtype, empty and 0-d included)."""
    return memoryview(host.reshape(-1).view(np.uint8))

