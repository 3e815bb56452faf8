"""The science benchmark suite: its workloads check and time under the harness, peers skip,
MPI jobs answer from outside."""

from __future__ import annotations

import pytest

import hal
from benchmarks.suites import science
from benchmarks.timing import TimingOptions, measure
from benchmarks.workload import suite_workloads
from frontends.science import kdv

TINY = TimingOptions(warmup=1, min_samples=2, max_samples=2, sample_time=0.0, budget=0.0)


def _measure(workload, dtype, device="cpu"):
    return measure(workload, "science", dtype, hal.device(device), TINY)


def test_suite_declares_hal_and_peer_workloads():
    names = {w.name for w in suite_workloads("science")}
    assert {"fft", "fft2", "kdv_kt", "navier_stokes", "multigrid_v11"} <= names
    assert {"kdv_kt[numpy]", "navier_stokes[jax]", "fft2[pyfftw]"} <= names
    peer = next(w for w in suite_workloads("science") if w.name == "kdv_kt[numpy]")
    assert peer.params["peer"].startswith("numpy ")


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_small_hal_workloads_pass_their_checks(dtype):
    small = [*(w for w in science.kdv_workloads(steps=10) if dtype in w.dtypes),
             science.ns_workload(32, 2), science.multigrid_workload(32)]
    for w in small:
        record = _measure(w, dtype)
        assert record.status == "ok", (w.name, record.error)
        assert record.check.passed and record.samples


def test_numpy_peer_runs_the_same_algorithm_and_passes():
    for w in [*science.kdv_workloads(steps=10, name="numpy"),
              science.ns_workload(32, 2, "numpy"), science.fft_peer("fft", (64,), "numpy")]:
        dtype = w.dtypes[-1]
        record = _measure(w, dtype)
        assert record.status == "ok", (w.name, record.error)


def test_peers_run_on_host_memory_devices_and_skip_off_the_host_and_when_missing(monkeypatch):
    from frontends.science import peers

    record = _measure(science.fft_peer("fft", (64,), "numpy"), "complex128", "null")
    assert record.status == "ok" and record.facts["peer_device"] == "host CPU"
    monkeypatch.setattr(peers, "device_kinds", lambda device: ("fakegpu",))
    record = _measure(science.fft_peer("fft", (64,), "numpy"), "complex128", "null")
    assert record.status == "skipped"
    assert record.error == "PeerNotHere: peer numpy runs on cpu devices; null:0 is fakegpu"
    record = _measure(science.fft_peer("fft", (64,), "nosuchlib"), "complex128")
    assert record.status == "skipped" and "nosuchlib" in record.error


@pytest.mark.peers
@pytest.mark.parametrize("name", ["scipy", "pyfftw", "torch", "jax"])
def test_every_installed_peer_agrees_with_the_exact_kdv_solution(name):
    from frontends.science import kdv, peers

    try:
        peer = peers.load(name)
    except peers.PeerUnavailable as exc:
        pytest.skip(str(exc))
    problem = kdv.KASSAM_TREFETHEN.with_horizon(50 * kdv.KASSAM_TREFETHEN.dt)
    u = kdv.peer_runner(peer, problem)(problem.exact(0.0))
    assert kdv.relative_error(u, problem.exact(problem.t_end)) <= 1e-6


def test_the_floor_and_the_cpu_only_kdv_cases_pass_their_checks_and_skip_elsewhere():
    for w in [science.floor_workload("multiply"), science.floor_workload("fft")]:
        record = _measure(w, w.dtypes[0])
        assert record.status == "ok" and record.items == 1, record.error
    (large,) = science.kdv_workloads(5, None, kdv.large_n(512, 5), "kdv_large", ("float64",))
    assert large.params["N"] == 512 and _measure(large, "float64").status == "ok"
    names = {w.name: w for w in science.kdv_more_workloads()}
    assert set(names) == {"kdv_large", "kdv_soft"}
    assert names["kdv_soft"].params["full_steps"] == kdv.SOFT_COLLISION.steps
    record = _measure(names["kdv_soft"], "float64", "null")
    assert record.status == "skipped" and "measured on cpu only, not null" in record.error


def test_multigrid_records_its_convergence_factor():
    record = _measure(science.multigrid_workload(32), "float64")
    assert record.status == "ok" and 0 < record.facts["factor"] <= 0.12


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_the_memory_cases_pass_their_checks(dtype):
    for w in [science.taylor_green_workload(n=32, steps=2),
              science.multigrid_memory_workload(n=32, cycles=2)]:
        record = _measure(w, dtype)
        assert record.status == "ok", (w.name, record.error)
    assert 0 < record.facts["factor"] < 1
    assert {w.name for w in science.memory_workloads()} == {
        "memory[kdv]", "memory[taylor_green]", "memory[multigrid]"}
    assert all(w.footprint for w in science.memory_workloads())


@pytest.mark.mpi
def test_the_mpi_cases_are_run_from_outside_and_checked(monkeypatch):
    monkeypatch.setattr(science, "MPI_CASES", {
        "jacobi": {"n": 32, "iterations": 20}, "multigrid": {"n": 32, "cycles": 4},
        "schwarz": {"n": 64}})
    try:
        for case in science.MPI_CASES:
            for ranks in (1, 2):
                record = _measure(science.mpi_workload(case, ranks), "float64")
                assert record.status == "ok" and record.check.passed, (case, record.error)
                assert record.facts and record.error is None
        assert record.facts["iterations"] > 1 and record.facts["max_error"] < 5e-4
    finally:
        for job in science._jobs.values():
            job.close()
        science._jobs.clear()


def test_planned_fftw_peer_passes_its_check():
    pytest.importorskip("pyfftw")
    for kind, shape in (("fft", (3, 16)), ("fft2", (16, 8))):
        workload = science.fft_plan_peer(kind, shape)
        record = _measure(workload, "complex64")
        assert record.status == "ok" and record.check.passed, record.error
        assert workload.params["peer"].startswith("pyfftw ")
