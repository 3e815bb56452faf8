"""Which peak a device's measurements are held against, and their % of it.

A device's FLOP/s peaks are its own (the best GEMM rate of the `peak` suite on it). Its
bandwidth peak belongs to the memory its tensors live in: every device on host memory
(capability `memory == "host"`) shares the host's figure (`benchmarks.bandwidth`, raised
by any backend's STREAM workload beyond the cache that beats it: the best rate any kernel
reaches on a memory is its practical peak), while a device with memory of its own keeps
the best STREAM rate of the `peak` suite on it. The
peaks dict of a device holds `gflops` (dtype -> GFLOP/s), `gbps` and `memory`: the memory's
name, its cache size and what measured its bandwidth.

A workload whose bytes fit in the memory's last-level cache is "in cache": its rate may
exceed the memory's bandwidth, so it has no % of that peak. A rate above its peak
otherwise keeps its figure with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any  # no hal here: the report layer reads these rules

HOST = "host"  # the memory name of every device whose tensors live in host memory
IN_CACHE = "in cache"
ABOVE = 100.0 + 1e-6  # a peak workload's own figure is 100% up to rounding
REAL_PART = {"complex64": "float32", "complex128": "float64"}
_MEMORY_FIELDS = ("gbps", "memory")


def on_host(capabilities: Mapping[str, Any]) -> bool:
    """True for a device whose tensors live in host memory."""
    return capabilities.get("memory") == HOST


def measures_peak(kind: str | None, capabilities: Mapping[str, Any]) -> bool:
    """True if a workload marked `peak=kind` measures this device's own peak: GEMM rates
    always, STREAM rates only on a device with memory of its own (host memory's peak is
    measured once for all, so STREAM on a host device is an ordinary measurement)."""
    return kind == "gflops" or (kind == "gbps" and not on_host(capabilities))


def memory_entry(host: Mapping[str, Any]) -> dict[str, Any]:
    """What a host device's peaks say of the host memory's measured bandwidth."""
    return {"name": HOST, "cache_bytes": host.get("cache_bytes"), "kernel": host.get("kernel"),
            "array_bytes": host.get("array_bytes"), "load": host.get("load"),
            "run": host.get("run")}


def with_memory_peak(peaks: Mapping[str, Any], capabilities: Mapping[str, Any], device: str,
                     host: Mapping[str, Any] | None) -> dict[str, Any]:
    """`peaks` with the bandwidth peak of the device's memory: the host's figure on host
    memory (none while the host's is unknown: a per-backend figure is no memory's peak),
    else the device's own, with its cache size where the device names one."""
    if on_host(capabilities):
        own = {k: v for k, v in peaks.items() if k not in _MEMORY_FIELDS}
        return {**own, "gbps": host["gbps"], "memory": memory_entry(host)} if host else own
    cache = (capabilities.get("extra") or {}).get("l2_cache_bytes")
    return {**peaks, "memory": {"name": device, "cache_bytes": cache}} if cache else dict(peaks)


def own_peaks(peaks: Mapping[str, Any], capabilities: Mapping[str, Any]) -> dict[str, Any]:
    """The peaks a device measured itself (what is cached per device): a host device's
    bandwidth belongs to the host memory, cached once under its name."""
    if on_host(capabilities):
        return {k: v for k, v in peaks.items() if k not in _MEMORY_FIELDS}
    return dict(peaks)


def in_cache(nbytes: float | None, cache_bytes: int | None) -> bool:
    """True if a call's bytes fit in a memory's last-level cache of `cache_bytes`."""
    return bool(nbytes and cache_bytes and nbytes <= cache_bytes)


def percent_of_peak(metrics: Mapping[str, float], nbytes: float | None, dtype: str,
                    peaks: Mapping[str, Any]) -> tuple[float | None, str]:
    """(% of peak, note): of the FLOP/s peak for the dtype where the measurement has a rate
    in FLOP/s and the device a peak for it (a complex dtype without a peak of its own: of
    its real part's, its FLOPs being real ones, which the note says), else of the memory's
    bandwidth peak. The note is empty, "in cache" (no % of the memory's peak: the bytes fit
    in its cache), the real dtype's peak, or the reason a figure is above 100."""
    gflops = peaks.get("gflops") or {}
    real = REAL_PART.get(dtype)
    peak_flops = gflops.get(dtype) or gflops.get(real)
    if metrics.get("gflops") and peak_flops:
        pct = 100.0 * metrics["gflops"] / peak_flops
        note = ("above the best GEMM rate the peak suite measured on this device "
                f"({peak_flops:.4g} GFLOP/s)") if pct > ABOVE else ""
        if real and dtype not in gflops:
            note = "; ".join(filter(None, [f"of the {real} peak (real FLOPs)", note]))
        return pct, note
    if not (metrics.get("gbps") and peaks.get("gbps")):
        return None, ""
    memory = peaks.get("memory") or {}
    if in_cache(nbytes, memory.get("cache_bytes")):
        return None, IN_CACHE
    pct = 100.0 * metrics["gbps"] / peaks["gbps"]
    load = f", measured at load {memory['load']:.1f}" if memory.get("load") is not None else ""
    note = (f"above the {memory.get('name', 'memory')} bandwidth peak ({peaks['gbps']:.4g} "
            f"GB/s by {memory.get('kernel') or 'the peak suite'}{load})" if pct > ABOVE else "")
    return pct, note
