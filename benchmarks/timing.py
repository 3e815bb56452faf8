"""Measure one workload on one device and dtype: check, warm up, calibrate, sample.

The output is checked against the numpy reference before any time counts (a wrong
answer is recorded as failed, not timed). Ops without a kernel on the device run under
the options' CPU-fallback policy: `error` (the default) skips the workload, `warn` and
`allow` measure it with the fallback calls counted in its placement. Warm-up calls are
discarded; the inner loop is calibrated so one sample lasts far longer than the timer's
resolution; each sample is bracketed by device events (`Device.record_event`, which
synchronises the device where it has no events of its own) and divided by the inner-loop
count. What a workload asks for besides its samples follows: its memory footprint and its
first call, each measured in fresh processes, and its facts (non-timed figures).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

import hal
from benchmarks import energy
from benchmarks.first_call import measure_first_call
from benchmarks.footprint import measure_footprint
from benchmarks.peaks import percent_of_peak
from benchmarks.schema.records import Check, Measurement, Placement
from benchmarks.stats import summarize
from benchmarks.workload import Workload


@dataclass(frozen=True)
class TimingOptions:
    """How to measure: samples wanted, time per sample, budget per measurement, and the
    CPU-fallback policy (`error`, `warn` or `allow`) the workload runs under. A
    single-stream workload takes up to `queries` samples of one call each within
    `query_budget` seconds (at least `min_samples`), for its latency percentiles.
    `quick_run` marks a `--quick` run, which leaves out the workloads marked `full_only`."""

    warmup: int = 2
    min_samples: int = 10
    max_samples: int = 30
    sample_time: float = 0.01
    budget: float = 2.0
    fallback: str = "error"
    queries: int = 200  # enough for a p99 that is not the slowest query
    query_budget: float = 10.0
    quick_run: bool = False

    def per_round(self, rounds: int) -> TimingOptions:
        """The share of one round when a measurement is split into `rounds` rounds."""
        return replace(
            self,
            min_samples=math.ceil(self.min_samples / rounds),
            max_samples=math.ceil(self.max_samples / rounds),
            budget=self.budget / rounds,
            queries=math.ceil(self.queries / rounds),
            query_budget=self.query_budget / rounds,
        )

    @classmethod
    def quick(cls) -> TimingOptions:
        """Fewer, shorter samples for `--quick` runs (8 still give a 99% CI: [min, max]; 100
        queries a 99th percentile that is the slowest)."""
        return cls(warmup=1, min_samples=8, max_samples=15, sample_time=0.005, budget=0.5,
                   queries=100, query_budget=5.0, quick_run=True)


def sync_method(device: hal.Device) -> str:
    """How the timed region is closed on this device."""
    if type(device)._record_event is not hal.Device._record_event:
        return "device events (record_event/elapsed)"
    return "synchronize() then host perf_counter"


def normwise_error(actual: np.ndarray, expected: np.ndarray) -> float:
    """max|actual - expected| / max|expected| (absolute error when expected is all zero)."""
    if actual.shape != expected.shape:
        raise ValueError(f"output shape {actual.shape} differs from the reference {expected.shape}")
    scale = float(np.max(np.abs(expected))) if expected.size else 0.0
    diff = float(np.max(np.abs(actual.astype(expected.dtype) - expected))) if actual.size else 0.0
    return diff / scale if scale > 0 else diff


def _wide(a: np.ndarray) -> np.ndarray:
    """The array in double precision for the reference computation."""
    if a.dtype.kind == "c":
        return a.astype(np.complex128)
    if a.dtype.kind == "f" or a.dtype.name == "bfloat16":
        return a.astype(np.float64)
    return a


def _time_block(device: hal.Device, run: Any, tensors: list, options: dict, inner: int) -> float:
    """Seconds per call of `inner` back-to-back calls, between two device events."""
    start = device.record_event()
    for _ in range(inner):
        run(*tensors, **options)
    end = device.record_event()
    return device.elapsed(start, end) / inner


def computes_on_host(device: hal.Device) -> bool:
    """True where the device's work runs on the host CPU in this process (its tensors live
    in host memory), so that the process's CPU time measures that work."""
    return device.capabilities.memory == "host"


