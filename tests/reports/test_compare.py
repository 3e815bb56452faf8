"""`hal compare`: verdicts on synthetic data, fingerprints, exit codes, --across backends."""

import dataclasses
import json
import math

import numpy as np
import pytest

from benchmarks.schema.files import load_results
from benchmarks.schema.records import SCHEMA_VERSION
from benchmarks.stats import summarize
from reports.cli import main
from reports.compare import (
    RunNoise,
    compare_backends,
    compare_runs,
    exit_code,
    noise_factor,
    noise_limit,
    run_noise,
)


@pytest.fixture
def base_and_new(measurement, results_file):
    """BASE and NEW runs: one faster, one slower, one the same, a new failure and a fix."""
    base = results_file(
        "base.jsonl",
        [
            measurement("faster", "cpu", 0.010, 1),
            measurement("slower", "cpu", 0.010, 2),
            measurement("same", "cpu", 0.010, 3),
            measurement("breaks", "cpu", 0.010, 4),
            measurement("mended", "cpu", 0.010, 5, status="failed"),
            measurement("dropped", "cpu", 0.010, 6),
        ],
        "base",
    )
    new = results_file(
        "new.jsonl",
        [
            measurement("faster", "cpu", 0.008, 11),
            measurement("slower", "cpu", 0.013, 12),
            measurement("same", "cpu", 0.010, 13),
            measurement("breaks", "cpu", 0.010, 14, status="timeout"),
            measurement("mended", "cpu", 0.010, 15),
            measurement("added", "cpu", 0.010, 16),
        ],
        "new",
    )
    return base, new


def test_verdicts(base_and_new):
    base, new = (load_results(p) for p in base_and_new)
    rows = {c.workload: c for c in compare_runs(base, new)}
    assert {w: c.verdict for w, c in rows.items()} == {
        "faster": "improved",
        "slower": "regressed",
        "same": "unchanged",
        "breaks": "new failure",
        "mended": "fixed",
        "dropped": "incomparable",
        "added": "incomparable",
    }
    faster = rows["faster"]
    assert faster.ci_low < 1.25 < faster.ci_high and faster.p_value < 1e-6
    assert rows["same"].p_value > 0.01
    assert rows["added"].note == "only in NEW"
    assert exit_code(list(rows.values())) == 1


def test_threshold_turns_a_small_change_into_unchanged(measurement, results_file):
    base = load_results(results_file("a.jsonl", [measurement("w", "cpu", 0.010, 1)]))
    new = load_results(results_file("b.jsonl", [measurement("w", "cpu", 0.0093, 2)]))
    assert compare_runs(base, new)[0].verdict == "improved"  # 7% > default 5% and the noise
    assert compare_runs(base, new, threshold=0.10)[0].verdict == "unchanged"


def test_cli_exit_codes_and_output(base_and_new, measurement, results_file, capsys):
    base, new = base_and_new
    assert main(["compare", str(base), str(new)]) == 1
    out = capsys.readouterr().out
    assert "regressed" in out and "new failure" in out and "1 improved" in out
    same = results_file("same.jsonl", [measurement("same", "cpu", 0.010, 21)])
    assert main(["compare", str(base), str(same)]) == 0


def _with_other_host(path, tmp_path):
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    lines[0]["host"]["cpu"] = "Another CPU"
    lines[0]["fingerprint"] = "0" * 64
    other = tmp_path / "other-host.jsonl"
    other.write_text("\n".join(json.dumps(r) for r in lines))
    return other


def test_mismatched_fingerprints_refused_or_flagged(base_and_new, tmp_path, capsys):
    base, new = base_and_new
    other = _with_other_host(new, tmp_path)
    assert main(["compare", str(base), str(other)]) == 2
    err = capsys.readouterr().err
    assert "different setups" in err and "Another CPU" in err and "--force" in err
    assert main(["compare", str(base), str(other), "--force"]) == 1
    assert "warning: different setups" in capsys.readouterr().out


