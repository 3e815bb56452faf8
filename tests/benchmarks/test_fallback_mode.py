"""`hal bench --fallback warn|allow`: workloads that need the CPU fallback are measured, their
fallback calls counted, the policy kept through a resume and shown in the report."""

import re
import warnings
from dataclasses import replace

import pytest
from rich.console import Console

import hal
from benchmarks.harness import run_bench
from benchmarks.plan import BenchError, Config, plan
from benchmarks.schema.environment import new_run
from benchmarks.schema.files import ResultWriter, read_results
from benchmarks.schema.records import Measurement
from benchmarks.suites import ops
from benchmarks.timing import TimingOptions, measure
from hal.cli import main
from reports.report import build_report

FAST = TimingOptions(warmup=0, min_samples=3, max_samples=3, sample_time=0.001, budget=0.0)
GEMM = ops.gemm(32, 8, 32)


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    """Peaks cached by these runs go to a temporary cache directory."""
    monkeypatch.setattr(hal.settings, "cache_dir", tmp_path / "cache")
    monkeypatch.setenv("HAL_CACHE_DIR", str(tmp_path / "cache"))


def test_allow_measures_on_the_fallback_and_counts_the_calls():
    m = measure(GEMM, "smoke", "float32", hal.device("null"), replace(FAST, fallback="allow"))
    assert m.status == "ok" and m.fallback_policy == "allow" and m.check.passed
    assert m.placement.fallbacks >= 1 and m.placement.fallback_ops() == ["matmul"]
    assert m.placement.bytes_moved > 0 and len(m.samples) == 3


def test_warn_measures_and_warns():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = measure(GEMM, "smoke", "float64", hal.device("null"), replace(FAST, fallback="warn"))
    assert m.status == "ok" and m.fallback_policy == "warn" and m.placement.fallbacks >= 1
    assert any(issubclass(w.category, hal.FallbackWarning) for w in caught)


def test_the_policy_is_planned_and_refused_when_unknown():
    assert Config(fallback="allow", rounds=2).timing().fallback == "allow"
    assert Config().timing().fallback == "error"
    with pytest.raises(BenchError, match=r"fallback policy 'never' is not one of error, warn"):
        plan(Config(suites=["smoke"], fallback="never"), ["null:0"])


def _write(path, measurements, completed=True, config=None):
    run = new_run("run", config=config)
    with ResultWriter(path) as w:
        w.write_run(run)
        for m in measurements:
            w.write(m)
        w.write_end(run.id, completed)
    return path


def test_the_report_shows_fallback_calls_and_marks_speedups(tmp_path):
    allow = replace(FAST, fallback="allow")
    ms = [
        measure(GEMM, "smoke", "float32", hal.device("cpu"), FAST),
        measure(GEMM, "smoke", "float32", hal.device("null"), allow),
    ]
    md = build_report([_write(tmp_path / "r.jsonl", ms)], tmp_path / "o")[3].read_text()
    calls = ms[1].placement.fallbacks
    call_word = "call" if calls == 1 else "calls"
    assert f"| ok ({calls} fallback {call_word}: matmul)" in md
    assert re.search(r"\| \d+\.\d\dx( \[.*\])? † \|", md)  # the speedup of null is marked
    coverage = md[md.index("## Op coverage") :]
    header, null = (
        [cell.strip() for cell in line.strip("|").split("|")]
        for line in coverage.splitlines()
        if line.startswith(("| backend", "| null"))
    )
    null = dict(zip(header, null, strict=True))
    assert null["fallback calls"] == str(calls) and null["fallback ops"] == "matmul"
    assert "refused the CPU fallback" not in coverage


def test_the_report_says_why_fallback_calls_are_zero(tmp_path):
    m = measure(GEMM, "smoke", "float32", hal.device("null"), FAST)
    assert m.status == "skipped"
    md = build_report([_write(tmp_path / "r.jsonl", [m])], tmp_path / "o")[3].read_text()
    assert "`hal bench` refused the CPU fallback" in md and "--fallback allow" in md


def test_a_resumed_run_keeps_its_policy(tmp_path):
    config = Config(suites=["smoke"], backends=["null"], dtypes=["float64"], fallback="allow")
    tasks = plan(config, ["null:0"])
    done = [
        Measurement(t.suite, t.workload.name, t.backend, t.device, t.dtype, t.workload.params)
        for t in tasks[1:]
    ]
    path = _write(tmp_path / "run.jsonl", done, completed=False, config=vars(config))
    outcome = run_bench(Config(), tmp_path, resume=str(path), console=Console(quiet=True))
    assert outcome.completed and outcome.measured == 1
    m = next(m for m in read_results(path).measurements if m.key == tasks[0].key)
    assert m.status == "ok" and m.fallback_policy == "allow" and m.placement.fallbacks >= 1


def test_the_cli_measures_with_fallbacks_and_reports_with_conformance(tmp_path, capsys):
    conformance = tmp_path / "conformance-1.json"
    conformance.write_text(
        '[{"backend": "null", "device": "null:0", "ok": true, "cells": '
        '[{"op": "add", "dtype": "float64", "status": "fallback", "ran": "fallback"}]}]'
    )
    out = tmp_path / "results"
    bench = ["bench", "--suite", "smoke", "--backend", "null", "--dtype", "float64", "--quick"]
    assert main([*bench, "--conformance", str(tmp_path / "gone.json"), "--out", str(out)]) == 2
    assert "no conformance file" in capsys.readouterr().err and not out.exists()
    args = [*bench, "--fallback", "allow", "--conformance", str(conformance), "--out", str(out)]
    assert main(args) == 0
    (path,) = out.glob("*.jsonl")
    res = read_results(path)
    assert res.run.config["fallback"] == "allow"
    assert {m.status for m in res.measurements} == {"ok"}
    assert all(m.placement.fallbacks >= 1 for m in res.measurements)
    md = (out / f"{res.run.id}-report" / "report-details.md").read_text()
    assert "## Conformance" in md and "conformance (conformance-1.json)" in md
