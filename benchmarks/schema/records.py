"""The one results schema: JSON lines in `results/<run-id>.jsonl`.

A file holds, one JSON object per line, each with `"type"` and `"schema"` keys:

- a `run` record (`RunRecord`): when, where and with what software the run happened,
  and a fingerprint of the hardware/software part. It may be written again later in the
  file (for instance once peaks are measured); the last one wins.
- `measurement` records (`Measurement`), one per (suite, workload, params, backend,
  device, dtype), appended, flushed and fsynced as each is measured. A later record with
  the same key replaces an earlier one.
- `end` records: when the run (or a resumed part of it) stopped and whether it completed.

Readers skip a truncated or corrupt line, or a record whose fields have the wrong JSON
types (a list for an object, text for a number, NaN among the samples), with a warning
naming file:line, and reject a major schema version they do not know. pytest-benchmark
JSON files load into the same records (`load_pytest_benchmark`); `load_results` picks
the reader by file contents. A run id names files, so it must be a plain file name.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import importlib.metadata
import json
import math
import os
import platform
import subprocess
import types
import typing
import warnings
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any, TextIO

from benchmarks.stats import Summary, summarize

SCHEMA_VERSION = "1.2"
STATUSES = ("ok", "failed", "skipped", "timeout")
# library -> the distributions that provide it (the first one installed is reported)
LIBRARIES = {
    "numpy": ("numpy",),
    "scipy": ("scipy",),
    "pyopencl": ("pyopencl",),
    "tvm": ("apache-tvm", "tlcpack"),
    "onnxruntime": ("onnxruntime", "onnxruntime-gpu"),
    "cupy": ("cupy", "cupy-cuda12x", "cupy-cuda11x", "cupy-rocm-5-0"),
    "torch": ("torch",),
    "jax": ("jax",),
}
ENV_PREFIXES = ("HAL_", "OPENBLAS_", "MKL_", "MPIR_CVAR_")
ENV_NAMES = ("OMP_NUM_THREADS",)
_NEWLINE = b"\n"

MeasurementKey = tuple[str, str, str, str, str, str]


class ResultsError(ValueError):
    """A results file that cannot be read: the message names the file and what is wrong."""


class SchemaVersionError(ResultsError):
    """A results file written with a major schema version this reader does not know."""


def utc_now() -> str:
    """The current UTC time as an ISO 8601 string."""
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds")


def _from_dict(cls: type, data: dict[str, Any]) -> Any:
    """Build dataclass `cls` from `data`, ignoring keys a newer minor version added;
    TypeError names a field whose value has the wrong JSON type."""
    names = {f.name for f in fields(cls)}
    known = {k: v for k, v in data.items() if k in names}
    problem = _fields_problem(cls, known, "")
    if problem:
        raise TypeError(problem)
    return cls(**known)


_JSON_TYPES = {float: ((int, float), "a number"), int: ((int,), "an integer"),
               str: ((str,), "text"), bool: ((bool,), "true or false"),
               list: ((list,), "a list"), dict: ((dict,), "an object")}


def _kind(value: Any) -> str:
    """A JSON value's type in words, for messages."""
    if value is None:
        return "null"
    for expected, (_, words) in _JSON_TYPES.items():
        if type(value) is expected:
            return f"{words} ({json.dumps(value, default=str)[:40]})"
    return type(value).__name__


def _fields_problem(cls: type, data: dict[str, Any], prefix: str) -> str | None:
    """The first field of `data` whose value does not fit dataclass `cls`, in words."""
    hints = typing.get_type_hints(cls)
    for name, value in data.items():
        problem = _type_problem(value, hints[name], prefix + name)
        if problem:
            return problem
    return None