def test_unreadable_file_and_bad_arguments(base_and_new, tmp_path, capsys):
    base, _ = base_and_new
    assert main(["compare", str(base), str(tmp_path / "gone.jsonl")]) == 2
    assert "gone.jsonl" in capsys.readouterr().err
    assert main(["compare", str(base)]) == 2
    assert "--across" in capsys.readouterr().err


def test_across_backends(two_backend_run, capsys):
    rows = compare_backends(load_results(two_backend_run), "cpu")
    assert {(c.workload, c.verdict) for c in rows} == {
        ("gemm", "improved"),
        ("add", "regressed"),
        ("fft", "new failure"),
    }
    gemm = next(c for c in rows if c.workload == "gemm")
    assert gemm.speedup == pytest.approx(2.0, rel=0.02) and gemm.new == "opencl:0"
    assert main(["compare", str(two_backend_run), "--across", "backends"]) == 0
    assert "opencl:0" in capsys.readouterr().out
    assert main(["compare", str(two_backend_run), "--across", "backends", "--baseline", "tpu"]) == 2
    assert "backends there: cpu, opencl" in capsys.readouterr().err


def test_a_run_of_another_major_schema_version_is_not_comparable(base_and_new, tmp_path, capsys):
    base, new = base_and_new
    future = tmp_path / "future.jsonl"
    future.write_text(new.read_text().replace(f'"schema": "{SCHEMA_VERSION}"', '"schema": "2.0"'))
    assert main(["compare", str(base), str(future)]) == 2
    err = capsys.readouterr().err
    assert "future.jsonl:1" in err and "schema version 2.0" in err


def test_a_run_on_a_busy_machine_is_flagged(base_and_new, tmp_path, capsys):
    base, new = base_and_new
    lines = [json.loads(line) for line in new.read_text().splitlines()]
    lines[0]["loadavg"] = [64.0, 64.0, 64.0]
    busy = tmp_path / "busy.jsonl"
    busy.write_text("\n".join(json.dumps(r) for r in lines))
    main(["compare", str(base), str(busy)])
    assert "busy.jsonl started at load average 64.00" in capsys.readouterr().out


def test_escape_sequences_in_a_results_file_do_not_reach_the_terminal(measurement, results_file,
                                                                      capsys):
    name = "add\x1b]0;owned\x07\x1b[2J"
    base = results_file("base.jsonl", [measurement(name, "cpu", 0.010, 1)], "base")
    new = results_file("new.jsonl", [measurement(name, "cpu", 0.010, 2)], "new")
    main(["compare", str(base), str(new)])
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "add\\x1b]0;owned\\x07\\x1b[2J" in out


def _spread_measurement(measurement, workload, median, spread, rng, n=15):
    """A measurement of `n` samples lognormal around `median` with log-sd `spread`."""
    samples = (median * rng.lognormal(0.0, spread, n)).tolist()
    m = measurement(workload, "cpu", median, 0)
    return dataclasses.replace(m, samples=samples, stats=summarize(samples).to_dict())


SPREADS = (0.01, 0.02, 0.03, 0.05, 0.08, 0.1, 0.15, 0.2, 0.3, 0.02, 0.04)


def _pair(measurement, results_file, seed, *, slower=(), factor=1.2, drift=0.0, shift=1.0,
          busy=False, spreads=SPREADS):
    """Two runs of the workloads w0..w10 (`spreads`) from one sample distribution;
    NEW's workloads in `slower` take `factor` times longer; each NEW median also moves by
    a lognormal `drift` and all by `shift` (the machine's load); `busy` gives NEW a load
    average of 64."""
    rng = np.random.default_rng(seed)
    base, new = [], []
    for i, spread in enumerate(spreads):
        median = 1e-3 * (i + 1)
        moved = shift * math.exp(rng.normal(0.0, drift)) * (factor if i in slower else 1.0)
        base.append(_spread_measurement(measurement, f"w{i}", median, spread, rng))
        new.append(_spread_measurement(measurement, f"w{i}", median * moved, spread, rng))
    a = results_file(f"base{seed}.jsonl", base, "base")
    b = results_file(f"new{seed}.jsonl", new, "new")
    runs = [load_results(a), load_results(b)]
    for r in runs:
        r.run.loadavg = [0.0, 0.0, 0.0]
    if busy:
        runs[1].run.loadavg = [64.0, 64.0, 64.0]
    return runs


