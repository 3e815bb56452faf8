"""Run a benchmark: plan it, measure each device in isolation, record as measured.

With `rounds` > 1 every measurement is split into rounds and the devices take turns
(A B, then B A, ...), so slow drift of the machine hits baseline and candidate alike;
each round's record pools the samples of the rounds before it.

Every record is appended and fsynced to `<out>/<run-id>.jsonl` as it arrives, so Ctrl-C
keeps what was measured and `--resume RUN` finishes the run without redoing it; the
file's lock refuses a resume while the run is still being written. Peaks measured by the
`peak` suite go into the run record and a per-setup cache, and give later measurements
their % of peak: a device's own FLOP/s peaks (and bandwidth, on memory of its own), keyed
by device, and the host memory's bandwidth, keyed by that memory and shared by every
device on host memory (`benchmarks.peaks`).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

import hal
from benchmarks.bandwidth import measure_host_bandwidth
from benchmarks.isolation import PACKAGE_ROOT, DeviceRunner
from benchmarks.peaks import HOST, in_cache, measures_peak, on_host, own_peaks, with_memory_peak
from benchmarks.plan import BenchError, Config, Task, plan, resolve_devices
from benchmarks.schema.environment import new_run, with_device_libraries
from benchmarks.schema.files import ResultWriter, read_results
from benchmarks.schema.lock import RunInProgress
from benchmarks.schema.records import (
    DeviceRecord,
    Measurement,
    MeasurementKey,
    ResultsError,
    RunRecord,
    new_run_id,
    run_id_problem,
)
from benchmarks.timing import merge_peak, merge_rounds


def setup_fingerprint(run: RunRecord) -> str:
    """The fingerprint of a run's host, libraries and environment (no devices): the key
    under which peaks are cached, known before any device is opened."""
    return RunRecord(
        id=run.id, host=run.host, libraries=run.libraries, env=run.env
    ).compute_fingerprint()


HOST_MEMORY = f"memory:{HOST}"  # the cache key of the host memory's bandwidth peak


def _peaks_cache(cache_dir: Path) -> Path:
    """The file holding measured peaks per setup fingerprint, device and memory."""
    return cache_dir / "peaks.json"


def load_cached_peaks(cache_dir: Path, fingerprint: str) -> dict[str, dict[str, Any]]:
    """Peaks measured earlier on this setup: device -> {"gflops", "gbps", "run"}, and
    HOST_MEMORY -> the host memory's bandwidth (`benchmarks.bandwidth`) with its "run"."""
    try:
        data = json.loads(_peaks_cache(cache_dir).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data.get(fingerprint, {})


def save_cached_peaks(
    cache_dir: Path, fingerprint: str, device: str, peaks: dict[str, Any], run_id: str
) -> None:
    """Remember a device's (or, under HOST_MEMORY, the host memory's) measured peaks for
    later runs on this setup."""
    path = _peaks_cache(cache_dir)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    data.setdefault(fingerprint, {})[device] = {"run": run_id, **peaks}
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
    problem = run_id_problem(resume)
    if problem:
        raise BenchError(f"--resume {resume!r}: {problem}; or give the path of its .jsonl file")
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
        records: dict[MeasurementKey, Measurement],
        host_memory: dict[str, Any] | None = None,
    ):
        self.run, self.writer, self.machine, self.cache_dir = run, writer, machine, cache_dir
        self.progress, self.outcome, self.records = progress, outcome, records
        self.host_memory = host_memory
        self.bar = progress.add_task("bench", total=outcome.planned)

    def needs(self, key: MeasurementKey, round_: int) -> bool:
        """True if the measurement still lacks round `round_` (or was never taken)."""
        m = self.records.get(key)
        return m is None or (m.status == "ok" and m.rounds <= round_)

    def cache_peaks(self, key: str, peaks: dict[str, Any]) -> None:
        """Keep peaks for later runs on this setup (a warning where they cannot be kept)."""
        try:
            save_cached_peaks(self.cache_dir, self.machine, key, peaks, self.run.id)
        except OSError as exc:
            warnings.warn(f"peaks not cached in {self.cache_dir}: {exc}", stacklevel=3)

    def _host_stream(self, m: Measurement) -> None:
        """A backend's STREAM kernel on host memory beyond the cache that beats the host
        kernels becomes the host memory's peak, for every device on it (the best rate any
        kernel reaches on a memory is its practical peak)."""
        host = self.host_memory
        rate = m.metrics.get("gbps") if m.status == "ok" else None
        if not (host and rate and rate > host["gbps"]) or in_cache(m.bytes,
                                                                   host.get("cache_bytes")):
            return
        self.host_memory = {**host, "gbps": rate, "kernel": f"{m.workload} on {m.device}",
                            "run": self.run.id}
        for device in filter(lambda d: on_host(d.capabilities), self.run.devices):
            device.peaks = with_memory_peak(device.peaks, device.capabilities, device.name,
                                            self.host_memory)
        self.save_run()
        self.cache_peaks(HOST_MEMORY, self.host_memory)

    def save_run(self) -> None:
        """Rewrite the run record (the last one in the file wins)."""
        self.run.fingerprint = self.run.compute_fingerprint()
        self.writer.write_run(self.run)

    def opened(self, device: DeviceRecord, capabilities: dict[str, Any]) -> None:
        """A child opened `device`: keep its capabilities (peaks live beside them), give it
        its memory's bandwidth peak, and take the library versions it names (cupy) where
        the run record has none."""
        device.capabilities = {k: v for k, v in capabilities.items() if k != "peaks"}
        device.peaks = with_memory_peak(device.peaks, capabilities, device.name, self.host_memory)
        self.run.libraries = with_device_libraries(self.run.libraries, capabilities)
        self.save_run()

    def measured(self, device: DeviceRecord, task: Task, m: Measurement) -> None:
        """Append a measurement (pooled with its earlier rounds); fold peaks in. A host
        peer left to the device that measures the host's peers gets that device's record
        (`copied_host_peer`)."""
        m = copied_host_peer(m, self.records)
        measuring = measures_peak(task.workload.peak, device.capabilities)
        if m.key in self.records:  # a peak workload has no % of a peak still being measured
            peaks = {} if measuring else device.peaks
            m = merge_rounds(self.records[m.key], m, peaks)
        self.records[m.key] = m
        self.writer.write(m)
        self.outcome.measured += 1
        self.outcome.failed += m.status in ("failed", "timeout")
        if measuring and m.status == "ok":
            # Peaks measured now replace those an earlier run left in the cache (the host
            # memory's, measured apart, stay).
            mine = device.peaks if device.peaks_from == self.run.id else with_memory_peak(
                {}, device.capabilities, device.name, self.host_memory)
            device.peaks = merge_peak(mine, task.workload.peak, m)
            device.peaks_from = self.run.id
            self.save_run()
            self.cache_peaks(device.name, own_peaks(device.peaks, device.capabilities))
        elif task.workload.peak == "gbps" and on_host(device.capabilities):
            self._host_stream(m)
        label = f"{m.device} {m.suite}/{m.workload} {m.dtype}"
        self.progress.update(self.bar, advance=1, description=f"{label} {m.status}")


