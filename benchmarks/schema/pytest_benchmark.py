"""pytest-benchmark JSON files (`--benchmark-json`/`--benchmark-save`) read as results.

Names, params, machine info and statistics are kept as pytest-benchmark wrote them. The
CV is computed as pytest-benchmark judges its rounds: over the samples inside its Tukey
fences (1.5 IQR beyond the quartiles; the outliers it counts and reports apart), since a
single cold round among thousands of 100 ns rounds otherwise gives a CV in the thousands
of per cent. hal ran none of it: no fallback policy applies (`fallback_policy` "none").
"""

from __future__ import annotations

import json
import math
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.schema.records import Measurement, Results, ResultsError, RunRecord
from benchmarks.schema.validation import from_dict, json_kind
from benchmarks.stats import summarize


@dataclass
class _PytestBenchmarkStats:
    """The statistics of a pytest-benchmark entry that are read (seconds)."""

    data: list[float] | None = None
    rounds: int | None = None
    iterations: int | None = None
    median: float | None = None
    min: float | None = None
    max: float | None = None
    mean: float | None = None
    stddev: float | None = None
    q1: float | None = None
    q3: float | None = None
    iqr: float | None = None
    ops: float | None = None
    outliers: str | None = None


@dataclass
class _PytestBenchmarkEntry:
    """The fields of one entry of a pytest-benchmark file's `benchmarks` list that are read."""

    name: str = ""
    fullname: str | None = None
    group: str | None = None
    params: dict[str, Any] | None = None
    options: dict[str, Any] | None = None
    stats: _PytestBenchmarkStats | None = None


def _object(value: Any) -> dict[str, Any]:
    """`value` if it is a JSON object, else an empty one (optional pytest-benchmark parts)."""
    return value if isinstance(value, dict) else {}


def _pytest_benchmark_host(machine: dict[str, Any]) -> dict[str, Any]:
    """Map pytest-benchmark's machine_info onto the host part of a run record."""
    cpu = _object(machine.get("cpu"))
    return {
        "hostname": machine.get("node"),
        "cpu": str(cpu.get("brand_raw") or machine.get("processor") or ""),
        "machine": machine.get("machine"),
        "cores": cpu.get("count"),
        "usable_cores": None,
        "memory_bytes": None,
        "os": f"{machine.get('system', '')} {machine.get('release', '')}".strip(),
        "python": machine.get("python_version"),
        "python_implementation": machine.get("python_implementation"),
        "python_compiler": machine.get("python_compiler"),
        "cpu_arch": cpu.get("arch_string_raw") or cpu.get("arch"),
        "cpu_hz": cpu.get("hz_advertised_friendly"),
    }


def robust_cv(samples: list[float]) -> float | None:
    """Standard deviation / mean of the samples inside pytest-benchmark's Tukey fences
    (1.5 IQR beyond the quartiles), None with fewer than two of them."""
    x = np.asarray(samples, dtype=float)
    if x.size < 2:
        return None
    q1, q3 = np.percentile(x, [25, 75])
    fenced = x[(x >= q1 - 1.5 * (q3 - q1)) & (x <= q3 + 1.5 * (q3 - q1))]
    if fenced.size < 2 or fenced.mean() == 0:
        return None
    return float(np.std(fenced, ddof=1) / fenced.mean())


def workload_name(entry: _PytestBenchmarkEntry) -> str:
    """The test as pytest-benchmark names it: its full node id (file, class, function)
    without the parametrisation, which becomes params; the short name when the file
    lacks full names."""
    name = entry.fullname or entry.name
    return name.split("[")[0] if entry.params else name


def _pytest_benchmark_measurement(bench: Any, timer: str) -> Measurement:
    """One pytest-benchmark entry as a measurement (raw samples when the file has them);
    TypeError or ValueError says what makes an entry unusable."""
    if not isinstance(bench, dict):
        raise TypeError(f"the entry is {json_kind(bench)}, not an object")
    entry = from_dict(_PytestBenchmarkEntry, bench)
    params = dict(entry.params or {})
    backend = params.pop("backend", None) or entry.group or "unknown"
    device = str(params.pop("device", "unknown"))
    dtype = str(params.pop("dtype", "unknown"))
    st = entry.stats or {}
    samples = st.get("data") or []
    if not all(math.isfinite(x) for x in samples):
        raise ValueError("stats.data holds NaN or infinity")
    stats: dict[str, Any] | None
    if samples:
        stats = summarize(samples).to_dict()
        stats["cv"] = robust_cv(samples)
    else:
        median, iqr = st.get("median"), st.get("iqr")
        stats = {
            "n": st.get("rounds"),
            "median": st.get("median"),
            "min": st.get("min"),
            "max": st.get("max"),
            "mean": st.get("mean"),
            "q1": st.get("q1"),
            "q3": st.get("q3"),
            "iqr": iqr,
            # without the samples, the IQR's normal-equivalent spread (outliers ignored)
            "cv": (iqr / 1.349 / median) if median and iqr is not None else None,
            "ci_low": None,
            "ci_high": None,
            "ci_coverage": None,
        }
    options = entry.options or {}
    return Measurement(
        suite="pytest-benchmark",
        workload=workload_name(entry),
        params={
            k: v if isinstance(v, (int, float, str, bool)) or v is None else str(v)
            for k, v in params.items()
        },
        backend=str(backend),
        device=device,
        dtype=dtype,
        timer=str(options.get("timer", timer)),
        sync="none",
        warmup=int(bool(options.get("warmup"))),
        inner_loops=int(st.get("iterations") or 1),
        samples=[float(x) for x in samples],
        stats=stats,
        metrics={"items_per_s": st["ops"]} if st.get("ops") else {},
        facts={k: v for k, v in (("outliers", st.get("outliers")),) if isinstance(v, str)},
        fallback_policy="none",
    )


def load_pytest_benchmark(path: Path) -> Results:
    """Read a pytest-benchmark JSON file (`--benchmark-json`/`--benchmark-save`) as results.

    suite = "pytest-benchmark"; the backend comes from a `backend` param, else the
    benchmark's group, else "unknown"; raw samples are kept when saved with
    `--benchmark-save-data`, otherwise the file's own statistics are used (no CI). An
    entry with fields of the wrong type is skipped with a warning naming the file and
    the entry (its index in `benchmarks` and its name).
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ResultsError(f"cannot read pytest-benchmark file {path}: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("benchmarks"), list):
        raise ResultsError(f"{path}: not a pytest-benchmark JSON file (no 'benchmarks' list)")
    machine = _object(data.get("machine_info"))
    commit = _object(data.get("commit_info"))
    run = RunRecord(
        id=path.stem,
        start=str(data.get("datetime", "")),
        end=str(data.get("datetime", "")),
        git={"commit": commit.get("id"), "dirty": commit.get("dirty"),
             "branch": commit.get("branch"), "time": commit.get("time")} if commit else None,
        host=_pytest_benchmark_host(machine),
        libraries={"pytest-benchmark": data.get("version")},
    )
    run.fingerprint = run.compute_fingerprint()
    timer = str(machine.get("timer") or "perf_counter")
    measurements = []
    for i, bench in enumerate(data["benchmarks"]):
        try:
            measurements.append(_pytest_benchmark_measurement(bench, timer))
        except (TypeError, ValueError) as exc:
            name = _object(bench).get("name")
            warnings.warn(f"{path}: skipped benchmarks[{i}]" + (f" ({name})" if name else "")
                          + f": {exc}", stacklevel=2)
    return Results(path=path, run=run, measurements=measurements, completed=True)
