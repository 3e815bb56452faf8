"""Run suites on devices: plan, isolate each device in a child process, record as measured.

Each device runs in `python -m benchmarks.worker` with a time limit per measurement. A
crash, hang or out-of-memory kill becomes a `failed`/`timeout` record with the error text,
and a fresh child carries on with the rest. Every record is appended and fsynced to
`<out>/<run-id>.jsonl` as it arrives, so Ctrl-C keeps what was measured and
`--resume RUN` finishes the run without redoing it. Peaks measured by the `peak` suite
go into the run record and a per-setup cache, and give later measurements their % of peak.
"""

from __future__ import annotations

import functools
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

import hal
from benchmarks.schema import (
    DeviceRecord,
    Measurement,
    MeasurementKey,
    ResultWriter,
    RunRecord,
    measurement_key,
    new_run_id,
    read_results,
)
from benchmarks.timing import TimingOptions, merge_peak
from benchmarks.workload import Workload, suite_names, suite_workloads

PACKAGE_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SUITES = ("peak", "quick")


class BenchError(ValueError):
    """A bench request that cannot run (unknown suite, backend or dtype; bad resume)."""


@dataclass(frozen=True)
class Task:
    """One measurement to take: a suite's workload (by index) on a device for a dtype."""

    suite: str
    index: int
    workload: Workload
    dtype: str
    backend: str
    device: str

    @property
    def key(self) -> MeasurementKey:
        """The key its measurement record will have."""
        return measurement_key(
            self.suite,
            self.workload.name,
            self.workload.params,
            self.backend,
            self.device,
            self.dtype,
        )


@dataclass
class Config:
    """What a run measures; stored in the run record so a resume follows the same plan."""

    suites: list[str] = field(default_factory=lambda: list(DEFAULT_SUITES))
    backends: list[str] = field(default_factory=list)
    dtypes: list[str] = field(default_factory=list)
    quick: bool = False
    timeout: float = 300.0

    def timing(self) -> TimingOptions:
        """Timing options for this run."""
        return TimingOptions.quick() if self.quick else TimingOptions()


def resolve_devices(backends: list[str]) -> list[str]:
    """Device names for the requested backends (`name` or `name:index`).

    With none requested: device 0 of every available backend that has kernels. Raises
    BenchError listing the valid names for an unknown or unavailable backend.
    """
    if not backends:
        return [
            f"{n}:0"
            for n in hal.available_backends()
            if hal.backend(n).kernels and hal.backend(n).kernels.ops()
        ]
    devices = []
    for spec in backends:
        name, _, index = spec.partition(":")
        if name not in hal.backends():
            raise BenchError(f"unknown backend {name!r}; registered: {', '.join(hal.backends())}")
        backend = hal.backend(name)
        if not backend.is_available():
            raise BenchError(
                f"backend {name!r} is unavailable: {backend.why_unavailable()}; "
                f"available: {', '.join(hal.available_backends())}"
            )
        if index and not (index.isdigit() and int(index) < backend.device_count()):
            raise BenchError(
                f"device {spec!r} does not exist; devices: {', '.join(backend.devices())}"
            )
        devices.append(f"{name}:{index or 0}")
    return devices


def plan(config: Config, devices: list[str]) -> list[Task]:
    """Tasks for every suite x workload x dtype x device; BenchError for unknown names."""
    unknown = [s for s in config.suites if s not in suite_names()]
    if unknown:
        raise BenchError(f"unknown suite {', '.join(unknown)}; suites: {', '.join(suite_names())}")
    loaded = {s: suite_workloads(s) for s in config.suites}
    offered = sorted({d for ws in loaded.values() for w in ws for d in w.dtypes})
    bad = [d for d in config.dtypes if d not in offered]
    if bad:
        raise BenchError(
            f"unknown dtype {', '.join(bad)} for suites {', '.join(config.suites)}; "
            f"dtypes: {', '.join(offered)}"
        )
    return [
        Task(suite, i, w, dtype, device.partition(":")[0], device)
        for device in devices
        for suite, ws in loaded.items()
        for i, w in enumerate(ws)
        for dtype in w.dtypes
        if not config.dtypes or dtype in config.dtypes
    ]


def _failure(task: Task, status: str, error: str) -> Measurement:
    """A record for a task the child could not finish."""
    return Measurement(
        suite=task.suite,
        workload=task.workload.name,
        params=task.workload.params,
        backend=task.backend,
        device=task.device,
        dtype=task.dtype,
        status=status,
        error=error,
    )


def _stderr_tail(path: Path, lines: int = 5) -> str:
    """The last lines the child wrote to stderr."""
    text = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    return " | ".join(text[-lines:])


def _exit_text(code: int) -> str:
    """A child's exit status in words."""
    if code < 0:
        name = signal.Signals(-code).name
        hint = " (out of memory?)" if -code == signal.SIGKILL else ""
        return f"killed by {name}{hint}"
    return f"exited with code {code}"


