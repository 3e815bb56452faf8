"""The harness on the real CPU backend: plans, timing, checks, isolation, resume, Ctrl-C."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from rich.progress import Progress

import hal
from benchmarks.harness import (
    Outcome,
    _Recorder,
    find_run,
    load_cached_peaks,
    save_cached_peaks,
    setup_fingerprint,
)
from benchmarks.isolation import PACKAGE_ROOT
from benchmarks.plan import BenchError, Config, plan, resolve_devices
from benchmarks.schema.environment import new_run
from benchmarks.schema.files import ResultWriter, read_results
from benchmarks.schema.records import DeviceRecord, Measurement
from benchmarks.suites import ops, peak
from benchmarks.timing import (
    TimingOptions,
    derived_metrics,
    measure,
    merge_peak,
    merge_rounds,
    normwise_error,
)
from benchmarks.workload import suite_names
from hal.cli import main

FAST = TimingOptions(warmup=1, min_samples=10, max_samples=10, sample_time=0.001, budget=0.1)


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    """Peaks cached by these runs go to a temporary cache directory."""
    monkeypatch.setattr(hal.settings, "cache_dir", tmp_path / "cache")
    monkeypatch.setenv("HAL_CACHE_DIR", str(tmp_path / "cache"))


def test_unknown_suite_backend_dtype_list_the_valid_ones():
    with pytest.raises(
        BenchError,
        match=r"unknown suite nope; suites: (\w+, )*ops, (\w+, )*peak, quick, (\w+, )*smoke",
    ):
        plan(Config(suites=["nope"]), ["cpu:0"])
    with pytest.raises(BenchError, match=r"unknown dtype int3 .*dtypes: complex64, float32"):
        plan(Config(suites=["smoke"], dtypes=["int3"]), ["cpu:0"])
    with pytest.raises(BenchError, match=r"rounds must be at least 1.*rounds=0"):
        plan(Config(suites=["smoke"], rounds=0), ["cpu:0"])
    with pytest.raises(BenchError, match=r"unknown backend 'tpu'; registered: cpu"):
        resolve_devices(["tpu"])
    with pytest.raises(BenchError, match=r"device 'cpu:7' does not exist; devices: cpu:0"):
        resolve_devices(["cpu:7"])


def test_default_devices_are_available_backends_with_kernels():
    devices = resolve_devices([])
    assert "cpu:0" in devices
    assert "null:0" not in devices  # the copy-me template has no kernels


def test_plan_filters_dtypes():
    tasks = plan(Config(suites=["smoke"], dtypes=["float64"]), ["cpu:0"])
    assert {t.dtype for t in tasks} == {"float64"}
    assert {t.workload.name for t in tasks} == {"add", "sum", "gemm"}


def test_measure_checks_then_times_on_the_cpu():
    device = hal.device("cpu")
    m = measure(ops.gemm(64, 16, 64), "smoke", "float32", device, FAST)
    assert m.status == "ok", m.error
    assert m.check.passed and m.check.max_error <= m.check.tolerance
    assert len(m.samples) == m.stats["n"] == 10 and m.inner_loops >= 1
    assert m.stats["min"] <= m.stats["median"] <= m.stats["max"]
    assert m.flops == 2 * 64 * 16 * 64
    assert m.metrics["gflops"] == pytest.approx(m.flops / m.stats["median"] / 1e9)
    assert m.placement.ops["matmul"] == {"cpu:0:kernel": 1}
    assert m.timer == device.timer and "synchronize" in m.sync


def test_wrong_answer_is_failed_and_not_timed():
    wrong = ops.gemm(32, 8, 32)
    wrong.reference = lambda a, b: np.matmul(a, b) + 1.0
    m = measure(wrong, "smoke", "float64", hal.device("cpu"), FAST)
    assert m.status == "failed" and "wrong answer" in m.error
    assert not m.check.passed and m.samples == [] and m.stats is None


def test_unsupported_on_a_backend_is_skipped_with_the_reason():
    m = measure(ops.gemm(32, 8, 32), "smoke", "float32", hal.device("null"), FAST)
    assert m.status == "skipped"
    assert "FallbackRefused" in m.error and "matmul" in m.error


def test_normwise_error_and_derived_metrics():
    assert normwise_error(np.array([1.0, 2.1]), np.array([1.0, 2.0])) == pytest.approx(0.05)
    assert normwise_error(np.zeros(2), np.zeros(2)) == 0.0
    m = Measurement("s", "w", "cpu", "cpu:0", "float32", flops=2e9, bytes=1e9, items=10)
    metrics = derived_metrics(m, 0.01, {"gflops": {"float32": 400.0}, "gbps": 50.0})
    assert metrics == pytest.approx(
        {"gflops": 200.0, "gbps": 100.0, "items_per_s": 1000.0, "pct_of_peak": 50.0}
    )
    m.status, m.metrics = "ok", metrics
    peaks = merge_peak({"gflops": {"float32": 150.0}}, "gflops", m)
    assert peaks == {"gflops": {"float32": 200.0}}
    assert merge_peak(peaks, "gbps", m) == {"gflops": {"float32": 200.0}, "gbps": 100.0}


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.slow
def test_bench_smoke_end_to_end_then_resume(tmp_path, capsys):
    out = tmp_path / "results"
    assert (
        main(["bench", "--suite", "smoke", "--backend", "cpu", "--quick", "--out", str(out)]) == 0
    )
    (path,) = out.glob("*.jsonl")
    res = read_results(path)
    assert res.completed and len(res.measurements) == 9
    assert all(m.status == "ok" and m.check.passed for m in res.measurements)
    assert res.run.devices[0].capabilities["backend"] == "cpu"
    assert res.run.config["suites"] == ["smoke"] and res.run.config["quick"]
    assert (out / f"{path.stem}-report" / "report.html").exists()
    assert "9 measurement(s)" in capsys.readouterr().out

    lines = path.read_text().splitlines()  # cut the run short in its 5th measurement
    kept = [line for line in lines if '"type": "measurement"' in line][:5]
    path.write_text("\n".join([lines[0], *kept[:4]]) + "\n" + kept[4][:100])
    with pytest.warns(UserWarning, match=f"{path.name}:6: cut off a torn last line"):
        assert main(["bench", "--resume", path.stem, "--out", str(out), "--no-report"]) == 0
    records = _lines(path)  # every line is whole JSON: nothing merged into the torn one
    assert sum(r["type"] == "measurement" for r in records) == 9  # 4 kept + 5 measured
    assert records[-1] == {**records[-1], "type": "end", "completed": True}
    assert len(read_results(path).measurements) == 9


def test_resume_on_another_setup_is_refused(tmp_path, capsys):
    out = tmp_path / "results"
    path = out / "old.jsonl"
    run = new_run("old", repo=PACKAGE_ROOT, config={"suites": ["smoke"]})
    run.host["cpu"] = "Another CPU"
    with ResultWriter(path) as writer:
        writer.write_run(run)
    assert main(["bench", "--resume", "old", "--out", str(out)]) == 2
    assert "run old was measured on another setup" in capsys.readouterr().err


def test_resume_of_a_run_another_process_writes_is_refused(tmp_path, capsys):
    out = tmp_path / "results"
    path = out / "held.jsonl"
    with ResultWriter(path) as writer:
        writer.write_run(new_run("held", repo=PACKAGE_ROOT, config=vars(Config(
            suites=["smoke"], backends=["cpu"], dtypes=["float64"], quick=True))))
    code = ("import sys; from benchmarks.schema.lock import RunLock; lock = RunLock(sys.argv[1]); "
            "print('held', flush=True); sys.stdin.read()")
    writer = subprocess.Popen([sys.executable, "-c", code, str(path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, cwd=PACKAGE_ROOT)
    try:
        assert writer.stdout.readline() == "held\n"
        before = path.read_bytes()
        assert main(["bench", "--resume", "held", "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert f"run held is still being written: {path} is being written by process " \
               f"{writer.pid}" in err
        assert path.read_bytes() == before  # no measurement and no end record added
        writer.kill()  # killed: its lock file stays, naming it
        writer.wait(timeout=30)
        with pytest.warns(UserWarning, match=f"took over the lock of process {writer.pid}"):
            ResultWriter(path).close()
    finally:
        writer.kill()
        writer.wait(timeout=30)


def test_resume_of_an_unknown_run_names_the_runs(tmp_path, capsys):
    assert main(["bench", "--resume", "nope", "--out", str(tmp_path)]) == 2
    assert "no run 'nope' to resume" in capsys.readouterr().err


@pytest.mark.parametrize("run_id", ["../outside", "sub/run", ".."])
def test_resume_of_a_run_id_with_a_path_is_refused(tmp_path, capsys, run_id):
    out = tmp_path / "results"
    (tmp_path / "outside.jsonl").write_text("")  # what '../outside' would reach
    assert main(["bench", "--resume", run_id, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"--resume {run_id!r}: run id {run_id!r} is not a plain file name" in err
    assert len(err.strip().splitlines()) == 1
    with pytest.raises(hal.HalError):
        find_run(run_id, out)


def test_resume_of_a_file_with_a_damaged_run_record_is_one_line(tmp_path, capsys):
    out = tmp_path / "results"
    out.mkdir()
    (out / "bad.jsonl").write_text(json.dumps({"type": "run", "schema": "1.0", "id": "bad",
                                               "config": {"suites": ["smoke"], "x": 1}}) + "\n")
    assert main(["bench", "--resume", "bad", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "cannot resume from" in err and "bad.jsonl" in err and "'x'" in err


def test_unknown_backend_from_the_command_line(tmp_path, capsys):
    assert main(["bench", "--backend", "tpu", "--out", str(tmp_path)]) == 2
    assert "registered: cpu" in capsys.readouterr().err


@pytest.mark.slow
def test_ctrl_c_keeps_what_was_measured(tmp_path, capsys):
    out = tmp_path / "results"
    env = {**os.environ, "PYTHONPATH": str(PACKAGE_ROOT)}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "benchmarks.cli",
            "bench",
            "--suite",
            "ops",
            "--dtype",
            "float64",
            "--quick",
            "--backend",
            "cpu",
            "--out",
            str(out),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=PACKAGE_ROOT,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        files = list(out.glob("*.jsonl"))
        if files and '"type": "measurement"' in files[0].read_text():
            break
        time.sleep(0.1)
    assert main(["bench", "--resume", files[0].stem, "--out", str(out)]) == 2  # still running
    assert f"is being written by process {proc.pid}" in capsys.readouterr().err
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "--resume" in err
    res = read_results(files[0])
    assert not res.completed and len(res.measurements) >= 1


def test_peaks_measured_now_replace_cached_ones(tmp_path):
    run = new_run("now")
    device = DeviceRecord("cpu:0", "cpu", peaks={"gflops": {"float32": 999.0}}, peaks_from="old")
    with ResultWriter(tmp_path / "r.jsonl") as writer:
        outcome = Outcome(tmp_path / "r.jsonl", "now", 0, 1)
        recorder = _Recorder(run, writer, "fp", tmp_path / "cache", Progress(), outcome, {})
        task = plan(Config(suites=["peak"], dtypes=["float32"]), ["cpu:0"])[0]
        m = Measurement("peak", "gemm", "cpu", "cpu:0", "float32", metrics={"gflops": 100.0})
        recorder.measured(device, task, m)
    assert device.peaks == {"gflops": {"float32": 100.0}} and device.peaks_from == "now"
    assert load_cached_peaks(tmp_path / "cache", "fp") == {
        "cpu:0": {"gflops": {"float32": 100.0}, "run": "now"}
    }


def test_cached_peaks_give_a_later_run_its_pct_of_peak(tmp_path):
    cache = tmp_path / "cache"  # the autouse fixture points hal.settings.cache_dir here
    fingerprint = setup_fingerprint(new_run("any", repo=PACKAGE_ROOT))
    save_cached_peaks(cache, fingerprint, "cpu:0", {"gflops": {"float32": 1e6}}, "earlier")
    out = tmp_path / "results"
    assert (
        main(
            [
                "bench",
                "--suite",
                "smoke",
                "--dtype",
                "float32",
                "--backend",
                "cpu",
                "--quick",
                "--out",
                str(out),
                "--no-report",
            ]
        )
        == 0
    )
    res = read_results(next(out.glob("*.jsonl")))
    (device,) = res.run.devices
    assert device.peaks_from == "earlier" and device.peaks["gflops"]["float32"] == 1e6
    gemm = next(m for m in res.measurements if m.workload == "gemm")
    assert gemm.metrics["pct_of_peak"] == pytest.approx(gemm.metrics["gflops"] / 1e4)


def test_registering_bench_imports_nothing_heavy():
    code = (
        "import sys, benchmarks.cli; "
        "heavy = [m for m in ('hal', 'numpy', 'pandas', 'rich') if m in sys.modules]; "
        "assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=PACKAGE_ROOT, timeout=60)


def test_unwritable_results_directory_is_named(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    assert main(["bench", "--suite", "smoke", "--backend", "cpu", "--out", str(blocker)]) == 2
    assert f"cannot write results to {blocker}" in capsys.readouterr().err


def test_rounds_split_the_timing_and_pool_the_samples():
    per = TimingOptions(min_samples=10, max_samples=30, budget=2.0).per_round(3)
    assert (per.min_samples, per.max_samples, per.budget) == (4, 10, pytest.approx(2 / 3))
    device = hal.device("cpu")
    first = measure(ops.gemm(64, 16, 64), "smoke", "float32", device, FAST)
    second = measure(ops.gemm(64, 16, 64), "smoke", "float32", device, FAST)
    merged = merge_rounds(first, second, {})
    assert merged.rounds == 2 and merged.samples == first.samples + second.samples
    assert merged.stats["n"] == 20 and merged.inner_loops == first.inner_loops
    assert merged.metrics["gflops"] == pytest.approx(merged.flops / merged.stats["median"] / 1e9)
    broken = Measurement("smoke", "gemm", "cpu", "cpu:0", "float32", status="failed", error="x")
    assert merge_rounds(first, broken, {}) is broken


@pytest.mark.slow
def test_bench_in_rounds_then_resume_the_last_round(tmp_path):
    out = tmp_path / "results"
    args = [
        "bench",
        "--suite",
        "smoke",
        "--dtype",
        "float64",
        "--backend",
        "cpu",
        "--quick",
        "--rounds",
        "2",
        "--out",
        str(out),
        "--no-report",
    ]
    assert main(args) == 0
    (path,) = out.glob("*.jsonl")
    res = read_results(path)
    assert all(m.rounds == 2 and m.stats["n"] == len(m.samples) >= 8 for m in res.measurements)
    lines = path.read_text().splitlines()  # keep the first round only
    first = [line for line in lines if '"type": "measurement"' in line][:3]
    assert all('"rounds": 1' in line for line in first)
    path.write_text("\n".join([lines[0], *first]) + "\n")
    assert main(["bench", "--resume", str(path), "--no-report"]) == 0
    res = read_results(path)
    assert res.completed and [m.rounds for m in res.measurements] == [2, 2, 2]


@pytest.mark.parametrize("kind", ["scale", "add", "triad"])
def test_stream_kernels_check_and_count_stream_bytes(kind):
    m = measure(peak.stream(kind, 4096), "peak", "float64", hal.device("cpu"), FAST)
    assert m.status == "ok", m.error
    arrays = {"scale": 2, "add": 3, "triad": 3}[kind]
    assert m.bytes == arrays * 4096 * 8 and m.flops is None


def test_every_suite_has_unique_measurement_keys():
    for suite in suite_names():
        keys = [t.key for t in plan(Config(suites=[suite]), ["cpu:0"])]
        assert len(keys) == len(set(keys)), suite
    deepbench = {
        (t.workload.params["M"], t.workload.params["N"])
        for t in plan(Config(suites=["ops"]), ["cpu:0"])
        if t.workload.name == "gemm"
    }
    assert {(m, n) for m in (1760, 2048, 2560) for n in (16, 32, 64, 128)} <= deepbench
