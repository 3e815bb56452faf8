"""The host memory's bandwidth: one STREAM-style figure shared by every device on host memory.

Every backend whose tensors live in host memory (cpu, OpenCL on a CPU such as PoCL, TVM's
llvm target, ONNX Runtime's CPU provider) moves bytes through the same DRAM, so they share
one bandwidth peak, measured here once with the fastest of a few kernels rather than with
each backend's own (slower) ops. The kernels, timed in turn and counted as STREAM counts
them (copy moves 2 arrays, triad 3; a store's write-allocate read is not counted):

- numpy copy (`np.copyto`: glibc's memcpy, which uses non-temporal stores on large
  arrays, so it moves no write-allocate traffic) on one thread, and on HAL_THREADS threads
  over one slice each (numpy releases the GIL while it copies);
- STREAM's copy and triad loops compiled by numba with `prange` on HAL_THREADS threads.

The arrays are sized from the last-level cache read from /sys at run time: three arrays
hold at least 4x the host's last-level cache (STREAM's rule), 256 MiB each at least, and
at most an eighth of the available memory each. The figure is the best rate over the
repeats of all kernels (STREAM reports its best rate: the least disturbed repeat).
"""

from __future__ import annotations

import functools
import itertools
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

import hal
from benchmarks.peaks import HOST

CACHE_MULTIPLE = 4  # STREAM's rule: the arrays hold at least 4x the last-level cache
MIN_ARRAY_BYTES = 256 * 2**20
TRIAD_SCALAR = 3.0
_SIZE_UNITS = {"K": 2**10, "M": 2**20, "G": 2**30}


def _cache_size(text: str) -> int:
    """A /sys cache size such as `491520K` in bytes."""
    text = text.strip()
    unit = _SIZE_UNITS.get(text[-1:].upper(), 1)
    return int(text.rstrip("KMGkmg")) * unit


def last_level_cache_bytes(root: Path = Path("/sys/devices/system/cpu")) -> int | None:
    """The host's last-level cache in bytes: the highest data cache level's size summed over
    its instances (one per group of CPUs sharing it, e.g. one per socket); None where /sys
    does not say and sysconf does not know either."""
    instances: dict[tuple[int, str], int] = {}
    for index in root.glob("cpu[0-9]*/cache/index[0-9]*"):
        try:
            if (index / "type").read_text().strip() == "Instruction":
                continue
            level = int((index / "level").read_text())
            shared = (index / "shared_cpu_list").read_text().strip()
            instances[(level, shared)] = _cache_size((index / "size").read_text())
        except (OSError, ValueError):
            continue
    if instances:
        top = max(level for level, _ in instances)
        return sum(size for (level, _), size in instances.items() if level == top)
    for name in ("SC_LEVEL3_CACHE_SIZE", "SC_LEVEL2_CACHE_SIZE"):
        size = os.sysconf(name) if name in os.sysconf_names else 0
        if size > 0:
            return size
    return None


def _available_bytes() -> int | None:
    """MemAvailable from /proc/meminfo, None where it cannot be read."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return None


def array_bytes(cache_bytes: int | None, available: int | None) -> int:
    """Bytes of each of the three arrays: together at least CACHE_MULTIPLE x the last-level
    cache, at least MIN_ARRAY_BYTES, at most an eighth of the available memory."""
    wanted = max(MIN_ARRAY_BYTES, -(-CACHE_MULTIPLE * (cache_bytes or 0) // 3))
    return min(wanted, available // 8) if available else wanted


@functools.cache
def _numba_kernels() -> tuple[Callable, Callable]:
    """STREAM's copy and triad loops, compiled by numba with prange (cached on disk)."""
    import numba

    @numba.njit(parallel=True, cache=True)
    def copy(a, c):
        for i in numba.prange(a.size):
            c[i] = a[i]

    @numba.njit(parallel=True, cache=True)
    def triad(a, b, c, q):
        for i in numba.prange(a.size):
            a[i] = b[i] + q * c[i]

    return copy, triad


def _kernels(a: np.ndarray, b: np.ndarray, c: np.ndarray, threads: int,
             pool: ThreadPoolExecutor) -> dict[str, tuple[Callable[[], Any], int]]:
    """The kernels by name: (call, arrays it moves as STREAM counts them)."""
    import numba

    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    copy, triad = _numba_kernels()
    bounds = np.linspace(0, a.size, threads + 1, dtype=np.int64)
    slices = [slice(lo, hi) for lo, hi in itertools.pairwise(bounds)]

    def threaded_copy() -> None:
        list(pool.map(lambda s: np.copyto(c[s], a[s]), slices))

    kernels = {"numpy copy (memcpy), 1 thread": (lambda: np.copyto(c, a), 2)}
    if threads > 1:
        kernels[f"numpy copy (memcpy), {threads} threads"] = (threaded_copy, 2)
    kernels[f"numba copy, {threads} threads"] = (lambda: copy(a, c), 2)
    kernels[f"numba triad, {threads} threads"] = (lambda: triad(a, b, c, TRIAD_SCALAR), 3)
    return kernels


def measure_host_bandwidth(repeats: int = 10, threads: int | None = None) -> dict[str, Any]:
    """The host memory's bandwidth peak: the best STREAM rate of the kernels (GB/s, 1e9 B/s)
    with what it was measured with: {"memory", "gbps", "kernel", "kernels" (name -> best and
    median GB/s), "array_bytes", "cache_bytes", "threads", "repeats", "load"}."""
    threads = threads or hal.settings.threads
    cache = last_level_cache_bytes()
    n = array_bytes(cache, _available_bytes()) // 8
    a, b, c = (np.full(n, value) for value in (1.0, 2.0, 0.0))  # written: pages are touched
    rates: dict[str, list[float]] = {}
    with ThreadPoolExecutor(threads) as pool:
        kernels = _kernels(a, b, c, threads, pool)
        for call, _ in kernels.values():  # compile and warm up
            call()
        for _ in range(repeats):  # interleaved, so drift of the machine hits every kernel
            for name, (call, arrays) in kernels.items():
                start = time.perf_counter()
                call()
                rates.setdefault(name, []).append(arrays * a.nbytes / (time.perf_counter()
                                                                      - start) / 1e9)
    best = max(rates, key=lambda name: max(rates[name]))
    return {
        "memory": HOST,
        "gbps": max(rates[best]),
        "kernel": best,
        "kernels": {name: {"best": max(r), "median": float(np.median(r))}
                    for name, r in rates.items()},
        "array_bytes": int(a.nbytes),
        "cache_bytes": cache,
        "threads": threads,
        "repeats": repeats,
        "load": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
    }
