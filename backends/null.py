"""The null backend: the copy-me template for a new chip.

It implements the runtime protocol over host memory (a bytearray per allocation) and
registers no kernels, so every op runs through decomposition and the CPU fallback. Every
hook hal calls is written out below with a "Vendor:" line saying what to put there; the
ones marked optional keep the base class's behaviour when deleted. README.md ("Add a
backend") is the same contract in prose, with the table of every op's keyword params.

Copy this file to `mychip_hal/backend.py`, replace each hook with your driver's calls,
register kernels one op at a time, and watch `hal conformance --backend mychip` move
ops from `fallback` to `pass`. The entry point in your package's pyproject.toml names your
Backend class, which hal calls with no arguments:

    [project.entry-points."hal.backends"]
    mychip = "mychip_hal.backend:MyChipBackend"

Your chip's own framework becomes a peer the benchmarks time beside hal on the same
device with one more entry point naming a `frontends.science.peers.PeerSpec` whose
loaders are keyed by your backend's name (docs/bring-up.md, "Your chip against its own
native stack"):

    [project.entry-points."hal.peers"]
    mychip-native = "mychip_hal.peer:PEER"
"""

from __future__ import annotations

import time

import numpy as np

import hal

# Register kernels here, one op at a time:
#
#     @kernels.register("add", hal.FLOATS)
#     def add(device, a, b, *, out_shape, out_dtype):
#         out = device.empty(out_shape, out_dtype)   # a kernel returns a new native array
#         ...launch your kernel on a, b -> out...
#         return out
#
# A kernel receives device-native arrays (here hal.Buffer: allocation, shape, dtype), and
# None for an absent optional operand. Dispatch has checked shapes and dtypes, promoted the
# operands to one dtype and made Python scalars 0-d arrays; operands arrive unbroadcast
# (a binary kernel broadcasts them itself, to out_shape). out_shape/out_dtype are passed
# only to kernels that declare them. The op's keyword params (axis, keepdims, ...) arrive
# as given by the user and validated by the op's rule: see README.md, "Per-op params".
# float16/bfloat16: compute in float32 and round the result once, as the reference does
# (hal.ops.in_float32 wraps a kernel on arrays with .astype to do so).
kernels = hal.KernelTable("null")


class NullDevice(hal.Device):
    """A device whose memory is host bytearrays; a vendor replaces each hook with driver calls."""

    timer = "host perf_counter after synchronize()"  # Vendor: what your timing events measure
    oom_errors = (MemoryError,)  # Vendor: your library's out-of-memory exception types
    max_allocation = None  # Vendor: bytes of the largest single buffer, if below the memory

    def __init__(self, backend: hal.Backend, index: int, memory_bytes: int):
        self._memory_bytes = memory_bytes
        super().__init__(backend, index)

    # -- memory, raw: hal's caching allocator pools it and tensors are hal.Buffer -----------
    def _alloc(self, nbytes: int) -> bytearray:
        """Vendor: allocate nbytes of device memory and return your handle (a pointer, an object).

        Raise one of `oom_errors` when the device is full: the base class then empties its
        cache, retries once, and raises HalOutOfMemory with the device's name and sizes.
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

    # -- memory, a library's own arrays (optional: instead of the four raw hooks) ---------
    def _empty(self, shape: tuple[int, ...], dtype: np.dtype):
        """Vendor (optional): a new uninitialised array of your library (cupy.empty, say).

        The base class has checked the size against the device and retries on `oom_errors`.
        """
        return super()._empty(shape, dtype)

    def _upload(self, array: np.ndarray):
        """Vendor (optional): your library's array holding a copy of a host array (any strides)."""
        return super()._upload(array)

    def _download(self, native) -> np.ndarray:
        """Vendor (optional): a host numpy array holding a copy of your library's array."""
        return super()._download(native)

    def _pool_stats(self) -> dict[str, int] | None:
        """Vendor (optional): your pool's accounting, any of allocated, reserved, peak,
        allocations, device_allocations (the base class counts what you leave out), or
        None when the library cannot tell."""
        return super()._pool_stats()

    def empty_cache(self) -> None:
        """Vendor (optional): give your pool's cached free blocks back to the device."""
        super().empty_cache()

    def from_dlpack(self, obj):
        """Vendor (optional): import a DLPack producer without a copy where your memory can."""
        return super().from_dlpack(obj)

    # -- runtime -------------------------------------------------------------------------------
    def synchronize(self) -> None:
        """Vendor: block until every queued kernel and copy has finished."""

    def _record_event(self) -> float:
        """Vendor (optional): record a timing event after the queued work (a device event)."""
        self.synchronize()
        return time.perf_counter()

    def _elapsed(self, start: float, end: float) -> float:
        """Vendor (optional): seconds between two events from _record_event (wait for `end`)."""
        return end - start

    def energy_joules(self) -> float | None:
        """Vendor (optional): your driver's energy counter of this device in joules (any
        origin, never decreasing), or None where it cannot be read. `hal bench` reads it
        around each measurement's samples for joules per call, watts and work per joule;
        without it a device on host memory gets the host's RAPL counter where readable."""
        return None

    def _describe(self) -> dict:
        """Vendor: facts read from the device; any of the keys name, vendor, driver_version,
        runtime_version, memory_bytes, memory ("host" where tensors live in host memory: its
        devices share one bandwidth peak), compute_units, extra (a dict of anything else)."""
        return {
            "name": "null device (host memory, no kernels)",
            "vendor": "hal",
            "driver_version": hal.__version__,
            "runtime_version": None,
            "memory_bytes": self._memory_bytes,
            "memory": "host",
            "compute_units": 1,
            "extra": {"memory": "host bytearrays"},
        }


