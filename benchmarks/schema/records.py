"""The records of a results file: a run, its measurements, and the file as read.

Every record is a dataclass whose `to_dict()` is its JSON line (with `"type"` and
`"schema"` keys); `benchmarks.schema.files` writes and reads them.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
import os
import re
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from benchmarks.schema.validation import from_dict, type_problem
from benchmarks.stats import Summary

SCHEMA_VERSION = "1.5"
STATUSES = ("ok", "failed", "skipped", "timeout")
MeasurementKey = tuple[str, str, str, str, str, str]


class ResultsError(ValueError):
    """A results file that cannot be read: the message names the file and what is wrong."""


class SchemaVersionError(ResultsError):
    """A results file written with a major schema version this reader does not know."""


def utc_now() -> str:
    """The current UTC time as an ISO 8601 string."""
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds")


def run_id_problem(run_id: str) -> str | None:
    """Why `run_id` cannot name a results file (it would reach outside its directory),
    or None: a run id is a plain file name, without path separators and not starting
    with a dot."""
    if not isinstance(run_id, str) or not run_id:
        return f"run id {run_id!r} is empty or not text"
    if any(c in run_id for c in "/\\\0") or run_id.startswith("."):
        return (f"run id {run_id!r} is not a plain file name (it holds a path separator or "
                "starts with a dot); use letters, digits, '-', '_' and '.'")
    return None


@dataclass
class Check:
    """The output check against the reference, done before any time counts.

    `max_error` is the normwise relative error max|out - ref| / max|ref| (the harness's
    measure; other sources may record their own), `tolerance` the largest one accepted.
    `quality` holds a workload's own accuracy measures of the output against the reference
    (e.g. the cosine of INT8 embeddings to FP32 ones), by name.
    """

    passed: bool
    max_error: float | None = None
    tolerance: float | None = None
    quality: dict[str, float] = field(default_factory=dict)


@dataclass
class Placement:
    """Where the ops of one call ran, as `hal.placement()` reports it.

    `ops` maps op -> {"<device>:<how>": calls} with how in kernel/decomposed/fallback;
    `fallbacks` counts CPU fallbacks and `bytes_moved` the bytes they copied.
    """

    ops: dict[str, dict[str, int]] = field(default_factory=dict)
    fallbacks: int = 0
    bytes_moved: int = 0

    def fallback_ops(self) -> list[str]:
        """Ops that ran at least once through the CPU fallback."""
        return sorted(
            op for op, where in self.ops.items() if any(k.endswith(":fallback") for k in where)
        )


@dataclass
class Measurement:
    """One measurement: a workload with its params on one backend, device and dtype.

    `samples` are seconds per call (each the mean of `inner_loops` calls); `cpu_samples`
    (added in schema 1.5) the process's CPU seconds per call beside each sample where the
    device computes on the host CPU, else empty: the time a process waited for a core is
    not in them, so on a loaded machine they vary far less than `samples` (`hal compare`
    judges busy runs on them); `stats` is a
    `benchmarks.stats.Summary` as a dict; `metrics` holds derived rates (`gflops`, `gbps`,
    `items_per_s`, `pct_of_peak`) and figures measured apart from the samples (a call's
    memory footprint, the first call's time in a fresh process); `flops`, `bytes` and
    `items` are the work of one call. `facts` holds what the workload reports about itself
    besides time and accuracy, by name: a count, a choice it made, a projection from a
    model (numbers or text; added in schema 1.3).
    `energy` is what the device's energy counter read over the samples (added in schema
    1.4, `benchmarks.energy`): `available`, the `counter`, `joules`, `seconds`, `calls`,
    `joules_per_call` and mean `watts`, or `why` it could not be read; the metrics then
    hold `joules_per_call`, `watts`, `items_per_joule` and `gflops_per_joule`.
    `rounds` counts the interleaved rounds whose samples the record pools.
    `fallback_policy` is the CPU-fallback policy it ran under: `error` (the default: a
    workload that needs the fallback is skipped) or `warn`/`allow` (it runs, and the
    placement counts the fallback calls), or `none` for a measurement hal did not run (a
    pytest-benchmark import). It is no part of the key, so the same workload measured
    under two policies compares key by key.
    """

    suite: str
    workload: str
    backend: str
    device: str
    dtype: str
    params: dict[str, Any] = field(default_factory=dict)
    status: str = "ok"
    error: str | None = None
    timer: str = ""
    sync: str = ""
    warmup: int = 0
    inner_loops: int = 1
    samples: list[float] = field(default_factory=list)
    cpu_samples: list[float] = field(default_factory=list)
    stats: dict[str, Any] | None = None
    flops: float | None = None
    bytes: float | None = None
    items: float | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    facts: dict[str, float | str] = field(default_factory=dict)
    energy: dict[str, Any] = field(default_factory=dict)
    check: Check | None = None
    placement: Placement | None = None
    rounds: int = 1
    fallback_policy: str = "error"
    time: str = field(default_factory=utc_now)

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status {self.status!r} is not one of {', '.join(STATUSES)}")
        if isinstance(self.check, dict):
            self.check = from_dict(Check, self.check)
        if isinstance(self.placement, dict):
            self.placement = from_dict(Placement, self.placement)

    @property
    def key(self) -> MeasurementKey:
        """The identity of a measurement within a run (params as canonical JSON)."""
        return measurement_key(
            self.suite, self.workload, self.params, self.backend, self.device, self.dtype
        )

    @property
    def median(self) -> float | None:
        """The headline: median seconds per call, or None without statistics."""
        return None if self.stats is None else self.stats.get("median")

    def to_dict(self) -> dict[str, Any]:
        """The JSON record of this measurement."""
        return {"type": "measurement", "schema": SCHEMA_VERSION, **asdict(self)}

    @classmethod
    def from_dict(cls, record: dict[str, Any]) -> Measurement:
        """A measurement from its JSON record (record keys this version lacks are ignored);
        TypeError or ValueError says what makes a record unusable."""
        m = from_dict(cls, record)
        if not all(math.isfinite(s) for s in m.samples + m.cpu_samples):
            raise ValueError("samples hold NaN or infinity")
        for name in {f.name for f in fields(Summary)} & set(m.stats or {}):
            problem = type_problem(m.stats[name], float | None, f"stats.{name}")
            if problem:
                raise TypeError(problem)
        return m


def measurement_key(
    suite: str, workload: str, params: dict[str, Any], backend: str, device: str, dtype: str
) -> MeasurementKey:
    """The key of a measurement that has not been taken yet (for resume checks)."""
    return (suite, workload, json.dumps(params, sort_keys=True), backend, device, dtype)


@dataclass
class DeviceRecord:
    """A device as the run saw it: capabilities and measured peaks.

    `peaks` holds `gflops` (dtype -> GFLOP/s) and `gbps` (GB/s), measured by the `peak`
    suite; `peaks_from` is the id of the run that measured them (this run or an earlier
    one on the same setup).
    """

    name: str
    backend: str
    capabilities: dict[str, Any] = field(default_factory=dict)
    peaks: dict[str, Any] = field(default_factory=dict)
    peaks_from: str | None = None


@dataclass
class RunRecord:
    """When, where and with what software a run happened; `fingerprint` names the setup.

    `config` is what the run was asked to measure (suites, backends, dtypes, options), so
    that an interrupted run can be resumed with the same plan.
    """

    id: str
    start: str = field(default_factory=utc_now)
    end: str | None = None
    git: dict[str, Any] | None = None
    host: dict[str, Any] = field(default_factory=dict)
    devices: list[DeviceRecord] = field(default_factory=list)
    libraries: dict[str, str | None] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    loadavg: list[float] | None = None
    fingerprint: str = ""
    config: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        problem = run_id_problem(self.id)
        if problem:
            raise ValueError(problem)
        self.devices = [
            from_dict(DeviceRecord, d) if isinstance(d, dict) else d for d in self.devices
        ]

    def compute_fingerprint(self) -> str:
        """sha256 of host, devices (capabilities, not measured peaks), libraries and the
        environment variables that change results (`fingerprinted_env`).

        Stable across runs on one machine with one software stack; independent of the
        code's git commit, the times, the load, the host's name (machines of one kind, or a
        container named anew each run, share a setup) and where files go (HAL_CACHE_DIR and
        other paths stay recorded in `env`, unfingerprinted), so two commits can be compared.
        """
        part = {
            "host": {k: v for k, v in self.host.items() if k != "hostname"},
            "devices": sorted(
                (
                    {"name": d.name, "backend": d.backend, "capabilities": d.capabilities}
                    for d in self.devices
                ),
                key=lambda d: (d["backend"], d["name"]),
            ),
            "libraries": self.libraries,
            "env": fingerprinted_env(self.env),
        }
        blob = json.dumps(part, sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()

    def device(self, backend: str, name: str) -> DeviceRecord | None:
        """The record of device `name` of `backend`, if the run has one."""
        return next((d for d in self.devices if d.backend == backend and d.name == name), None)

    def to_dict(self) -> dict[str, Any]:
        """The JSON record of this run."""
        return {"type": "run", "schema": SCHEMA_VERSION, **asdict(self)}

# Settings of where files go or how long a probe may wait: recorded, never fingerprinted.
UNFINGERPRINTED_ENV = ("HAL_CACHE_DIR", "HAL_PROBE_TIMEOUT", "HAL_MAX_RECORD_BYTES")
_PATH_NAME = re.compile(r"_(DIR|DIRS|PATH|FILE|HOME|ROOT|PREFIX)$")


def fingerprinted_env(env: dict[str, str]) -> dict[str, str]:
    """The environment variables of a run that change its results: all recorded ones but
    those in `UNFINGERPRINTED_ENV` and path-like ones (a name ending in _DIR, _PATH, _FILE,
    _HOME, _ROOT or _PREFIX, or a value that is a file system path)."""
    return {
        k: v
        for k, v in env.items()
        if k not in UNFINGERPRINTED_ENV and not _PATH_NAME.search(k) and not _is_path(str(v))
    }


def _is_path(value: str) -> bool:
    """Whether an environment value names a file or directory (absolute, ~, or with a
    separator), not a setting such as a thread count or a policy."""
    return value.startswith(("/", "~", "./", "../")) or os.sep in value


def new_run_id() -> str:
    """A sortable run id from the UTC time, e.g. `20261202T113824Z-1234`."""
    now = _dt.datetime.now(_dt.UTC)
    return f"{now:%Y%m%dT%H%M%SZ}-{os.getpid()}"


@dataclass
class Results:
    """A results file as read: the run, its measurements (last per key) and completion."""

    path: Path
    run: RunRecord
    measurements: list[Measurement]
    completed: bool = False

    def completed_keys(self, rounds: int = 1) -> set[MeasurementKey]:
        """Keys a resumed run must not measure again.

        A measurement is complete when it failed, timed out or was skipped, or when it is
        ok with all `rounds` of its interleaved rounds.
        """
        return {m.key for m in self.measurements if m.status != "ok" or m.rounds >= rounds}


def completed_keys(results: Results, rounds: int = 1) -> set[MeasurementKey]:
    """Keys a resumed run must not measure again (see `Results.completed_keys`)."""
    return results.completed_keys(rounds)