def host_peers_device(measured: list[str]) -> str | None:
    """The device whose child measures the peers that compute on the host CPU for every
    device in host memory: the first cpu device already measured in this round (None: each
    device measures them itself)."""
    return next((name for name in measured if name.partition(":")[0] == "cpu"), None)


def copied_host_peer(m: Measurement, records: dict[MeasurementKey, Measurement]) -> Measurement:
    """`m` where it measured; for a host peer left to another device (PeerMeasuredElsewhere
    names it), that device's record of the same workload (its figures, or why it has none)
    as this device's, with the fact `measured_under`: the same computation on the same CPU,
    measured once."""
    if m.status != "skipped" or not (m.error or "").startswith("PeerMeasuredElsewhere"):
        return m
    under = m.error.rsplit("measured under ", 1)[-1].split()[0]
    key = (*m.key[:3], under.partition(":")[0], under, m.key[5])
    found = records.get(key)
    if found is None:
        return m
    return replace(found, backend=m.backend, device=m.device, time=m.time,
                   facts={**found.facts, "measured_under": under})


def _host_memory(config: Config, cached: dict[str, Any] | None, console: Console,
                 run_id: str) -> dict[str, Any] | None:
    """The host memory's bandwidth peak: measured now when the run has the `peak` suite
    (an earlier run's figure on this setup stays where it is higher: the best rate seen is
    the practical peak), else the cached one, else None (no % of a bandwidth peak on host
    devices)."""
    if "peak" not in config.suites:
        return cached
    now = {**measure_host_bandwidth(repeats=5 if config.quick else 10), "run": run_id}
    kept = cached if cached and cached["gbps"] > now["gbps"] else now
    cache = f"{now['cache_bytes'] / 2**20:.0f} MiB" if now["cache_bytes"] else "unknown"
    console.print(
        f"host memory: {now['gbps']:.3g} GB/s ({now['kernel']}, arrays of "
        f"{now['array_bytes'] / 2**20:.0f} MiB, last-level cache {cache}, load "
        f"{now['load']:.2f})" + ("" if kept is now else
                                f"; {kept['gbps']:.3g} GB/s kept from run {kept.get('run')}")
    )
    return kept