def _verdicts(rows):
    return {c.workload: c.verdict for c in rows if c.verdict != "unchanged"}


def test_two_runs_of_one_sample_distribution_show_no_change(measurement, results_file):
    for seed in range(12):
        base, new = _pair(measurement, results_file, seed)
        assert _verdicts(compare_runs(base, new)) == {}, seed


def test_run_to_run_drift_on_a_busy_machine_raises_no_alarm(measurement, results_file):
    # every NEW median moves by ~10% at random and all of them by 30%: the machine's load
    for seed in range(12):
        base, new = _pair(measurement, results_file, seed, drift=0.1, shift=1.3, busy=True)
        assert _verdicts(compare_runs(base, new)) == {}, seed


QUIET = (0.01, 0.02, 0.03, 0.01, 0.02, 0.03, 0.01, 0.02, 0.03, 0.02, 0.01)


def test_a_planted_20_percent_slowdown_is_caught(measurement, results_file):
    # repeats that spread 1-3%, as on a quiet machine
    for seed in range(6):
        base, new = _pair(measurement, results_file, seed, slower={0, 4, 9}, spreads=QUIET)
        assert _verdicts(compare_runs(base, new)) == dict.fromkeys(["w0", "w4", "w9"],
                                                                    "regressed")
        # a 20% faster workload likewise, and on a busy machine too
        base, new = _pair(measurement, results_file, seed, slower={3}, factor=1 / 1.2,
                          busy=True, spreads=QUIET)
        assert _verdicts(compare_runs(base, new)) == {"w3": "improved"}


def test_a_change_within_the_workloads_own_spread_is_unchanged(measurement, results_file):
    # w8 repeats with a 30% spread: 20% slower is inside its noise, and said so
    base, new = _pair(measurement, results_file, 0, slower={8})
    row = next(c for c in compare_runs(base, new) if c.workload == "w8")
    assert row.verdict == "unchanged" and row.noise > 0.2


def test_a_slowdown_of_every_workload_is_a_regression_unless_the_machine_was_busy(
        measurement, results_file):
    everything = set(range(len(SPREADS)))
    base, new = _pair(measurement, results_file, 3, slower=everything, factor=1.5)
    caught = _verdicts(compare_runs(base, new))
    # all whose repeats spread less than ~7% (3.96 x sqrt(2) x 7% = log 1.5), not the noisiest
    assert set(caught.values()) == {"regressed"} and len(caught) >= 6
    base, new = _pair(measurement, results_file, 3, slower=everything, factor=1.5, busy=True)
    assert _verdicts(compare_runs(base, new)) == {}


def test_run_noise_and_noise_limit(measurement):
    rng = np.random.default_rng(0)
    a = [_spread_measurement(measurement, f"w{i}", 1e-3, 0.01, rng) for i in range(6)]
    b = [dataclasses.replace(m, stats={**m.stats, "median": m.stats["median"] * f})
         for m, f in zip(a, (1.1, 1.2, 1.1, 1.2, 1.1, 1.2))]
    quiet = run_noise(list(zip(a, b)), busy=False)
    assert quiet.keys == 6 and quiet.shift == pytest.approx(1.15, rel=0.01)
    assert quiet.sigma == pytest.approx(1.4826 * math.log(1.2 / 1.15), rel=0.05)
    busy = run_noise(list(zip(a, b)), busy=True)
    assert busy.sigma == quiet.sigma and busy.busy and "busy run" in busy.describe()
    assert run_noise(list(zip(a, b))[:4], busy=False) is None
    assert isinstance(quiet, RunNoise) and "6 workloads" in busy.describe()
    m = a[0]
    q1, q3 = np.percentile(m.samples, [25, 75])
    # the spread of single repeats, not the standard error of their median
    sigma = (q3 - q1) / np.median(m.samples) / 1.349
    assert noise_limit(m, m, 0.1) == pytest.approx(math.expm1(3 * math.hypot(sigma, sigma, 0.1)))