def measure(
    workload: Workload,
    suite: str,
    dtype: str,
    device: hal.Device,
    timing: TimingOptions,
    peaks: dict[str, Any] | None = None,
) -> Measurement:
    """Measure `workload` on `device` for `dtype`; errors become failed/skipped records.

    What the device does not support (a dtype, an op, or an op that would need the CPU
    fallback under the policy `error`) is `skipped`; any other error is `failed`. The
    record keeps the policy and where each op ran, fallback calls counted.
    """
    record = Measurement(
        suite=suite,
        workload=workload.name,
        params=workload.params,
        backend=device.backend.name,
        device=device.name,
        dtype=dtype,
        timer=device.timer,
        sync=sync_method(device),
        warmup=timing.warmup,
        fallback_policy=timing.fallback,
    )
    if workload.full_only and timing.quick_run:
        record.status = "skipped"
        record.error = (f"NotMeasuredHere: left out of --quick runs ({workload.full_only}); "
                        "a run without --quick measures it")
        return record
    try:
        case = workload.build(np.dtype(hal.dtype(dtype)))
        tensors = [hal.asarray(a, device=device) for a in case.inputs]
        with hal.fallback_policy(timing.fallback), hal.placement() as placed:
            out = workload.run(*tensors, **workload.options)
            device.synchronize()
        record.placement = Placement(**placed.to_dict())
        expected = workload.reference(*[_wide(a) for a in case.inputs], **workload.options)
        error = normwise_error(np.asarray(out.numpy()), np.asarray(expected))
    except (hal.UnsupportedDType, hal.UnsupportedOp, hal.FallbackRefused) as exc:
        record.status, record.error = "skipped", f"{type(exc).__name__}: {exc}"
        return record
    except Exception as exc:  # any failure of the backend under test is a result, not a crash
        record.status, record.error = "failed", f"{type(exc).__name__}: {exc}"
        return record
    record.flops, record.bytes, record.items = case.flops, case.bytes, case.items
    tolerance = workload.tolerance(dtype)
    quality = workload.quality(np.asarray(out.numpy()), np.asarray(expected)) if (
        workload.quality) else {}
    record.check = Check(passed=bool(error <= tolerance), max_error=error, tolerance=tolerance,
                         quality=quality)
    if not record.check.passed:
        record.status = "failed"
        record.error = f"wrong answer: normwise error {error:.3g} > tolerance {tolerance:.3g}"
        return record
    try:
        with hal.fallback_policy(timing.fallback):
            record.samples, record.cpu_samples, record.inner_loops, record.energy = _sample(
                workload, device, tensors, timing)
    except Exception as exc:  # e.g. out of memory only once calls pile up
        record.status, record.error = "failed", f"while timing: {type(exc).__name__}: {exc}"
        return record
    summary = summarize(record.samples)
    record.stats = summary.to_dict()
    record.metrics = derived_metrics(record, summary.median, peaks or {})
    _measure_apart(record, workload, tensors, timing.fallback)
    return record


def _measure_apart(record: Measurement, workload: Workload, tensors: list, fallback: str) -> None:
    """Add what the workload asks for besides the samples: its footprint and first call
    (each in fresh processes) to the metrics, its facts; the timing stands when one of
    these fails, and the record's error says why that figure is missing."""
    apart = {"footprint": (workload.footprint, measure_footprint),
             "first call": (workload.first_call, measure_first_call)}
    notes = []
    for what, (asked, measure_it) in apart.items():
        if asked:
            try:
                record.metrics.update(measure_it(record.suite, workload, record.dtype,
                                                 record.device, fallback))
            except Exception as exc:  # the timing stands; the note says why
                notes.append(f"{what} not measured: {type(exc).__name__}: {exc}")
    if workload.facts:
        try:
            with hal.fallback_policy(fallback):
                record.facts = dict(workload.facts(*tensors, **workload.options))
        except Exception as exc:  # the timing stands; the note says why
            notes.append(f"facts not gathered: {type(exc).__name__}: {exc}")
    record.error = "; ".join(notes) or None


def calibrate(workload: Workload, device: hal.Device, tensors: list, sample_time: float) -> int:
    """Inner-loop count that makes one sample last at least `sample_time`.

    Grows the count from one call (as `timeit.autorange` does) until a timed block
    is long enough: a single call also times its events, so it overestimates tiny ops.
    """
    inner = 1
    for _ in range(30):
        total = _time_block(device, workload.run, tensors, workload.options, inner) * inner
        if total >= sample_time:
            break
        inner = max(2 * inner, math.ceil(1.2 * inner * sample_time / max(total, 1e-9)))
    return inner


