"""Result files as one pandas table: a row per measurement, a `series` per backend, device,
host and run; conformance files beside them."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from benchmarks.peaks import percent_of_peak
from benchmarks.schema.files import load_results, regular_file
from benchmarks.schema.records import Measurement, Results, RunRecord
from reports.conformance import ConformanceRun, is_conformance, read_conformance

KEY_COLUMNS = ["suite", "workload", "params", "dtype"]


def format_params(params: dict[str, Any]) -> str:
    """Params as a short stable label, e.g. `M=1760 N=16`."""
    return " ".join(f"{k}={v}" for k, v in sorted(params.items()))


def format_seconds(seconds: float | None) -> str:
    """Seconds as a short human figure with a unit (ns, us, ms, s)."""
    if seconds is None or pd.isna(seconds):
        return ""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(seconds) >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def pct_of_peak(m: Measurement, run: RunRecord) -> tuple[float | None, str]:
    """(% of the device's peak in the run record, note): FLOP/s for its dtype, else GB/s of
    the device's memory (`benchmarks.peaks`: the note says "in cache" for bytes that fit in
    the memory's cache, which have no % of its bandwidth, or why a figure is above 100).

    The run record holds the final peaks (the best rates of the `peak` suite), so this
    is preferred to the value the harness stored while the peaks were still being
    measured; without peaks in the run record the stored value is used.
    """
    device = run.device(m.backend, m.device)
    peaks = device.peaks if device is not None else {}
    pct, note = percent_of_peak(m.metrics, m.bytes, m.dtype, peaks)
    if pct is None and not note:
        pct = m.metrics.get("pct_of_peak")
    return pct, note


def _row(m: Measurement, results: Results) -> dict[str, Any]:
    """One measurement as a flat row."""
    stats = m.stats or {}
    placement = m.placement
    return {
        "run": results.run.id,
        "file": str(results.path),
        "host": short_hostname(results.run),
        "fingerprint": results.run.fingerprint,
        "suite": m.suite,
        "workload": m.workload,
        "params": format_params(m.params),
        "params_json": json.dumps(m.params, sort_keys=True),
        "dtype": m.dtype,
        "backend": m.backend,
        "device": m.device,
        "status": m.status,
        "error": m.error or "",
        "fallback_policy": m.fallback_policy,
        "timer": m.timer,
        "sync": m.sync,
        "inner_loops": m.inner_loops,
        "n": stats.get("n"),
        "median": stats.get("median"),
        "min": stats.get("min"),
        "ci_low": stats.get("ci_low"),
        "ci_high": stats.get("ci_high"),
        "iqr": stats.get("iqr"),
        "cv": stats.get("cv"),
        "flops": m.flops,
        "bytes": m.bytes,
        "gflops": m.metrics.get("gflops"),
        "gbps": m.metrics.get("gbps"),
        "items_per_s": m.metrics.get("items_per_s"),
        "joules_per_call": m.metrics.get("joules_per_call"),
        "watts": m.metrics.get("watts"),
        "items_per_joule": m.metrics.get("items_per_joule"),
        "gflops_per_joule": m.metrics.get("gflops_per_joule"),
        "peer": m.params.get("peer"),
        "peer_device": m.facts.get("peer_device"),
        "energy_counter": m.energy.get("counter") if m.energy.get("available") else None,
        "energy_why": m.energy.get("why"),
        **dict(zip(("pct_of_peak", "peak_note"), pct_of_peak(m, results.run), strict=True)),
        "check_passed": None if m.check is None else m.check.passed,
        "max_error": None if m.check is None else m.check.max_error,
        "quality": {} if m.check is None else dict(m.check.quality),
        "ops": {} if placement is None else dict(placement.ops),
        "fallback_ops": [] if placement is None else placement.fallback_ops(),
        "fallbacks": 0 if placement is None else placement.fallbacks,
        "bytes_moved": 0 if placement is None else placement.bytes_moved,
        "samples": list(m.samples),
    }


def short_hostname(run: RunRecord) -> str:
    """The run's host name up to its first dot, or `unknown` (files from before it was kept)."""
    return str(run.host.get("hostname") or "unknown").split(".")[0]


def _series(frame: pd.DataFrame) -> pd.Series:
    """Column labels that name what differs: the backend, or its device (`cuda:1`) when it
    has several, plus `@host` when the files come from several hosts, and the run id
    (`@run`, or `@host/run`) when one host has several runs."""
    many_devices = frame.groupby("backend")["device"].transform("nunique") > 1
    label = frame["backend"].where(~many_devices, frame["device"])
    host = frame["host"] if frame["host"].nunique() > 1 else pd.Series("", index=frame.index)
    run = frame["run"].where(frame.groupby("host")["run"].transform("nunique") > 1, "")
    where = (host + "/" + run).str.strip("/")
    return label.where(where == "", label + "@" + where)


def measurements_frame(results: list[Results]) -> pd.DataFrame:
    """All measurements of `results` as a DataFrame with a `series` column (empty if none)."""
    rows = [_row(m, r) for r in results for m in r.measurements]
    frame = pd.DataFrame(rows)
    return frame if frame.empty else frame.assign(series=_series(frame))


def expand(paths: list[Path]) -> list[Path]:
    """Result files: files as given, directories as their *.jsonl and *.json files; a path
    that is no readable regular file (a symbolic link loop, a FIFO) is a ResultsError
    naming it."""
    files: list[Path] = []
    for p in map(Path, paths):
        files += sorted([*p.glob("*.jsonl"), *p.glob("*.json")]) if p.is_dir() else [p]
    return [regular_file(f) for f in files]


@dataclass
class Inputs:
    """What a report reads: the measurements as a frame, the runs, and conformance results."""

    frame: pd.DataFrame
    results: list[Results]
    conformance: list[ConformanceRun]


def load_inputs(paths: list[Path]) -> Inputs:
    """Read result files (hal JSON lines, pytest-benchmark JSON, conformance JSON; directories
    of them), each told apart by its content."""
    results: list[Results] = []
    conformance: list[ConformanceRun] = []
    for path in expand(paths):
        if is_conformance(path):
            conformance += read_conformance(path)
        else:
            results.append(load_results(path))
    return Inputs(measurements_frame(results), results, conformance)
