"""The runtime protocol: caching allocator, memory stats, out-of-memory, capabilities, events."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import hal
from backends.null import NullBackend
from hal.device import size_class


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