def _sample(
    workload: Workload, device: hal.Device, tensors: list, timing: TimingOptions
) -> tuple[list[float], list[float], int, dict[str, Any]]:
    """Warm up (discarded), calibrate the inner loop, then sample: (seconds per call, the
    process's CPU seconds per call beside each sample where the device computes on the host
    (else empty), the inner loop, the energy read around the samples (`benchmarks.energy`)).

    At least `min_samples` are taken; more, up to `max_samples`, while within `budget`. A
    single-stream workload's samples are single calls (queries), up to `queries` of them
    within `query_budget`.
    """
    for _ in range(timing.warmup):
        _time_block(device, workload.run, tensors, workload.options, 1)
    if workload.single_stream:
        inner, most, budget = 1, max(timing.queries, timing.min_samples), timing.query_budget
    else:
        inner = calibrate(workload, device, tensors, timing.sample_time)
        most, budget = timing.max_samples, timing.budget
    samples: list[float] = []
    cpu: list[float] = []
    on_host = computes_on_host(device)
    meter = energy.EnergyMeter(energy.counter_for(device))
    counted = meter.start()
    started = time.perf_counter()
    while len(samples) < most and (
        len(samples) < timing.min_samples or time.perf_counter() - started < budget
    ):
        cpu_start = time.process_time()
        samples.append(_time_block(device, workload.run, tensors, workload.options, inner))
        if on_host:
            cpu.append((time.process_time() - cpu_start) / inner)
    return samples, cpu, inner, meter.stop(counted, len(samples) * inner)


def derived_metrics(record: Measurement, median: float, peaks: dict[str, Any]) -> dict[str, float]:
    """GFLOP/s, GB/s, items/s and % of the device's measured peak from the median time (no
    % of the memory's bandwidth peak for bytes that fit in its cache: `benchmarks.peaks`);
    where the energy was read, joules per call, mean watts, and items and GFLOP per joule."""
    metrics: dict[str, float] = {}
    if record.flops:
        metrics["gflops"] = record.flops / median / 1e9
    if record.bytes:
        metrics["gbps"] = record.bytes / median / 1e9
    if record.items:
        metrics["items_per_s"] = record.items / median
    if record.energy.get("available"):
        per_call = record.energy["joules_per_call"]
        metrics["joules_per_call"], metrics["watts"] = per_call, record.energy["watts"]
        if record.items:
            metrics["items_per_joule"] = record.items / per_call
        if record.flops:
            metrics["gflops_per_joule"] = record.flops / per_call / 1e9
    pct, _ = percent_of_peak(metrics, record.bytes, record.dtype, peaks)
    if pct is not None:
        metrics["pct_of_peak"] = pct
    return metrics


def merge_peak(peaks: dict[str, Any], kind: str, record: Measurement) -> dict[str, Any]:
    """Peaks with `record`'s rate folded in (the best rate seen is the practical peak); what
    else they hold (the memory's facts) stays."""
    if record.status != "ok":
        return peaks
    merged = {**peaks, "gflops": dict(peaks.get("gflops") or {}), "gbps": peaks.get("gbps")}
    rate = record.metrics.get(kind)
    if kind == "gflops" and rate:
        merged["gflops"][record.dtype] = max(rate, merged["gflops"].get(record.dtype, 0.0))
    elif kind == "gbps" and rate:
        merged["gbps"] = max(rate, merged["gbps"] or 0.0)
    return {k: v for k, v in merged.items() if v}


def pooled_energy(earlier: dict[str, Any], later: dict[str, Any]) -> dict[str, Any]:
    """The energy of two rounds of a measurement: joules, seconds and calls summed where
    both were read, else the later round's."""
    if not (earlier.get("available") and later.get("available")):
        return later
    joules, seconds = earlier["joules"] + later["joules"], earlier["seconds"] + later["seconds"]
    calls = earlier["calls"] + later["calls"]
    return {**later, "joules": joules, "seconds": seconds, "calls": calls,
            "joules_per_call": joules / calls, "watts": joules / seconds}


def merge_rounds(earlier: Measurement, later: Measurement, peaks: dict[str, Any]) -> Measurement:
    """One record of two rounds of a measurement: samples pooled, statistics recomputed.

    A failure in any round makes the whole measurement failed. `inner_loops` stays the
    first round's (each round calibrates its own; samples are seconds per call either way).
    """
    if earlier.status != "ok" or later.status != "ok":
        return later if later.status != "ok" else earlier
    merged = replace(
        later,
        samples=earlier.samples + later.samples,
        cpu_samples=earlier.cpu_samples + later.cpu_samples,
        inner_loops=earlier.inner_loops,
        rounds=earlier.rounds + later.rounds,
        energy=pooled_energy(earlier.energy, later.energy),
    )
    summary = summarize(merged.samples)
    merged.stats = summary.to_dict()
    merged.metrics = {**later.metrics, **derived_metrics(merged, summary.median, peaks)}
    return merged
