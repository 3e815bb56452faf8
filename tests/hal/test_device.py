"""The runtime protocol: caching allocator, memory stats, out-of-memory, capabilities, events."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import hal
from backends.null import NullBackend
from hal.runtime.memory import size_class


def small_null(memory_bytes: int):
    """A fresh null device claiming `memory_bytes` of memory."""
    backend = NullBackend()
    backend.memory_bytes = memory_bytes
    return backend.open(0)


@pytest.mark.parametrize("n", [0, 1, 511, 512, 513, 4096, 4097, 10_000, 1 << 20, (1 << 20) + 1])
def test_size_classes_cover_the_request_with_at_most_25_percent_slack(n):
    size = size_class(n)
    assert size >= n
    assert size % 512 == 0
    assert size <= max(512, n * 1.25 + 512)


def test_allocator_reuses_cached_blocks_and_counts():
    dev = small_null(1 << 20)
    a = dev.alloc(1000)
    stats = dev.memory_stats()
    assert (stats.allocated, stats.reserved, stats.allocations, stats.device_allocations) == (
        1024, 1024, 1, 1)
    dev.free(a)
    b = dev.alloc(900)  # same size class: served from the cache
    stats = dev.memory_stats()
    assert stats.device_allocations == 1 and stats.allocations == 2
    assert b.handle is a.handle
    dev.free(b)
    assert dev.memory_stats().allocated == 0
    assert dev.memory_stats().peak == 1024
    dev.empty_cache()
    assert dev.memory_stats().reserved == 0


def test_tensors_return_memory_when_collected():
    dev = small_null(1 << 20)
    t = hal.asarray(np.ones(1000, np.float64), device=dev)
    assert dev.memory_stats().allocated == size_class(8000)
    del t
    gc.collect()
    assert dev.memory_stats().allocated == 0


def test_out_of_memory_names_device_and_sizes_and_empties_the_cache():
    dev = small_null(64 * 1024)
    keep = dev.alloc(40 * 1024)
    cached = dev.alloc(16 * 1024)
    dev.free(cached)
    with pytest.raises(hal.HalOutOfMemory) as info:
        dev.alloc(48 * 1024)
    message = str(info.value)
    assert "null:0" in message and "49,152 bytes" in message and "65,536" in message
    assert dev.memory_stats().reserved == 40 * 1024  # the cached block was given back
    dev.free(keep)


def test_out_of_memory_from_the_hook_is_retried_after_emptying_the_cache():
    class Flaky(type(small_null(1024))):
        fail = True

        def _alloc(self, nbytes):
            if self.fail and self._cache:
                raise MemoryError
            return bytearray(nbytes)

        def empty_cache(self):
            super().empty_cache()
            Flaky.fail = False

    backend = NullBackend()
    dev = Flaky(backend, 0, 1 << 20)
    dev.free(dev.alloc(512))
    assert dev.alloc(100_000).size >= 100_000


def test_copy_round_trip_of_every_dtype(null):
    for d in hal.ALL:
        host = (np.arange(12) % 3).astype(d).reshape(3, 4)
        assert np.array_equal(hal.asarray(host, device=null).numpy(), host)
    empty = hal.asarray(np.zeros((0, 3), np.float32), device=null)
    assert empty.numpy().shape == (0, 3)
    scalar = hal.asarray(np.float32(2.0), device=null)
    assert scalar.shape == () and scalar.item() == 2.0


def test_capabilities_are_complete_and_json_ready(cpu):
    caps = cpu.capabilities
    assert caps.backend == "cpu" and caps.device == "cpu:0"
    assert set(caps.dtypes) == {d.name for d in hal.ALL}
    assert set(caps.ops) == set(hal.ops.names())
    d = caps.to_dict()
    assert d["memory_bytes"] and d["compute_units"]
    measured = caps.with_peaks({"gflops": {"float32": 100.0}})
    assert measured.peaks["gflops"]["float32"] == 100.0 and caps.peaks == {}


def test_events_measure_elapsed_time(cpu):
    start = cpu.record_event()
    hal.matmul(hal.ones((64, 64)), hal.ones((64, 64)))
    end = cpu.record_event()
    assert 0 <= cpu.elapsed(start, end) < 10
    assert "synchronize" in cpu.timer


def test_unavailable_backend_and_bad_index_say_why():
    class Missing(hal.Backend):
        name = "missing"

        def why_unavailable(self):
            return "driver libmissing.so not found"

    with pytest.raises(hal.BackendUnavailable, match="libmissing"):
        Missing().open()
    assert Missing().devices() == []
    with pytest.raises(hal.BackendUnavailable, match="out of range"):
        hal.backend("cpu").open(3)


# -- the one memory path: Device.empty/upload/download/memory_stats over either set of hooks
class LibraryOOM(Exception):
    """What a vendor library raises when its device memory is full."""


class LibraryDevice(hal.Device):
    """A device over a library's own arrays (numpy stands in), with a pool of its own."""

    oom_errors = (LibraryOOM,)

    def __init__(self, backend, failures: int = 0):
        self.failures, self.emptied, self.live, self.held = failures, 0, 0, 0
        super().__init__(backend, 0)

    def _empty(self, shape, dtype):
        if self.failures:
            self.failures -= 1
            raise LibraryOOM("pool exhausted")
        out = np.empty(shape, dtype)
        self.live += out.nbytes
        self.held = max(self.held, self.live)
        return out

    def _upload(self, array):
        out = self._empty(array.shape, array.dtype)
        out[...] = array
        return out

    def _download(self, native):
        return native.copy()

    def _pool_stats(self):
        return {"allocated": self.live, "reserved": self.held}

    def empty_cache(self):
        self.emptied += 1

    def _describe(self):
        return {"name": "library device", "memory_bytes": 1 << 20}