def _warn_if_busy(console: Console) -> None:
    """Say so when other work already loads the machine: its figures will be noisy."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    if cores and load >= 0.5 * cores:
        console.print(
            f"[yellow]warning:[/] load average {load:.2f} on {cores} cores before "
            "measuring: other work shares the machine, expect noisy figures"
        )


def run_bench(
    config: Config, out_dir: Path, resume: str | None = None, console: Console | None = None
) -> Outcome:
    """Plan and run a benchmark (or finish an interrupted one) and return what happened.

    Raises BenchError for a request that cannot run, a run to resume among them while
    another process still writes it (its writer holds the file's lock). Ctrl-C stops
    measuring and keeps every record written so far; the end record says the run is
    incomplete and the outcome says it was interrupted.
    """
    console = console or Console(stderr=True)
    cache_dir = hal.settings.cache_dir
    with contextlib.ExitStack() as held:
        if resume is not None:
            path = find_run(resume, out_dir)
            writer = held.enter_context(_writer(path))  # the lock, before the file is read
            run, config, records = _resumed(path)
        else:
            run = new_run(new_run_id(), repo=PACKAGE_ROOT, config=vars(config))
            path, records = out_dir / f"{run.id}.jsonl", {}
        machine = setup_fingerprint(run)
        _warn_if_busy(console)
        names = resolve_devices(config.backends)
        tasks = plan(config, names)
        rounds_left = sum(
            config.rounds - (records[t.key].rounds if t.key in records else 0)
            for t in tasks
            if t.key not in records or records[t.key].status == "ok"
        )
        cached = load_cached_peaks(cache_dir, machine)
        devices = {d.name: d for d in run.devices}
        for name in names:
            device = devices.setdefault(
                name, DeviceRecord(name=name, backend=name.partition(":")[0])
            )
            if not device.peaks and name in cached:
                entry = dict(cached[name])
                device.peaks_from = entry.pop("run", None)
                device.peaks = entry
        run.devices = list(devices.values())
        if resume is None:
            writer = held.enter_context(_writer(path))
        outcome = Outcome(path=path, run_id=run.id, measured=0, planned=rounds_left)
        progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
        )
        recorder = _Recorder(run, writer, machine, cache_dir, progress, outcome, records)
        try:
            recorder.host_memory = _host_memory(config, cached.get(HOST_MEMORY), console, run.id)
            if recorder.host_memory and "peak" in config.suites:
                recorder.cache_peaks(HOST_MEMORY, recorder.host_memory)
            recorder.save_run()
            with progress:
                for round_ in range(config.rounds):  # devices alternate order between rounds
                    done: list[str] = []
                    for name in names if round_ % 2 == 0 else names[::-1]:
                        todo = [
                            t for t in tasks if t.device == name and recorder.needs(t.key, round_)
                        ]
                        device = devices[name]
                        DeviceRunner(
                            device,
                            config,
                            functools.partial(recorder.measured, device),
                            functools.partial(recorder.opened, device),
                            recorder.host_memory,
                            host_peers_device(done),
                        ).run(todo)
                        done.append(name)
            outcome.completed = True
        except KeyboardInterrupt:
            outcome.interrupted = True
        finally:
            writer.write_end(run.id, outcome.completed)
    return outcome


def _writer(path: Path) -> ResultWriter:
    """The results file's writer, holding its lock: BenchError while another process
    writes the run, or when the file cannot be written."""
    try:
        return ResultWriter(path)
    except RunInProgress as exc:
        raise BenchError(f"run {path.stem} is still being written: {exc}") from exc
    except OSError as exc:
        raise BenchError(f"cannot write results to {path}: {exc.strerror or exc}") from exc


def _resumed(path: Path) -> tuple[RunRecord, Config, dict[MeasurementKey, Measurement]]:
    """The run record, config and measurements of a run to finish: BenchError for a file
    that cannot be resumed or a run measured on another setup."""
    try:
        previous = read_results(path)
        run, config = previous.run, Config(**previous.run.config)
    except (ResultsError, TypeError) as exc:
        raise BenchError(f"cannot resume from {path}: {exc}") from exc
    if setup_fingerprint(new_run(run.id, repo=PACKAGE_ROOT)) != setup_fingerprint(run):
        raise BenchError(
            f"run {run.id} was measured on another setup (host, libraries or environment "
            "differ); its figures would not mix with new ones: start a new run"
        )
    return run, config, {m.key: m for m in previous.measurements}