class DeviceRunner:
    """Measures a device's tasks in child processes, one time limit per measurement."""

    command = (sys.executable, "-m", "benchmarks.worker")  # the child; reads the job on stdin

    def __init__(
        self,
        device: DeviceRecord,
        config: Config,
        on_record: Callable[[Task, Measurement], None],
        on_device: Callable[[dict[str, Any]], None],
    ):
        self.device, self.config = device.name, config
        self.record = device  # its peaks, current when a child starts, seed the child's
        self.on_record, self.on_device = on_record, on_device

    def run(self, tasks: list[Task]) -> None:
        """Measure every task; a hung or dead child is replaced for the remaining ones."""
        remaining = list(tasks)
        while remaining:
            remaining = self._child(remaining)

    def _child(self, tasks: list[Task]) -> list[Task]:
        """Run one child over `tasks`; return the tasks still to do when it hangs or dies."""
        job = {
            "device": self.device,
            "timing": vars(self.config.timing()),
            "peaks": self.record.peaks,
            "tasks": [(t.suite, t.index, t.dtype) for t in tasks],
        }
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(
                p for p in (str(PACKAGE_ROOT), os.environ.get("PYTHONPATH")) if p
            ),
        }
        with tempfile.NamedTemporaryFile("w+", suffix=".stderr", delete=False) as err:
            err_path = Path(err.name)
        try:
            with open(err_path, "w") as err_file:
                proc = subprocess.Popen(
                    self.command,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=err_file,
                    text=True,
                    env=env,
                    cwd=PACKAGE_ROOT,
                    start_new_session=True,
                )
            try:
                return self._follow(proc, tasks, job, err_path)
            finally:
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        finally:
            err_path.unlink(missing_ok=True)

    def _follow(
        self, proc: subprocess.Popen, tasks: list[Task], job: dict[str, Any], err_path: Path
    ) -> list[Task]:
        """Feed the job, then relay messages until the child finishes, hangs or dies."""
        assert proc.stdin is not None and proc.stdout is not None
        lines: queue.Queue[str | None] = queue.Queue()

        def pump() -> None:
            for line in proc.stdout:
                lines.put(line)
            lines.put(None)

        threading.Thread(target=pump, daemon=True).start()
        proc.stdin.write(json.dumps(job))
        proc.stdin.close()
        current: int | None = None
        done = 0
        while True:
            try:
                line = lines.get(timeout=self.config.timeout)
            except queue.Empty:
                os.killpg(proc.pid, signal.SIGKILL)
                if current is None:
                    return self._fail_all(
                        tasks[done:],
                        "timeout",
                        f"no answer from {self.device} in {self.config.timeout:g} s",
                    )
                self.on_record(
                    tasks[current],
                    _failure(
                        tasks[current],
                        "timeout",
                        f"no result within the time limit of {self.config.timeout:g} s",
                    ),
                )
                return tasks[current + 1 :]
            if line is None:
                code = proc.wait()
                if done == len(tasks):
                    return []
                why = f"worker {_exit_text(code)}: {_stderr_tail(err_path)}"
                if current is None:
                    return self._fail_all(tasks[done:], "failed", why)
                self.on_record(tasks[current], _failure(tasks[current], "failed", why))
                return tasks[current + 1 :]
            message = json.loads(line)
            if message["event"] == "device":
                self.on_device(message["capabilities"])
            elif message["event"] == "start":
                current = message["task"]
            elif message["event"] == "measurement":
                self.on_record(tasks[message["task"]], Measurement.from_dict(message["record"]))
                current, done = None, message["task"] + 1

    def _fail_all(self, tasks: list[Task], status: str, why: str) -> list[Task]:
        """Record every task as not measured (the device never became ready)."""
        for task in tasks:
            self.on_record(task, _failure(task, status, why))
        return []


def _peaks_cache(cache_dir: Path) -> Path:
    """The file holding measured peaks per setup fingerprint and device."""
    return cache_dir / "peaks.json"


