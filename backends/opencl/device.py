"""One OpenCL device: a context, a profiling queue, pyopencl's memory pool and the program
cache. hal.Device counts the pool, enforces the device's total and largest-buffer limits
(PoCL allocates lazily and never fails a request itself) and words out-of-memory errors.

Arrays are made with pyopencl's fast constructor (shape, strides and size given), which
skips the shape validation (tens of microseconds) its public one does per array."""

from __future__ import annotations

import functools
import math

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pyopencl.tools as cl_tools

import hal

from .program import Programs, launch

SMALL_RANGE = 1 << 16  # work-items below which one launch beats two (enqueue cost)
ASYNC_UPLOAD = 1 << 16  # bytes up to which an upload does not wait for the queue


class OpenCLDevice(hal.Device):
    """An OpenCL device; tensors are contiguous `pyopencl.array.Array`s from its pool."""

    timer = "OpenCL profiling events (markers on the in-order queue)"
    oom_errors = (cl.MemoryError, cl.RuntimeError)

    def __init__(self, backend: hal.Backend, index: int, cl_device: cl.Device):
        self.cl_device = cl_device
        self.context = cl.Context([cl_device])
        self.queue = cl.CommandQueue(
            self.context, properties=cl.command_queue_properties.PROFILING_ENABLE)
        super().__init__(backend, index)
        self.fp64 = bool(cl_device.double_fp_config)
        self.is_cpu = bool(cl_device.type & cl.device_type.CPU)
        self.local_mem = cl_device.local_mem_size
        self.max_group = cl_device.max_work_group_size
        self.max_allocation = cl_device.max_mem_alloc_size
        self.pool = cl_tools.MemoryPool(cl_tools.ImmediateAllocator(self.queue))
        # Last-axis complex FFTs by pyvkfft when it is installed, except on CPU devices:
        # on PoCL this backend's Stockham kernels measured 2x faster than VkFFT's.
        self.use_vkfft = not self.is_cpu
        self.opaque_launches = 0  # calls of libraries that enqueue behind pyopencl (VkFFT)
        self.cache: dict = {}  # host-side plans and tables of kernel modules (launch plans)
        self._splits: dict = {}  # (work-items, group) -> run_items's launches
        self.programs = Programs(self.context, f"{self.name} ({cl_device.name.strip()})")

    # -- tensors: hal.Device's memory hooks over pyopencl arrays from the pool ------------
    def _empty(self, shape: tuple, dtype: np.dtype) -> cl_array.Array:
        return cl_array.Array(None, shape, dtype, allocator=self.pool,
                              strides=_strides(shape, dtype.itemsize), _fast=True,
                              _size=math.prod(shape), _context=self.context, _queue=self.queue)

    def allocate(self, nbytes: int) -> cl.MemoryObjectHolder:
        """A buffer of at least nbytes from the pool (HalOutOfMemory when it cannot fit)."""
        return self.retrying(lambda: f"allocating {nbytes:,} bytes", self.pool.allocate, nbytes)

    def on_buffer(self, buffer, shape: tuple, dtype: np.dtype, strides: tuple,
                  offset: int) -> cl_array.Array:
        """An array over a buffer as given (byte strides and offset), nothing checked."""
        return cl_array.Array(None, shape, dtype, allocator=self.pool, data=buffer,
                              offset=offset, strides=strides, _fast=True,
                              _size=math.prod(shape), _context=self.context, _queue=self.queue)

    def view(self, array: cl_array.Array, shape: tuple) -> cl_array.Array:
        """A contiguous array's buffer seen in another shape of the same size (no copy)."""
        shape = tuple(shape)
        return cl_array.Array(None, shape, array.dtype, allocator=array.allocator,
                              data=array.base_data, offset=array.offset,
                              strides=_strides(shape, array.dtype.itemsize),
                              events=array.events, _fast=True, _size=array.size,
                              _context=self.context, _queue=self.queue)

    def _upload(self, array: np.ndarray) -> cl_array.Array:
        """Small arrays are copied on the host and written without waiting for the queue
        (the write's event, kept by the array, holds the copy); larger ones are written
        before returning. Either way the caller's array is not read after the return."""
        small = array.nbytes <= ASYNC_UPLOAD
        if small or not array.flags.c_contiguous:
            array = array.copy(order="C")  # np.ascontiguousarray would make 0-d arrays 1-d
        out = self._empty(array.shape, array.dtype)
        if array.size:
            written = cl.enqueue_copy(self.queue, out.base_data, array, dst_offset=out.offset,
                                      is_blocking=not small)
            if small:
                out.add_event(written)
        return out

    def _download(self, native: cl_array.Array) -> np.ndarray:
        out = np.empty(native.shape, native.dtype)
        if out.size:
            cl.enqueue_copy(self.queue, out, native.base_data, src_offset=native.offset)
        return out

    def _pool_stats(self) -> dict[str, int]:
        return {"allocated": self.pool.active_bytes, "reserved": self.pool.managed_bytes}

    def empty_cache(self) -> None:
        """Give the pool's free blocks back to the device."""
        self.pool.free_held()

    def from_dlpack(self, obj) -> cl_array.Array:
        """A copy of a DLPack producer's array (OpenCL memory cannot be shared through DLPack)."""
        return self.upload(np.from_dlpack(obj))

    def build(self, op: str, source: str, name: str, options: tuple[str, ...] = ()) -> cl.Kernel:
        """Kernel `name` of an OpenCL C source, built once on this device."""
        return self.programs.kernel(op, source, name, options)

    def run(self, kernel: cl.Kernel, global_size, local_size, *args):
        """Enqueue a kernel on the device's queue (nothing for an empty range)."""
        return launch(self.queue, kernel, global_size, local_size, *args)

    def run_items(self, kernel: cl.Kernel, total: int, *args, group: int | None = None):
        """Enqueue a 1-d kernel over exactly `total` work-items (see `work_split`)."""
        for global_size, local_size, offset in self.work_split(total, group):
            kernel(self.queue, global_size, local_size, *args, global_offset=offset)

    def work_split(self, total: int, group: int | None = None) -> tuple:
        """The launches covering exactly `total` work-items, as (global size, local size,
        global offset): whole work-groups, then the remainder at a global offset, so
        kernels need no bounds check (which stops PoCL from vectorising: a guarded
        a*b + c runs at less than half the bandwidth). Small ranges take one launch with
        the work-group size left to the runtime, since each enqueue costs microseconds."""
        key = (total, group)
        found = self._splits.get(key)
        if found is None:
            size = group or self.group_size()
            main = total - total % size
            if total == 0:
                found = ()
            elif main == 0 or (total < SMALL_RANGE and main != total):
                found = (((total,), None, None),)
            else:
                rest = (((total - main,), None, (main,)),) if main != total else ()
                found = (((main,), (size,), None), *rest)
            self._splits[key] = found
        return found

    def group_size(self, limit: int = 256) -> int:
        """A power-of-two work-group size the device accepts, at most limit."""
        size = 1
        while size * 2 <= min(limit, self.max_group):
            size *= 2
        return size

    # -- runtime --------------------------------------------------------------------------
    def synchronize(self) -> None:
        """Block until the queue is empty."""
        self.queue.finish()

    def _record_event(self) -> cl.Event:
        return cl.enqueue_marker(self.queue)

    def _elapsed(self, start: cl.Event, end: cl.Event) -> float:
        end.wait()
        return (end.profile.end - start.profile.end) * 1e-9

    def _describe(self) -> dict:
        d = self.cl_device
        return {
            "name": d.name.strip(),
            "vendor": d.vendor.strip(),
            "driver_version": d.driver_version,
            "runtime_version": d.platform.version,
            "memory_bytes": d.global_mem_size,
            "memory": "host" if self.is_cpu else None,  # a CPU device's buffers are host memory
            "compute_units": d.max_compute_units,
            "extra": {
                "platform": d.platform.name,
                "opencl_c_version": d.opencl_c_version,
                "fp64": bool(d.double_fp_config),
                "fp16_arithmetic": "cl_khr_fp16" in d.extensions,
                "local_memory_bytes": d.local_mem_size,
                "max_work_group_size": d.max_work_group_size,
                "max_buffer_bytes": d.max_mem_alloc_size,
                "fft": "vkfft (last axis) + stockham/bluestein"
                       if _vkfft() and self.use_vkfft else "stockham/bluestein",
            },
        }


@functools.lru_cache(maxsize=4096)
def _strides(shape: tuple, itemsize: int) -> tuple:
    """C-contiguous byte strides as pyopencl writes them (a size-0 axis counts as 1)."""
    strides = [itemsize]
    for n in shape[:0:-1]:
        strides.append(strides[-1] * max(1, n))
    return tuple(strides[::-1]) if shape else ()


def _vkfft() -> bool:
    from .vkfft import available

    return available()
