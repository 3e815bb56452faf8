"""The seed suite: every claim has its workloads, unmeasurable ones say why, footprints."""

from __future__ import annotations

import numpy as np
import pytest

import hal
from benchmarks.claims import CLAIMS, claim
from benchmarks.footprint import measure_footprint
from benchmarks.suites import peak, seed, smoke
from benchmarks.timing import TimingOptions, measure
from benchmarks.workload import NotMeasuredHere

ROLES = {"candidate", "baseline", "peer candidate", "peer baseline", "single", "uncaptured"}


def _by_claim() -> dict[str, list]:
    found: dict[str, list] = {}
    for w in seed.workloads():
        found.setdefault(w.params["claim"], []).append(w)
    return found


def test_every_claim_has_a_candidate_and_known_roles():
    found = _by_claim()
    assert set(found) == {c.id for c in CLAIMS}
    for claim_id, ws in found.items():
        roles = [w.params["role"] for w in ws]
        assert set(roles) <= ROLES and "candidate" in roles, claim_id
        if claim(claim_id).metric != "lines" and claim_id != "days_175b":
            assert "baseline" in roles, claim_id
    peers = {w.params["peer"].split()[0] for w in found["complex_fft"] if "peer" in w.params}
    assert peers == set(seed.peers.fft_names()) >= {"numpy", "torch", "jax", "cupy", "pyvkfft"}
    assert all(w.footprint for w in found["pde_memory"])
    assert {w.dtypes[0] for w in found["parallel_fft"]} == {"complex64"}


def test_175b_is_skipped_with_the_projection():
    (w,) = _by_claim()["days_175b"]
    record = measure(w, "seed", "float32", hal.device("cpu"), TimingOptions.quick())
    assert record.status == "skipped"
    assert "thousand GPUs" in record.error and "projection (not a measurement)" in record.error
    assert "days ->" in record.error and "GPT-3 175B" in record.error


def test_parallel_fft_is_timed_per_transform_and_checked():
    (w,) = [w for w in _by_claim()["parallel_fft"] if w.params["role"] == "candidate"]
    record = measure(w, "seed", "complex64", hal.device("cpu"), TimingOptions.quick())
    assert record.status == "ok" and record.check.passed
    assert record.items == 1024 and record.metrics["items_per_s"] > 0


def test_kdv_full_solve_is_left_to_fast_backends():
    (w,) = [w for w in _by_claim()["pde_3rd_order"] if w.params["role"] == "candidate"]
    assert w.params["steps"] == 39322
    record = measure(w, "seed", "float64", hal.device("null"), TimingOptions.quick())
    assert record.status == "skipped" and "cpu, cuda only, not null" in record.error


def test_footprint_counts_the_call_output():
    """stream_scale writes a new 2^25-element float64 array: 256 MiB at the call's peak."""
    w = peak.stream("scale", 1 << 25)
    figures = measure_footprint("peak", w, "float64", "cpu:0")
    assert 250 <= figures["call_peak_mib"] <= 600
    assert figures["footprint_mib"] >= figures["call_peak_mib"] - 1


def test_footprint_of_an_unknown_workload_is_an_error():
    w = peak.stream("scale", 123)
    with pytest.raises(hal.HalError, match="has 0 workloads named stream_scale"):
        measure_footprint("peak", w, "float64", "cpu:0")


def test_footprint_follows_the_runs_fallback_policy():
    (w,) = [w for w in smoke.workloads() if w.name == "add"]  # null has no add kernel
    with pytest.raises(hal.HalError, match="FallbackRefused"):
        measure_footprint("smoke", w, "float32", "null:0")
    assert measure_footprint("smoke", w, "float32", "null:0", "allow")["footprint_mib"] >= 0


def test_the_uncaptured_kdv_solve_is_no_side_of_the_claim_and_runs_where_hal_jit_does():
    rows = {w.name: w for w in seed.pde_3rd_order()}
    assert rows["kdv_kt[jit-uncaptured]"].params["role"] == "uncaptured"
    x = hal.asarray(np.zeros(4), device="null")
    with pytest.raises(NotMeasuredHere, match="measured on cpu, cuda only"):
        rows["kdv_kt[jit-uncaptured]"].run(x)