def load_cached_peaks(cache_dir: Path, fingerprint: str) -> dict[str, dict[str, Any]]:
    """Peaks measured earlier on this setup: device -> {"gflops", "gbps", "run"}."""
    try:
        data = json.loads(_peaks_cache(cache_dir).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data.get(fingerprint, {})


def save_cached_peaks(
    cache_dir: Path, fingerprint: str, device: str, peaks: dict[str, Any], run_id: str
) -> None:
    """Remember a device's measured peaks for later runs on this setup."""
    path = _peaks_cache(cache_dir)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    data.setdefault(fingerprint, {})[device] = {**peaks, "run": run_id}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")


@dataclass
class Outcome:
    """What a bench run did: its file, how many records, whether it finished."""

    path: Path
    run_id: str
    measured: int
    planned: int
    completed: bool = False
    failed: int = 0
    interrupted: bool = False


def find_run(resume: str, out_dir: Path) -> Path:
    """The results file of a run to resume: a path, or a run id under `out_dir`."""
    path = Path(resume)
    if path.suffix == ".jsonl" and path.exists():
        return path
    candidate = out_dir / f"{resume}.jsonl"
    if candidate.exists():
        return candidate
    runs = sorted(p.stem for p in out_dir.glob("*.jsonl")) if out_dir.is_dir() else []
    raise BenchError(
        f"no run {resume!r} to resume: neither a .jsonl file nor {candidate}; "
        f"runs in {out_dir}: {', '.join(runs[-5:]) or 'none'}"
    )


class _Recorder:
    """Writes records as they arrive; keeps the run record's devices and peaks current."""

    def __init__(
        self,
        run: RunRecord,
        writer: ResultWriter,
        machine: str,
        cache_dir: Path,
        progress: Progress,
        outcome: Outcome,
    ):
        self.run, self.writer, self.machine, self.cache_dir = run, writer, machine, cache_dir
        self.progress, self.outcome = progress, outcome
        self.bar = progress.add_task("bench", total=outcome.planned)

    def save_run(self) -> None:
        """Rewrite the run record (the last one in the file wins)."""
        self.run.fingerprint = self.run.compute_fingerprint()
        self.writer.write_run(self.run)

    def opened(self, device: DeviceRecord, capabilities: dict[str, Any]) -> None:
        """A child opened `device`: keep its capabilities (peaks live beside them)."""
        device.capabilities = {k: v for k, v in capabilities.items() if k != "peaks"}
        self.save_run()

    def measured(self, device: DeviceRecord, task: Task, m: Measurement) -> None:
        """Append a measurement; fold a peak workload's rate into the device's peaks."""
        self.writer.write(m)
        self.outcome.measured += 1
        self.outcome.failed += m.status in ("failed", "timeout")
        if task.workload.peak and m.status == "ok":
            device.peaks = merge_peak(device.peaks, task.workload.peak, m)
            device.peaks_from = self.run.id
            self.save_run()
            try:
                save_cached_peaks(
                    self.cache_dir, self.machine, device.name, device.peaks, self.run.id
                )
            except OSError as exc:
                warnings.warn(f"peaks not cached in {self.cache_dir}: {exc}", stacklevel=2)
        label = f"{m.device} {m.suite}/{m.workload} {m.dtype}"
        self.progress.update(self.bar, advance=1, description=f"{label} {m.status}")


def run_bench(
    config: Config, out_dir: Path, resume: str | None = None, console: Console | None = None
) -> Outcome:
    """Plan and run a benchmark (or finish an interrupted one) and return what happened.

    Raises BenchError for a request that cannot run. Ctrl-C stops measuring and keeps
    every record written so far; the end record says the run is incomplete and the
    outcome says it was interrupted.
    """
    console = console or Console(stderr=True)
    cache_dir = hal.settings.cache_dir
    if resume is not None:
        path = find_run(resume, out_dir)
        previous = read_results(path)
        run, done = previous.run, previous.completed_keys()
        config = Config(**run.config)
    else:
        run = RunRecord.new(new_run_id(), repo=PACKAGE_ROOT, config=vars(config))
        path, done = out_dir / f"{run.id}.jsonl", set()
    machine = RunRecord(
        id=run.id, host=run.host, libraries=run.libraries, env=run.env
    ).compute_fingerprint()
    names = resolve_devices(config.backends)
    tasks = [t for t in plan(config, names) if t.key not in done]
    cached = load_cached_peaks(cache_dir, machine)
    devices = {d.name: d for d in run.devices}
    for name in names:
        device = devices.setdefault(name, DeviceRecord(name=name, backend=name.partition(":")[0]))
        if not device.peaks and name in cached:
            entry = dict(cached[name])
            device.peaks_from = entry.pop("run", None)
            device.peaks = entry
    run.devices = list(devices.values())
    try:
        writer = ResultWriter(path)
    except OSError as exc:
        raise BenchError(f"cannot write results to {path}: {exc.strerror or exc}") from exc
    outcome = Outcome(path=path, run_id=run.id, measured=0, planned=len(tasks))
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    )
    recorder = _Recorder(run, writer, machine, cache_dir, progress, outcome)
    try:
        recorder.save_run()
        with progress:
            for name in names:
                device = devices[name]
                DeviceRunner(
                    device,
                    config,
                    functools.partial(recorder.measured, device),
                    functools.partial(recorder.opened, device),
                ).run([t for t in tasks if t.device == name])
        outcome.completed = True
    except KeyboardInterrupt:
        outcome.interrupted = True
    finally:
        writer.write_end(run.id, outcome.completed)
        writer.close()
    return outcome
