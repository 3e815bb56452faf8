"""The "hal.jit" section, built from hand-made jit suite records."""

from __future__ import annotations

import pandas as pd
import pytest

from benchmarks.schema.files import load_results
from reports.figures import jit
from reports.report import build_report

KDV = {"N": 256, "steps": 200, "dt": 1.5e-7, "full_steps": 39322}


@pytest.fixture
def jit_file(suite_measurement, results_file):
    def m(workload, backend, median, **kw):
        return suite_measurement("jit", workload, backend, median, **kw)

    ms = [m("kdv_kt[eager]", "cpu", 0.020, params={**KDV, "mode": "eager"}, items=200),
          m("kdv_kt[jit]", "cpu", 0.005, params={**KDV, "mode": "jit"}, items=200,
            max_error=3e-7, seed=1),
          m("kdv_kt[eager]", "opencl", 0.090, params={**KDV, "mode": "eager"}, items=200),
          m("kdv_kt[jit]", "opencl", 0.030, params={**KDV, "mode": "jit"}, items=200),
          m("kdv_kt[jit-uncaptured]", "opencl", 0.060, params={**KDV, "mode": "jit-uncaptured"},
            items=200),
          m("kdv_kt[jit-uncaptured]", "cpu", 0.0, status="skipped", error="NotMeasuredHere",
            params={**KDV, "mode": "jit-uncaptured"}, items=200),
          m("kdv_kt[numpy]", "cpu", 0.010, items=200,
            params={**KDV, "mode": "numpy", "peer": "numpy 2.4"}),
          m("kdv_kt[jax]", "cpu", 0.0, items=200, status="skipped", error="PeerUnavailable",
            params={**KDV, "mode": "jax.jit", "peer": "jax unavailable"}),
          m("chain[eager]", "cpu", 0.0016, params={"ops": 200, "mode": "eager"}, items=200),
          m("chain[jit]", "cpu", 0.0004, params={"ops": 200, "mode": "jit"}, items=200),
          m("chain[numpy]", "cpu", 0.0002, items=200,
            params={"ops": 200, "mode": "numpy", "peer": "numpy 2.4"}),
          m("kdv_step[jit]", "cpu", 1e-4, params={"N": 256, "mode": "jit"}, items=1,
            dtype="complex128",
            metrics={"first_call_empty_cache_s": 3.0, "first_call_disk_cache_s": 2.0}),
          m("jit_cache", "cpu", 0.003, params={"shapes": "1000 1000 1000 2000 1000"},
            facts={"shapes": "(1000,) (1000,) (1000,) (2000,) (1000,)",
                   "traces_after_each_call": "1 1 1 2 2"})]
    return results_file("jit.jsonl", ms)


def _seconds(text: str) -> float:
    value, unit = text.split()
    return float(value) * {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}[unit]


def test_eager_against_jit_per_backend(jit_file):
    table = jit.eager_against_jit(load_results(jit_file).measurements)
    by = {(r["case"], r["backend"]): r for r in table.to_dict("records")}
    assert float(by["kdv_kt", "cpu"]["eager/jit"]) == pytest.approx(4.0, rel=0.02)
    assert float(by["kdv_kt", "opencl"]["eager/jit"]) == pytest.approx(3.0, rel=0.02)
    assert float(by["chain", "cpu"]["eager/jit"]) == pytest.approx(4.0, rel=0.02)
    assert ("kdv_step", "cpu") not in by  # no eager twin: the compile table has it
    assert float(by["kdv_kt", "opencl"]["uncaptured/jit"]) == pytest.approx(2.0, rel=0.02)
    assert pd.isna(by["kdv_kt", "cpu"]["hal.jit uncaptured"])  # skipped there: no column


def test_jit_against_the_peers_on_each_device(jit_file, suite_measurement):
    ms = load_results(jit_file).measurements
    table = jit.jit_against_peers(ms)
    assert set(table["device"]) == {"cpu:0"}  # no peer was placed on opencl:0 here
    kdv = table[table["case"] == "kdv_kt"].iloc[0]
    assert float(kdv["hal.jit/numpy"]) == pytest.approx(0.5, rel=0.02)
    assert kdv["jax.jit"] == "skipped" and kdv["hal.jit/jax.jit"] == ""
    chain = table[table["case"] == "chain"].iloc[0]
    assert float(chain["hal.jit/numpy"]) == pytest.approx(2.0, rel=0.02)
    on_pocl = suite_measurement("jit", "kdv_kt[numpy]", "opencl", 0.012, items=200,
                                params={**KDV, "mode": "numpy", "peer": "numpy 2.4"})
    table = jit.jit_against_peers([*ms, on_pocl])
    pocl = table[(table["case"] == "kdv_kt") & (table["device"] == "opencl:0")].iloc[0]
    assert float(pocl["hal.jit/numpy"]) == pytest.approx(2.5, rel=0.02)  # 30 ms / 12 ms
    cpu = table[(table["case"] == "kdv_kt") & (table["device"] == "cpu:0")].iloc[0]
    assert float(cpu["hal.jit/numpy"]) == pytest.approx(0.5, rel=0.02)  # its own device's


def test_kdv_per_step_and_the_full_solve_extrapolated(jit_file):
    table = jit.kdv_solve(load_results(jit_file).measurements)
    row = table[table["who"] == "hal jit on cpu:0"].iloc[0]
    assert _seconds(row["per step"]) == pytest.approx(25e-6, rel=0.02)
    extrapolated = row["full solve, extrapolated"]
    assert extrapolated.endswith(" (39322 steps)")
    assert _seconds(extrapolated.rsplit(" (")[0]) == pytest.approx(39322 * 25e-6, rel=0.02)
    assert row["max-norm error"] == "3e-07"
    assert set(table["who"]) == {"hal eager on cpu:0", "hal jit on cpu:0", "numpy 2.4",
                                 "hal eager on opencl:0", "hal jit on opencl:0",
                                 "hal jit-uncaptured on opencl:0", "jax unavailable"}


def test_replay_per_node_compile_times_and_the_cache(jit_file):
    ms = load_results(jit_file).measurements
    replay = {r["how"]: r for r in jit.replay_per_node(ms).to_dict("records")}
    assert _seconds(replay["hal.jit, per node"]["time"]) == pytest.approx(2e-6, rel=0.02)
    assert _seconds(replay["hal eager, per op"]["time"]) == pytest.approx(8e-6, rel=0.02)
    compile_ = jit.compile_times(ms).iloc[0]
    assert compile_["first call, empty cache"] == "3 s"
    assert compile_["first call, disk caches"] == "2 s"
    assert float(compile_["first call / replay"]) == pytest.approx(3e4, rel=0.02)
    (sentence,) = jit.cache_reuse(ms)
    assert "(1000,) (1000,) (1000,) (2000,) (1000,): 1 1 1 2 2" in sentence


def test_the_report_has_the_section(jit_file, tmp_path):
    md = build_report([jit_file], tmp_path / "out")[3].read_text()
    assert "## hal.jit" in md and "full solve, extrapolated" in md
    assert md.index("## Suite `jit`") < md.index("## hal.jit")
