"""The autograd benchmark: its hal cases are correct, the suite measures them (time and
memory), its nested modes stop where they cannot be afforded, the peers agree."""

import numpy as np
import pytest

import hal
from benchmarks.footprint import measure_footprint
from benchmarks.suites import autograd
from benchmarks.timing import TimingOptions, measure
from frontends.autograd import kth_derivative as kth

TINY = TimingOptions(warmup=1, min_samples=3, max_samples=3, sample_time=0.0, budget=0.0)


def test_hal_cases_match_their_reference():
    cases = [autograd.hal_workload(mode, k, n=50) for mode in ("taylor", "reverse")
             for k in (1, 3)]
    assert {c.name for c in cases} == {"autograd-taylor", "autograd-reverse"}
    for c in cases:
        (x,) = c.build(np.dtype("float64")).inputs
        got = c.run(hal.asarray(x)).numpy()
        np.testing.assert_allclose(got, c.reference(x), rtol=1e-12, atol=1e-12)


def test_the_harness_times_a_case_and_a_fresh_process_measures_its_memory(cpu):
    for k in (1, 2):
        record = measure(autograd.hal_workload("taylor", k, n=100), "autograd", "float64",
                         cpu, TINY)
        assert record.status == "ok" and record.median > 0 and record.check.max_error < 1e-12
    (first,) = [w for w in autograd.workloads()
                if w.name == "autograd-taylor" and w.params["order"] == 1]
    assert first.footprint
    figures = measure_footprint("autograd", first, "float64", "cpu:0")
    assert figures["footprint_mib"] >= 0 and figures["call_peak_mib"] >= 0


def test_nested_modes_stop_where_a_call_costs_seconds():
    orders = {}
    for w in autograd.workloads():
        orders.setdefault(w.name, set()).add(w.params["order"])
    assert orders["autograd-taylor"] == orders["autograd-jax-jet"] == set(kth.ORDERS)
    assert orders["autograd-reverse"] == orders["autograd-torch-nested"] == {1, 2, 4, 8}


def test_a_missing_peer_is_skipped_with_the_reason(cpu):
    import importlib.util

    if importlib.util.find_spec("jax") is not None:
        pytest.skip("jax is installed")
    record = measure(autograd.peer_workload("jax-jet", 2, n=64), "autograd", "float64", cpu,
                     TINY)
    assert record.status == "skipped" and "peer jax is not importable" in record.error


@pytest.mark.peers
@pytest.mark.parametrize("framework", ["jax-jet", "torch-nested"])
def test_peers_compute_the_same_derivatives(framework):
    pytest.importorskip(framework.split("-")[0])
    x = kth.points(64)
    call = {"jax-jet": kth.jax_kth, "torch-nested": kth.torch_kth}[framework](5)
    np.testing.assert_allclose(call(x), kth.hermite_derivative(x, 5), rtol=1e-10, atol=1e-10)