class LibraryBackend(hal.Backend):
    name = "library"


def test_empty_upload_download_through_the_native_hooks_are_counted():
    dev = LibraryDevice(LibraryBackend())
    out = dev.empty((4, 8), "float32")
    assert out.shape == (4, 8) and out.dtype == np.float32
    host = np.arange(6, dtype=np.int32).reshape(2, 3).T  # not C-contiguous
    np.testing.assert_array_equal(dev.download(dev.upload(host)), host)
    stats = dev.memory_stats()
    assert (stats.allocated, stats.reserved, stats.peak) == (128 + 24, 128 + 24, 128 + 24)
    assert (stats.allocations, stats.device_allocations, stats.total) == (2, 2, 1 << 20)


def test_empty_factory_checks_once_and_makes_arrays_of_its_shape_and_dtype():
    dev = LibraryDevice(LibraryBackend())
    make = dev.empty_factory((4, 8), "float32")
    first, second = make(), make()
    assert first is not second and first.shape == second.shape == (4, 8)
    assert first.dtype == np.float32
    with pytest.raises(hal.ShapeError, match="negative size"):
        dev.empty_factory((-1,), "float32")
    with pytest.raises(hal.HalOutOfMemory, match="library:0"):
        dev.empty_factory((1 << 20,), "float64")  # 8 MiB on a 1 MiB device


def test_library_out_of_memory_empties_the_cache_and_retries_once():
    dev = LibraryDevice(LibraryBackend(), failures=1)
    assert dev.empty((16,), "float64").shape == (16,)
    assert dev.emptied == 1
    dev = LibraryDevice(LibraryBackend(), failures=2)
    with pytest.raises(hal.HalOutOfMemory) as info:
        dev.empty((16,), "float64")
    message = str(info.value)
    assert "library:0" in message and "128 bytes" in message and "pool exhausted" in message
    assert "0 bytes allocated" in message and "1,048,576" in message
    assert dev.emptied == 2


def test_oversized_and_malformed_requests_are_refused_before_allocating():
    dev = LibraryDevice(LibraryBackend(), failures=0)
    with pytest.raises(hal.HalOutOfMemory, match=r"library:0.*8,388,608 bytes for empty"):
        dev.empty((1 << 20,), "float64")
    dev.empty((1 << 16,), "float64")  # half the memory is live ...
    with pytest.raises(hal.HalOutOfMemory, match="live tensors"):
        dev.upload(np.zeros((1 << 16) + 1))  # ... so a bit more than the other half fails
    assert dev.memory_stats().allocations == 1
    with pytest.raises(hal.ShapeError, match="negative"):
        dev.empty((2, -1), "float32")
    null = small_null(1 << 20)
    buffer = null.empty((3,), "int32")
    assert isinstance(buffer, hal.Buffer) and buffer.shape == (3,) and buffer.dtype == np.int32


def test_huge_creation_is_refused_before_a_host_array_is_built(cpu):
    import tracemalloc

    tracemalloc.start()
    try:
        with pytest.raises(hal.HalOutOfMemory, match=r"cpu:0: out of memory .*8,796,093,022,208"):
            hal.zeros((1 << 40,))
        assert tracemalloc.get_traced_memory()[1] < 1 << 20
    finally:
        tracemalloc.stop()
    with pytest.raises(hal.HalOutOfMemory, match="null:0"):
        hal.ones((1 << 28,), dtype="float64", device="null")  # 2 GiB > the null device's 1


def test_dtype_gaps_are_declared_once_with_their_reason():
    class NoHalf(LibraryBackend):
        unsupported = {"float16": "the chip has no half-precision units", "fftn": "no FFT"}

    dev = LibraryDevice(NoHalf())
    assert "float16" not in dev.capabilities.dtypes and "float32" in dev.capabilities.dtypes
    with pytest.raises(hal.UnsupportedDType, match="no half-precision units"):
        dev.empty((2,), "float16")


def test_a_failing_open_or_describe_is_backend_unavailable():
    class Crashing(hal.Backend):
        name = "crashing"

        def _open_device(self, index):
            raise SystemExit("driver called exit()")

    with pytest.raises(hal.BackendUnavailable, match=r"crashing.*SystemExit: driver called"):
        Crashing().open()

    class BadFacts(hal.Backend):
        name = "badfacts"

        def _open_device(self, index):
            device = hal.Device(self, index)
            device._describe = lambda: 1 / 0
            return device

    with pytest.raises(hal.BackendUnavailable, match="ZeroDivisionError"):
        BadFacts().open()
