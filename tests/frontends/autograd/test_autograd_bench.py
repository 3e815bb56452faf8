"""The autograd benchmark: its hal cases are correct, and the side-by-side runner reports."""

import numpy as np
import pytest

import hal
from frontends.autograd import kth_derivative as bench


def test_hal_cases_match_their_reference():
    cases = bench.workloads(orders=(1, 3), n=50)
    assert {c.name for c in cases} == {"autograd-taylor", "autograd-reverse"}
    for c in cases:
        (x,) = c.build(np.dtype("float64"))
        got = c.run(hal.asarray(x)).numpy()
        np.testing.assert_allclose(got, c.reference(x), rtol=1e-12, atol=1e-12)


def test_measure_runs_a_framework_in_a_child_and_tabulates():
    records = bench.measure(["hal-taylor"], (1, 2), n=100)
    assert [r["order"] for r in records] == [1, 2]
    for r in records:
        assert r["median_s"] > 0 and r["rel_error"] < 1e-12
        assert r["peak_tracemalloc_bytes"] > 0 and "peak_rss_bytes" in r
    text = bench.table(records)
    assert "Time per call" in text and "| 2 |" in text


def test_budget_skips_say_why():
    why = bench._predicted_over_budget({"order": 10, "median_s": 1.0}, 12, 5.0, 1e9)
    assert why and "time budget" in why


@pytest.mark.peers
@pytest.mark.parametrize("framework", ["jax-jet", "torch-nested"])
def test_peers_compute_the_same_derivatives(framework):
    pytest.importorskip(framework.split("-")[0])
    x = bench.points(64)
    call, _ = bench._prepare(framework, 5, x)
    np.testing.assert_allclose(call(), bench.hermite_derivative(x, 5), rtol=1e-10, atol=1e-10)
