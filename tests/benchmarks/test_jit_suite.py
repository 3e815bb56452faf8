"""The jit suite at tiny sizes on cpu: references, eager against jit, peers or their skips."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import hal
from benchmarks.suites import jit
from benchmarks.timing import TimingOptions, measure, normwise_error
from benchmarks.workload import NotMeasuredHere, suite_workloads
from frontends.autograd import kth_derivative
from frontends.science import peers
from tests.hal.test_capture import RecordingBackend

TINY = {
    "kdv_kt": lambda: jit.kdv_case(steps=4),
    "navier_stokes": lambda: jit.ns_case(n=16, steps=2),
    "taylor": lambda: jit.taylor_case(3, n=64),
    "transformer_block": lambda: jit.transformer_case(batch=2, tokens=8, width=16, heads=2),
    "fft_pipeline": lambda: jit.fft_case(batch=3, n=32),
}
ONE_CALL = TimingOptions(warmup=0, min_samples=1, max_samples=1, sample_time=0.0, budget=0.0)
AGREE = {"float32": 1e-5, "complex64": 1e-5, "float64": 1e-12, "complex128": 1e-12}


def _workload(case: jit.JitCase, label: str):
    (found,) = [w for w in case.workloads() if w.name == f"{case.name}[{label}]"]
    return found


def _checked(workload, dtype: str, device="cpu") -> np.ndarray:
    """The workload's output, asserted within its tolerance of its reference."""
    inputs = workload.build(np.dtype(dtype)).inputs
    out = np.asarray(workload.run(*[hal.asarray(a, device=device) for a in inputs]).numpy())
    wide = [a.astype(np.complex128 if a.dtype.kind == "c" else np.float64) for a in inputs]
    error = normwise_error(out, np.asarray(workload.reference(*wide)))
    assert error <= workload.tolerance(dtype), (workload.name, dtype, error)
    return out


@pytest.mark.parametrize("name", TINY)
def test_eager_and_jit_match_the_reference_and_each_other(name):
    case = TINY[name]()
    eager, jitted = _workload(case, "eager"), _workload(case, "jit")
    assert eager.params["mode"] == "eager" and jitted.params["mode"] == "jit"
    for dtype in case.dtypes:
        want = _checked(eager, dtype)
        got = _checked(jitted, dtype)
        assert normwise_error(got, want) <= AGREE[dtype], (name, dtype)
        np.testing.assert_array_equal(_checked(jitted, dtype), got)  # a replay, same answer


@pytest.mark.parametrize("name", TINY)
def test_numpy_peer_matches_the_reference(name):
    case = TINY[name]()
    peer = _workload(case, "numpy")
    assert peer.params["mode"] == "numpy" and peer.params["peer"].startswith("numpy ")
    for dtype in case.dtypes:
        _checked(peer, dtype)


@pytest.mark.parametrize("k", [1, 5, 16])
def test_numpy_taylor_mode_against_the_hermite_closed_form(k):
    x = kth_derivative.points(50)
    exact = kth_derivative.hermite_derivative(x, k)
    assert normwise_error(jit.taylor_numpy(x, k), exact) < 1e-13


def test_jax_peer_matches_the_reference_or_skips_with_the_reason():
    peer = _workload(TINY["fft_pipeline"](), "jax")
    assert peer.params["mode"] == "jax.jit"
    if importlib.util.find_spec("jax") is None:
        with pytest.raises(peers.PeerUnavailable, match="peer jax is not importable"):
            _checked(peer, "complex128")
    else:
        _checked(peer, "complex128")


@pytest.mark.skipif(importlib.util.find_spec("torch") is not None, reason="torch is installed")
@pytest.mark.parametrize("name", TINY)
def test_torch_peer_skips_with_the_reason_when_torch_is_absent(name):
    case = TINY[name]()
    peer = _workload(case, "torch")
    assert peer.params["mode"] == "torch.compile" and "unavailable" in peer.params["peer"]
    with pytest.raises(peers.PeerUnavailable, match="peer torch is not importable"):
        _checked(peer, case.dtypes[0])


def test_peers_run_where_the_device_under_test_is_of_their_kind(null, monkeypatch):
    peer = _workload(TINY["fft_pipeline"](), "numpy")
    _checked(peer, "complex128", device=null)  # null's memory is the host's
    monkeypatch.setattr(peers, "device_kinds", lambda device: ("fakegpu",))
    with pytest.raises(peers.PeerNotHere, match="numpy runs on cpu devices; null:0 is fakegpu"):
        _checked(peer, "complex128", device=null)


def test_the_suite_lists_every_case_eager_jitted_and_in_each_peer():
    names = {w.name for w in suite_workloads("jit")}
    for case in TINY:
        assert {f"{case}[{label}]" for label in ("eager", "jit", *jit.PEERS)} <= names
    assert {"kdv_kt[cupy]", "navier_stokes[cupy]"} <= {w.name for w in suite_workloads("seed")}
    orders = {w.params["order"] for w in suite_workloads("jit") if w.name == "taylor[jit]"}
    assert orders == {10, 16}


def test_the_chain_in_hal_and_numpy_matches_its_reference():
    case = jit.chain_case(ops=7, size=5)
    runs = {w.name: w for w in jit.chain_workloads(case)}
    assert set(runs) == {"chain[eager]", "chain[jit]", "chain[numpy]", "chain[numpy-out]"}
    assert runs["chain[numpy-out]"].params["mode"] == "numpy into out="
    outputs = [_checked(w, "float64") for w in runs.values()]
    for out in outputs[1:]:
        np.testing.assert_array_equal(out, outputs[0])
    assert runs["chain[jit]"].build(np.dtype("float64")).items == 7  # a node per op


def test_the_compile_subjects_time_their_first_call_on_their_backend_only(cpu):
    found = {w.name: w for w in jit.compile_workloads()}
    assert set(found) == {"kdv_step[jit]", "small_fused[jit]"}
    assert all(w.first_call for w in found.values())
    _checked(found["kdv_step[jit]"], "complex128")
    record = measure(found["small_fused[jit]"], "jit", "float32", cpu, ONE_CALL)
    assert record.status == "skipped" and "measured on tvm only, not cpu" in record.error


def test_the_trace_cache_is_checked_and_its_counts_recorded(cpu):
    record = measure(jit.cache_workload(), "jit", "float64", cpu, ONE_CALL)
    assert record.status == "ok" and record.check.passed
    assert record.facts["traces_after_each_call"] == "1 1 1 2 2"


def test_kdv_uncaptured_is_measured_where_the_backend_captures():
    case = TINY["kdv_kt"]()
    uncaptured = _workload(case, jit.UNCAPTURED)
    assert uncaptured.params["mode"] == "jit-uncaptured"
    with pytest.raises(NotMeasuredHere, match="cpu does not, so \\[jit\\] is the same"):
        _checked(uncaptured, "float64")
    recording = RecordingBackend()
    device = recording.open()
    jitted = _workload(case, "jit")
    np.testing.assert_array_equal(_checked(uncaptured, "float64", device=device),
                                  _checked(jitted, "float64", device=device))
    assert len(recording.captures) == 1 and recording.replays > 0  # [jit] only was captured