def _type_problem(value: Any, hint: Any, name: str) -> str | None:
    """What makes a JSON value unfit for a field typed `hint` (None when it fits)."""
    if hint is Any:
        return None
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        problems = [_type_problem(value, a, name) for a in args if a is not type(None)]
        return None if None in problems else problems[0]
    if is_dataclass(hint):
        if isinstance(value, hint):
            return None
        if not isinstance(value, dict):
            return f"{name} is {_kind(value)}, not an object"
        return _fields_problem(hint, {k: v for k, v in value.items()
                                      if k in {f.name for f in fields(hint)}}, f"{name}.")
    base = origin or hint
    accepted, words = _JSON_TYPES[base]
    if not isinstance(value, accepted) or (base is not bool and isinstance(value, bool)):
        return f"{name} is {_kind(value)}, not {words}"
    if base is list:
        return next(filter(None, (_type_problem(v, args[0], f"{name}[{i}]")
                                  for i, v in enumerate(value))), None)
    if base is dict:
        return next(filter(None, (_type_problem(v, args[1], f"{name}.{k}")
                                  for k, v in value.items())), None)
    return None


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

    `samples` are seconds per call (each the mean of `inner_loops` calls); `stats` is a
    `benchmarks.stats.Summary` as a dict; `metrics` holds derived rates (`gflops`, `gbps`,
    `items_per_s`, `pct_of_peak`); `flops`, `bytes` and `items` are the work of one call.
    `rounds` counts the interleaved rounds whose samples the record pools.
    `fallback_policy` is the CPU-fallback policy it ran under: `error` (the default: a
    workload that needs the fallback is skipped) or `warn`/`allow` (it runs, and the
    placement counts the fallback calls). It is no part of the key, so the same workload
    measured under two policies compares key by key.
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
    stats: dict[str, Any] | None = None
    flops: float | None = None
    bytes: float | None = None
    items: float | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    check: Check | None = None
    placement: Placement | None = None
    rounds: int = 1
    fallback_policy: str = "error"
    time: str = field(default_factory=utc_now)

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status {self.status!r} is not one of {', '.join(STATUSES)}")
        if isinstance(self.check, dict):
            self.check = _from_dict(Check, self.check)
        if isinstance(self.placement, dict):
            self.placement = _from_dict(Placement, self.placement)

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
        m = _from_dict(cls, record)
        if not all(math.isfinite(s) for s in m.samples):
            raise ValueError("samples hold NaN or infinity")
        for name in {f.name for f in fields(Summary)} & set(m.stats or {}):
            problem = _type_problem(m.stats[name], float | None, f"stats.{name}")
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
            _from_dict(DeviceRecord, d) if isinstance(d, dict) else d for d in self.devices
        ]

    def compute_fingerprint(self) -> str:
        """sha256 of host, devices (capabilities, not measured peaks), libraries and env.

        Stable across runs on one machine with one software stack; independent of the
        code's git commit, the times, the load and the host's name (machines of one kind,
        or a container named anew each run, share a setup), so two commits can be compared.
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
            "env": self.env,
        }
        blob = json.dumps(part, sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()

    def device(self, backend: str, name: str) -> DeviceRecord | None:
        """The record of device `name` of `backend`, if the run has one."""
        return next((d for d in self.devices if d.backend == backend and d.name == name), None)

    def to_dict(self) -> dict[str, Any]:
        """The JSON record of this run."""
        return {"type": "run", "schema": SCHEMA_VERSION, **asdict(self)}

    @classmethod
    def new(
        cls,
        run_id: str,
        devices: list[DeviceRecord] | None = None,
        repo: Path | None = None,
        config: dict[str, Any] | None = None,
    ) -> RunRecord:
        """A run record describing this machine and process now, fingerprint included."""
        run = cls(
            id=run_id,
            git=git_state(repo or Path.cwd()),
            host=host_info(),
            devices=list(devices or []),
            libraries=library_versions(),
            env=relevant_env(),
            loadavg=list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
            config=dict(config or {}),
        )
        run.fingerprint = run.compute_fingerprint()
        return run


def new_run_id() -> str:
    """A sortable run id from the UTC time, e.g. `20261202T113824Z-1234`."""
    now = _dt.datetime.now(_dt.UTC)
    return f"{now:%Y%m%dT%H%M%SZ}-{os.getpid()}"


def git_state(repo: Path) -> dict[str, Any] | None:
    """`{"commit", "dirty"}` of the git checkout at `repo`, or None outside one."""
    try:
        commit = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        status = subprocess.run(
            ["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": commit, "dirty": bool(status.strip())}


def _cpu_model() -> str:
    """The CPU model name from /proc/cpuinfo, else what `platform` knows."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def host_info() -> dict[str, Any]:
    """Host name, CPU model, logical cores (total and usable), memory bytes, OS and Python."""
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        memory = None
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {
        "hostname": platform.node(),
        "cpu": _cpu_model(),
        "machine": platform.machine(),
        "cores": os.cpu_count(),
        "usable_cores": usable,
        "memory_bytes": memory,
        "os": platform.platform(),
        "python": platform.python_version(),
    }


def library_versions(
    libraries: dict[str, tuple[str, ...]] = LIBRARIES,
) -> dict[str, str | None]:
    """Installed versions of the libraries that matter (None if absent), without importing them."""
    versions: dict[str, str | None] = {}
    for name, distributions in libraries.items():
        versions[name] = None
        for dist in distributions:
            try:
                versions[name] = importlib.metadata.version(dist)
                break
            except importlib.metadata.PackageNotFoundError:
                continue
    return versions


def relevant_env() -> dict[str, str]:
    """Environment variables that change results: HAL_*, thread counts, BLAS/MPI tuning."""
    return {
        k: v for k, v in sorted(os.environ.items()) if k in ENV_NAMES or k.startswith(ENV_PREFIXES)
    }