class NullBackend(hal.Backend):
    """A backend with the runtime protocol and no kernels: every op falls back to the CPU."""

    name = "null"  # Vendor: the name users type (hal.device("mychip:0"), --backend mychip)
    api_version = hal.API_VERSION  # Vendor: the protocol version your plugin implements
    kernels = kernels
    unsupported: dict[str, str] = {}  # Vendor: dtype or op name -> why your chip lacks it
    memory_bytes = 1 << 30  # what the null device claims to have; the allocator enforces it

    def why_unavailable(self) -> str | None:
        """Vendor: return why no device can be opened (driver missing, no hardware), else None.

        Keep it cheap: check that the library imports and a device is listed; open nothing.
        Return a reason rather than raising; hal runs it under a timeout all the same.
        """
        return None

    def device_count(self) -> int:
        """Vendor: how many devices the driver lists."""
        return 1

    def _load_kernels(self) -> None:
        """Vendor (optional): import the kernel modules that import your library at their top
        (hal calls this once the backend is available), so the plugin loads without it."""

    def _open_device(self, index: int) -> NullDevice:
        """Vendor: open device `index` (hal calls this once per index and caches it)."""
        return NullDevice(self, index, self.memory_bytes)

    def compile(self, graph, device: NullDevice):
        """Vendor (optional, best left alone unless your runtime runs whole graphs): compile
        a hal.jit graph into one executable (a runtime session, say): called with the input
        Tensors it returns the output Tensors, and its counts() maps how it runs the nodes
        ('compiled', or 'WAY:OP') to how many, which hal.placement() and benchmark results
        record (hal.Backend.compile has the contract). Returning None (the default) gives
        hal's own: the graph lowered and fused, compile_fused asked per group, and replayed
        without dispatch."""
        return None

    def compile_fused(self, body, device: NullDevice):
        """Vendor (optional): compile a fused group of a hal.jit graph (elementwise ops,
        perhaps ending in a reduction) into one kernel; return None to decline (the group's
        nodes then run one by one). See hal.Backend.compile_fused for the contract."""
        return None

    def capture(self, device: NullDevice, run):
        """Vendor (optional, with replay): where launching a kernel costs the host more than
        running it, record the launches of one call of run() (a jitted graph on fixed
        buffers) and return the recording; raise to refuse, saying why. None (the default)
        runs jitted graphs as they are. hal.Backend.capture has the contract,
        backends/cuda/capture.py does it with CUDA graphs:

            queue = device.new_queue()                  # a queue of the graph's own
            with queue.current():                       # your kernels launch on it
                run()                                   # warm-up: caches, pools settled
                queue.begin_recording()
                run()                                   # these launches are recorded
                return queue.end_recording()
        """
        return None

    def replay(self, device: NullDevice, graph, copies: list, outputs: list) -> list:
        """Vendor (optional, with capture): copy each (source, fixed buffer) pair of copies,
        launch the recording from capture after them, and return new copies of outputs:

            for source, fixed in copies:
                device.copy(source, fixed)
            graph.launch()
            return [device.clone(out) for out in outputs]
        """
        return super().replay(device, graph, copies, outputs)

    def unsupported_on(self, device: NullDevice) -> dict[str, str]:
        """Vendor (optional): gaps that depend on the device (float64 without fp64 units)."""
        return dict(self.unsupported)

    def dtypes(self, device: NullDevice) -> tuple[np.dtype, ...]:
        """Vendor (optional, best left alone): every hal dtype not in unsupported_on, so a gap
        is declared once, with its reason."""
        return super().dtypes(device)
