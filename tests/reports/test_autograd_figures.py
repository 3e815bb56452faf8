"""The "Autograd" section, built from hand-made autograd suite records."""

from __future__ import annotations

import pytest

from benchmarks.schema.files import load_results
from reports.figures import autograd
from reports.report import build_report


@pytest.fixture
def autograd_file(suite_measurement, results_file):
    def m(workload, k, median, *, peer=None, dtype="float64", footprint=None, **kw):
        params = {"order": k, "n": 10000, "function": "sin*exp(-x^2)"}
        if peer:
            params["peer"] = peer
        return suite_measurement("autograd", workload, "cpu", median, params=params,
                                 dtype=dtype, items=10000, max_error=3e-13,
                                 metrics={"footprint_mib": footprint} if footprint else {}, **kw)

    ms = [m("autograd-taylor", 10, 0.004, footprint=6.5),
          m("autograd-taylor", 10, 0.003, dtype="float32", footprint=3.2),
          m("autograd-reverse", 8, 0.2, footprint=120.0),
          m("autograd-taylor", 8, 0.003, footprint=5.0),
          m("autograd-jax-jet", 10, 0.0, peer="jax unavailable (not installed)",
            status="skipped", error="PeerUnavailable: peer jax is not importable")]
    return results_file("autograd.jsonl", ms)


def test_time_and_memory_per_order_side_by_side(autograd_file, tmp_path):
    ms = load_results(autograd_file).measurements
    time = autograd.side_by_side(ms, autograd._time_cell)
    assert list(time.columns) == ["k", "dtype", "hal reverse on cpu:0", "hal taylor on cpu:0",
                                  "jax-jet (jax unavailable (not installed))"]
    rows = {(r["k"], r["dtype"]): r for r in time.to_dict("records")}
    assert [key for key in rows] == [(8, "float64"), (10, "float64"), (10, "float32")]
    assert rows[10, "float64"]["hal taylor on cpu:0"].endswith(" ms (err 3e-13)")
    assert rows[10, "float64"]["jax-jet (jax unavailable (not installed))"] == "skipped"
    assert rows[10, "float64"]["hal reverse on cpu:0"] == ""
    memory = {(r["k"], r["dtype"]): r for r in
              autograd.side_by_side(ms, autograd._memory_cell).to_dict("records")}
    assert memory[8, "float64"]["hal reverse on cpu:0"] == "120"
    assert memory[10, "float32"]["hal taylor on cpu:0"] == "3.2"
    md = build_report([autograd_file], tmp_path / "out")[3].read_text()
    assert "## Autograd" in md and "Peak memory of a call (MiB)" in md