class ResultWriter:
    """Appends records to a results file, flushing and fsyncing each one as it is written.

    A file whose last line lacks its newline (a write cut short by a crash) is mended
    first, with a warning naming file:line, so that the next record starts a line of its
    own: a whole record gets its newline, an unfinished one is cut off.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._mend_torn_tail()
        self._file: TextIO = open(self.path, "a", encoding="utf-8")

    def _mend_torn_tail(self) -> None:
        try:
            f = open(self.path, "rb+")
        except FileNotFoundError:
            return
        with f:
            data = f.read()
            if not data or data.endswith(_NEWLINE):
                return
            start = data.rfind(_NEWLINE) + 1
            where = f"{self.path}:{data.count(_NEWLINE) + 1}"
            try:
                json.loads(data[start:])
            except ValueError:
                f.truncate(start)
                warnings.warn(f"{where}: cut off a torn last line ({len(data) - start} bytes "
                              "of an unfinished record) before appending", stacklevel=3)
            else:
                f.write(_NEWLINE)
                warnings.warn(f"{where}: the last record lacked its newline; added it before "
                              "appending", stacklevel=3)

    def _write(self, record: dict[str, Any]) -> None:
        """Write one JSON line and make it durable."""
        self._file.write(json.dumps(record, default=str) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def write_run(self, run: RunRecord) -> None:
        """Write (or rewrite, e.g. with peaks filled in) the run record."""
        self._write(run.to_dict())

    def write(self, measurement: Measurement) -> None:
        """Append one measurement."""
        self._write(measurement.to_dict())

    def write_end(self, run_id: str, completed: bool) -> None:
        """Record when the run stopped and whether everything asked for was measured."""
        self._write(
            {
                "type": "end",
                "schema": SCHEMA_VERSION,
                "run": run_id,
                "end": utc_now(),
                "completed": completed,
            }
        )

    def close(self) -> None:
        """Close the file."""
        self._file.close()

    def __enter__(self) -> ResultWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


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


@dataclass
class _End:
    """The fields of an `end` record that a reader uses."""

    completed: bool = False
    end: str | None = None


def _check_version(version: Any, where: str) -> None:
    """Raise SchemaVersionError unless `version` has this reader's major version."""
    major = str(SCHEMA_VERSION).split(".")[0]
    if str(version).split(".")[0] != major:
        raise SchemaVersionError(
            f"{where}: results schema version {version} is not readable by this version of "
            f"hal (reads {major}.x, writes {SCHEMA_VERSION}); use a hal release that writes "
            f"schema {version}"
        )


def read_results(path: Path) -> Results:
    """Read a JSON-lines results file; corrupt lines are skipped with a warning."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultsError(f"cannot read results file {path}: {exc}") from exc
    run: RunRecord | None = None
    by_key: dict[MeasurementKey, Measurement] = {}
    completed = False
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            record = json.loads(line)
            if not (isinstance(record, dict) and isinstance(record.get("type"), str)
                    and isinstance(record.get("schema"), str)):
                raise ValueError("not a record object with a 'type' and a 'schema'")
        except ValueError as exc:
            warnings.warn(f"{where}: skipped a truncated or corrupt line ({exc})", stacklevel=2)
            continue
        _check_version(record.pop("schema"), where)
        kind = record.pop("type")
        try:
            if kind == "run":
                run = _from_dict(RunRecord, record)
            elif kind == "measurement":
                m = Measurement.from_dict(record)
                by_key[m.key] = m
            elif kind == "end":
                end = _from_dict(_End, record)
                completed = end.completed
                if run is not None:
                    run.end = end.end
            else:
                raise ValueError(f"unknown record type {kind!r}")
        except (TypeError, ValueError) as exc:
            warnings.warn(f"{where}: skipped an invalid {kind} record ({exc})", stacklevel=2)
    if run is None:
        raise ResultsError(f"{path}: no run record; is this a hal results file?")
    return Results(path=path, run=run, measurements=list(by_key.values()), completed=completed)


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


@dataclass
class _PytestBenchmarkEntry:
    """The fields of one entry of a pytest-benchmark file's `benchmarks` list that are read."""

    name: str = ""
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
    }


def _pytest_benchmark_measurement(bench: Any, timer: str) -> Measurement:
    """One pytest-benchmark entry as a measurement (raw samples when the file has them);
    TypeError or ValueError says what makes an entry unusable."""
    if not isinstance(bench, dict):
        raise TypeError(f"the entry is {_kind(bench)}, not an object")
    entry = _from_dict(_PytestBenchmarkEntry, bench)
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
    else:
        mean, stddev = st.get("mean"), st.get("stddev")
        stats = {
            "n": st.get("rounds"),
            "median": st.get("median"),
            "min": st.get("min"),
            "max": st.get("max"),
            "mean": mean,
            "q1": st.get("q1"),
            "q3": st.get("q3"),
            "iqr": st.get("iqr"),
            "cv": (stddev / mean) if mean and stddev is not None else None,
            "ci_low": None,
            "ci_high": None,
            "ci_coverage": None,
        }
    options = entry.options or {}
    return Measurement(
        suite="pytest-benchmark",
        workload=entry.name.split("[")[0],
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
        git={"commit": commit.get("id"), "dirty": commit.get("dirty")} if commit else None,
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


def load_results(path: Path) -> Results:
    """Read a hal results file or a pytest-benchmark JSON file, telling them apart by content."""
    path = Path(path)
    try:
        with open(path, encoding="utf-8") as f:
            head = f.read(4096)
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultsError(f"cannot read results file {path}: {exc}") from exc
    first_line = head.split("\n", 1)[0]
    if head.lstrip().startswith("{") and '"type"' not in first_line:
        return load_pytest_benchmark(path)
    return read_results(path)
