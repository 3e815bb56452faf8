"""The science benchmark suite: its workloads check and time under the harness, peers skip."""

from __future__ import annotations

import pytest

import hal
from benchmarks.suites import science
from benchmarks.timing import TimingOptions, measure
from benchmarks.workload import suite_workloads

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


def test_peers_are_skipped_off_the_host_and_when_missing():
    record = _measure(science.fft_peer("fft", (64,), "numpy"), "complex128", "null")
    assert record.status == "skipped" and "measured under the cpu backend" in record.error
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


def test_bench_script_prints_a_table_of_real_figures(capsys):
    from frontends.science import bench

    bench.main(["--only", "mg", "--mg-sizes", "16", "--repeat", "1"])
    out = capsys.readouterr().out
    assert "### mg" in out and "V(1,1) N=16" in out and "hal cpu" in out
    assert "tiny_multiply_us" in out
