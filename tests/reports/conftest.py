"""Synthetic result files written through the real writer."""

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from benchmarks.schema.environment import new_run
from benchmarks.schema.files import ResultWriter
from benchmarks.schema.records import Check, DeviceRecord, Measurement, Placement
from benchmarks.stats import summarize

PEAKS = {"gflops": {"float32": 200.0, "float64": 100.0}, "gbps": 20.0}


def synthetic_measurement(
    workload: str,
    backend: str,
    median: float,
    seed: int,
    status: str = "ok",
    dtype: str = "float32",
    fallbacks: tuple[str, ...] = (),
) -> Measurement:
    """A measurement whose 30 samples are lognormal around `median` (1% spread)."""
    samples = (median * np.random.default_rng(seed).lognormal(0.0, 0.01, 30)).tolist()
    ok = status == "ok"
    flops, nbytes = 2e9, 1e8
    return Measurement(
        suite="ops",
        workload=workload,
        backend=backend,
        device=f"{backend}:0",
        dtype=dtype,
        params={"n": 1024},
        status=status,
        error=None if ok else "kernel crashed",
        timer="perf_counter",
        sync="synchronize",
        warmup=2,
        inner_loops=3,
        samples=samples if ok else [],
        stats=summarize(samples).to_dict() if ok else None,
        flops=flops,
        bytes=nbytes,
        metrics={"gflops": flops / median / 1e9, "gbps": nbytes / median / 1e9} if ok else {},
        check=Check(ok, 1e-6 if ok else 1.0, 1e-5),
        placement=Placement(
            {
                workload: {f"{backend}:0:kernel": 1},
                **{op: {f"{backend}:0:fallback": 1} for op in fallbacks},
            },
            len(fallbacks),
            4096 * len(fallbacks),
        ),
    )


def write_results(
    path: Path,
    measurements: list[Measurement],
    run_id: str = "run",
    hostname: str | None = None,
    completed: bool = True,
) -> Path:
    """A results file with a run record (peaks and a name for every backend's device, the
    host named `hostname` if given), measurements and an end."""
    backends = sorted({m.backend for m in measurements})
    run = new_run(
        run_id,
        devices=[DeviceRecord(f"{b}:0", b, {"vendor": b, "name": f"{b} chip"}) for b in backends],
    )
    if hostname is not None:
        run.host["hostname"] = hostname
    for d in run.devices:
        d.peaks = PEAKS
    with ResultWriter(path) as w:
        w.write_run(run)
        for m in measurements:
            w.write(m)
        w.write_end(run.id, completed)
    return path


@pytest.fixture
def two_backend_run(tmp_path: Path) -> Path:
    """One run: cpu and opencl on three workloads; opencl 2x faster on gemm, one failure."""
    ms = [
        synthetic_measurement("gemm", "cpu", 0.010, 1),
        synthetic_measurement("gemm", "opencl", 0.005, 2, fallbacks=("cast",)),
        synthetic_measurement("add", "cpu", 0.002, 3),
        synthetic_measurement("add", "opencl", 0.004, 4),
        synthetic_measurement("fft", "cpu", 0.003, 5, dtype="complex64"),
        synthetic_measurement("fft", "opencl", 0.003, 6, status="failed", dtype="complex64"),
    ]
    return write_results(tmp_path / "two.jsonl", ms)


@pytest.fixture
def measurement():
    """Factory of synthetic measurements (see `synthetic_measurement`)."""
    return synthetic_measurement


@pytest.fixture
def results_file(tmp_path: Path):
    """Factory: `results_file(name, measurements, run_id, hostname=None, completed=True)`
    writes a results file in tmp_path."""
    return lambda name, ms, run_id="run", **kw: write_results(tmp_path / name, ms, run_id, **kw)


@pytest.fixture
def suite_measurement(measurement):
    """Factory of a synthetic measurement of a suite's workload: its median (1% spread),
    params, items, metrics, facts and check (see `synthetic_measurement`)."""

    def make(suite, workload, backend, median, *, params=None, dtype="float64", items=None,
             metrics=None, facts=None, status="ok", error=None, max_error=1e-7, quality=None,
             seed=0, device=None):
        m = measurement(workload, backend, median, seed, status=status, dtype=dtype)
        return dataclasses.replace(
            m, suite=suite, params=dict(params or {}), items=items, flops=None, bytes=None,
            device=device or m.device, metrics=dict(metrics or {}), facts=dict(facts or {}),
            error=error if status != "ok" else None,
            check=Check(True, max_error, 1e-4, quality or {}) if status == "ok" else None)

    return make
