"""The "Science" section, built from hand-made science suite records."""

from __future__ import annotations

import dataclasses

import pytest

from benchmarks.schema.files import load_results
from benchmarks.schema.records import Placement
from reports.figures import science
from reports.report import build_report

KT = {"N": 256, "steps": 200, "dt": 1.5e-7, "full_steps": 39322}


def _ops(calls: dict[str, int]) -> Placement:
    return Placement({op: {"cpu:0:kernel": n} for op, n in calls.items()})


@pytest.fixture
def science_file(suite_measurement, results_file):
    def m(workload, median, params, *, placement=None, dtype="float64", **kw):
        found = suite_measurement("science", workload, "cpu", median, params=params,
                                  dtype=dtype, **kw)
        return dataclasses.replace(found, placement=placement)

    ms = [m("dispatch_floor[multiply]", 2e-6, {"shape": "8x8"}, items=1),
          m("dispatch_floor[fft]", 5e-6, {"shape": "8x8"}, items=1, dtype="complex128"),
          # 200 steps of 40 multiplies and 8 FFTs: 200 x (40 x 2 + 8 x 5) us = 24 ms fixed
          m("kdv_kt", 0.030, KT, items=200, max_error=4e-7,
            placement=_ops({"multiply": 8000, "rfftn": 800, "irfftn": 800})),
          m("kdv_kt", 0.100, KT, items=200,
            placement=_ops({"multiply": 8000, "rfftn": 800, "irfftn": 800}),
            device="cpu:0", dtype="float32"),
          m("kdv_kt[numpy]", 0.012, {**KT, "peer": "numpy 2.4"}, items=200),
          m("kdv_kt[jax]", 0.0, {**KT, "peer": "jax unavailable"}, items=200,
            status="skipped", error="PeerUnavailable: peer jax is not importable"),
          m("fft2", 0.010, {"shape": "1024x1024"}, items=1, dtype="complex64",
            metrics={"gflops": 10.5}, placement=_ops({"fftn": 1})),
          m("multigrid_v11", 0.030, {"N": 256}, items=1, facts={"factor": 0.0815},
            placement=_ops({"multiply": 300})),
          m("memory[taylor_green]", 0.3, {"N": 256, "nu": 0.01, "steps": 20}, items=20,
            max_error=8.9e-7, dtype="float32",
            metrics={"footprint_mib": 21.5, "call_peak_mib": 1.6}),
          m("mpi_jacobi", 0.40, {"ranks": 1, "n": 512, "iterations": 200}, items=200,
            facts={"sha256": "0123456789abcdef0123", "iterations": 200}),
          m("mpi_jacobi", 0.25, {"ranks": 2, "n": 512, "iterations": 200}, items=200,
            facts={"sha256": "0123456789abcdef0123", "iterations": 200})]
    return results_file("science.jsonl", ms)


def test_the_floor_prices_op_calls_into_a_bound(science_file):
    ms = load_results(science_file).measurements
    floors = science.dispatch_floors(ms)
    assert floors["cpu:0"]["multiply"] == pytest.approx(2e-6, rel=0.02)
    kdv = science.per_item_table(ms, science.KDV, floors, "per step", extrapolate=True)
    rows = {(r["who"], r["dtype"]): r for r in kdv.to_dict("records")}
    fast, slow = rows["hal cpu:0", "float64"], rows["hal cpu:0", "float32"]
    assert fast["bound"] == "dispatch" and slow["bound"] == "arithmetic"  # 24 ms of 30 / 100
    assert fast["op calls per step"] == "48" and fast["max-norm error"] == "4e-07"
    assert fast["full solve, extrapolated"].endswith("(39322 steps)")
    assert float(fast["full solve, extrapolated"].split()[0]) == pytest.approx(5.9, rel=0.03)
    assert rows["numpy 2.4 on cpu:0", "float64"]["bound"] == ""  # a peer reports no op calls
    assert ("jax unavailable", "float64") not in rows  # the skipped section says why


def test_rates_factors_memory_and_mpi_speedups(science_file, tmp_path):
    ms = load_results(science_file).measurements
    floors = science.dispatch_floors(ms)
    (fft,) = science.per_item_table(ms, ("fft", "fft2"), floors, "per transform",
                                    rate=True).to_dict("records")
    assert fft["GFLOP/s"] == "10.5" and fft["bound"] == "arithmetic"
    (mg,) = science.per_item_table(ms, ("multigrid_v11",), floors,
                                   "per cycle").to_dict("records")
    assert mg["factor"] == "0.082" and mg["bound"] == "arithmetic"  # 0.6 ms of 30
    (memory,) = science.memory_table(ms).to_dict("records")
    assert memory["error"] == "8.9e-07" and memory["footprint MiB"] == "21.5"
    mpi = {r["ranks"]: r for r in science.mpi_table(ms).to_dict("records")}
    assert float(mpi[2]["speedup"]) == pytest.approx(1.6, rel=0.03) and mpi[1]["speedup"] == ""
    assert mpi[2]["sha256"] == "0123456789ab" and mpi[2]["iterations"] == "200"
    md = build_report([science_file], tmp_path / "out")[3].read_text()
    assert "## Science" in md and "tiny multiply" in md