def test_runs_with_another_cache_directory_compare(base_and_new, tmp_path, capsys):
    base, new = base_and_new
    lines = [json.loads(line) for line in new.read_text().splitlines()]
    lines[0]["env"]["HAL_CACHE_DIR"] = "/somewhere/else"
    lines[0]["fingerprint"] = "f" * 64  # as a hal that fingerprinted paths wrote it
    moved = tmp_path / "moved.jsonl"
    moved.write_text("\n".join(json.dumps(r) for r in lines))
    assert main(["compare", str(base), str(moved)]) == 1  # compared: a regression in it
    captured = capsys.readouterr()
    assert "different setups" not in captured.err + captured.out
    assert "1 regressed" in captured.out


def test_a_truncated_results_file_is_one_line_naming_file_and_line(measurement, results_file,
                                                                   tmp_path, capsys):
    path = results_file("cut.jsonl", [measurement("a", "cpu", 0.01, 1),
                                      measurement("b", "cpu", 0.01, 2)], completed=False)
    text = path.read_text()
    path.write_text(text[: len(text) - 40])  # the last record (the end) cut short
    assert main(["compare", str(path), str(path)]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == [f"warning: {path}:4: skipped a truncated or corrupt line "
                   + err[0].split("corrupt line ", 1)[1]]
    assert "UserWarning" not in err[0] and "(" in err[0]
    assert main(["report", str(path), "-o", str(tmp_path / "r")]) == 0
    assert [line for line in capsys.readouterr().err.splitlines() if line] == err


def _with_cpu(run, rng, wall_spread, cpu_spread, slower=(), factor=1.2):
    """`run` with each measurement's wall samples scattered by a lognormal `wall_spread` per
    workload (a loaded machine) and CPU samples beside them that spread `cpu_spread`;
    workloads in `slower` take `factor` times more CPU."""
    out = []
    for m in run.measurements:
        i = int(m.workload[1:])
        cpu = m.median * (factor if i in slower else 1.0)
        cpu_samples = (cpu * rng.lognormal(0.0, cpu_spread, 15)).tolist()
        wall = [s * rng.lognormal(0.0, wall_spread) for s in m.samples]
        out.append(dataclasses.replace(m, samples=wall, stats=summarize(wall).to_dict(),
                                       cpu_samples=cpu_samples))
    return dataclasses.replace(run, measurements=out)


def test_a_busy_pair_is_judged_on_cpu_time(measurement, results_file):
    # wall medians scatter by ~40% (a loaded machine); the CPU time holds still, but for
    # a 20% slower w3: only w3 regresses, judged and shown on CPU time
    for seed in range(4):
        base, new = _pair(measurement, results_file, seed, busy=True, spreads=QUIET)
        rng = np.random.default_rng(seed)
        base = _with_cpu(base, rng, 0.4, 0.02)
        new = _with_cpu(new, rng, 0.4, 0.02, slower={3})
        rows = compare_runs(base, new)
        assert _verdicts(rows) == {"w3": "regressed"}, seed
        w3 = next(c for c in rows if c.workload == "w3")
        assert w3.clock == "cpu" and "CPU time" in w3.note
        assert w3.new_median == pytest.approx(np.median(new.measurements[3].cpu_samples))
        # on a quiet pair the wall clock is the one judged
        quiet = dataclasses.replace(new, run=dataclasses.replace(new.run, loadavg=[0.0] * 3))
        assert {c.clock for c in compare_runs(base, quiet)} == {"wall"}


def test_few_workloads_widen_the_noise_bound():
    assert noise_factor() == noise_factor(1) == 3.0
    assert noise_factor(11) == pytest.approx(3.96, abs=0.01)
    assert noise_factor(11) > noise_factor(50) > noise_factor(5000) > 3.0
