"""Domain decomposition under real `mpiexec -n P`: Jacobi bitwise, multigrid factor, Schwarz."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import hal
from frontends.science import distributed, multigrid

ROOT = Path(__file__).resolve().parents[3]
MPIEXEC = shutil.which("mpiexec", path=str(Path(sys.executable).parent)) or shutil.which(
    "mpiexec")


def _mpirun(ranks: int, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return _mpiexec(["-n", str(ranks), sys.executable, "-m", "frontends.science.mpi_run",
                     *args], timeout)


def _mpiexec(args: list[str], timeout: float) -> subprocess.CompletedProcess:
    """mpiexec with `args`, killed (every rank) by `timeout` seconds at the latest."""
    if MPIEXEC is None:
        pytest.skip("mpiexec not found (install mpich and mpi4py)")
    env = {**os.environ, "MPIR_CVAR_CH4_PROGRESS_THROTTLE": "1", "OMP_NUM_THREADS": "1"}
    cmd = ["timeout", "-k", "5", str(timeout), MPIEXEC, *args]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout + 10)


def _per_rank(*rank_args: list[str], timeout: float = 60) -> tuple[subprocess.CompletedProcess,
                                                                   float]:
    """mpi_run with its own arguments on each rank (MPMD); returns the run and its seconds."""
    args = []
    for own in rank_args:
        args += [":"] * bool(args) + ["-n", "1", sys.executable, "-m",
                                      "frontends.science.mpi_run", *own]
    start = time.perf_counter()
    proc = _mpiexec(args, timeout)
    return proc, time.perf_counter() - start


def _result(ranks: int, *args: str) -> dict:
    proc = _mpirun(ranks, *args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.mpi
def test_jacobi_is_bitwise_identical_for_any_rank_count():
    import hashlib

    level = multigrid.Level.serial(32)
    f = distributed.poisson_rhs(level)
    serial = distributed.jacobi(level, hal.zeros_like(f), f, 20).numpy()
    expected = hashlib.sha256(np.ascontiguousarray(serial).tobytes()).hexdigest()
    hashes = {p: _result(p, "jacobi", "--n", "32", "--iterations", "20")["sha256"]
              for p in (1, 2, 4)}
    assert set(hashes.values()) == {expected}


@pytest.mark.mpi
def test_distributed_multigrid_keeps_its_factor():
    serial, _ = multigrid.convergence_factor(multigrid.Level.serial(64), 8)
    for p in (2, 4):
        factor = _result(p, "multigrid", "--n", "64")["factor"]
        assert factor <= 0.12
        assert factor == pytest.approx(serial, rel=1e-6)


@pytest.mark.mpi
def test_schwarz_pcg_iterations_grow_with_ranks():
    runs = {p: _result(p, "schwarz", "--n", "64") for p in (1, 2, 4)}
    iterations = [runs[p]["iterations"] for p in (1, 2, 4)]
    print(f"\nadditive-Schwarz PCG N=64 iterations for 1, 2, 4 ranks: {iterations}")
    assert iterations[0] == 1 and iterations[0] < iterations[1] < iterations[2]
    for r in runs.values():
        assert r["residual"] <= 1e-8 and r["max_error"] < 5e-4  # O(h^2) discretisation error


@pytest.mark.mpi
def test_size_not_divisible_across_ranks_is_refused():
    proc = _mpirun(4, "jacobi", "--n", "30")
    assert proc.returncode != 0
    assert "do not divide across 4 ranks" in proc.stderr


def test_partition_refuses_bad_splits_in_process():
    with pytest.raises(hal.ShapeError, match="do not divide across 3 ranks"):
        distributed.Partition(64, 3)
    with pytest.raises(hal.ShapeError, match="fewer than the 2 the halo exchange needs"):
        distributed.Partition(4, 4)
    part = distributed.Partition(64, 4, 3)
    assert (part.rows, part.row0) == (16, 48)


@pytest.mark.mpi
def test_ranks_given_different_arguments_are_refused_before_any_collective():
    proc, seconds = _per_rank(["jacobi", "--n", "32"], ["jacobi", "--n", "64"])
    assert proc.returncode == 2, proc.stderr
    assert "mpi_run: the ranks were given different arguments (n: 32 on rank(s) 0, 64 on " \
           "rank(s) 1)" in proc.stderr
    assert seconds < 30  # no rank hung in a halo exchange sized by the other's n


@pytest.mark.mpi
def test_a_rank_that_fails_aborts_the_whole_job_with_its_message():
    proc, seconds = _per_rank(["jacobi", "--n", "32"], ["jacobi", "--n", "32", "--device",
                                                          "nosuch:0"])
    assert proc.returncode == 2, proc.stderr
    assert "rank 1 of 2: BackendUnavailable: " in proc.stderr and "nosuch" in proc.stderr
    assert seconds < 30  # rank 0 did not wait for the rank that was gone


@pytest.mark.mpi
def test_a_bad_argument_on_one_rank_aborts_the_whole_job():
    proc, seconds = _per_rank(["jacobi", "--n", "32"], ["jacobi", "--n", "many"])
    assert proc.returncode == 2, proc.stderr
    assert "argument --n: invalid int value: 'many'" in proc.stderr
    assert "rank 1 of 2: bad arguments" in proc.stderr
    assert seconds < 30


@pytest.mark.mpi
def test_library_calls_with_different_sizes_or_dtypes_raise_on_every_rank(tmp_path):
    code = textwrap.dedent(f"""
        from mpi4py import MPI
        import hal
        from frontends.science import distributed
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        try:
            distributed.distributed_level(comm, 32 * (rank + 1), ["float64", "float32"][rank])
        except hal.HalError as e:
            open(f"{tmp_path}/rank{{rank}}.txt", "w").write(str(e))
    """)
    proc = _mpiexec(["-n", "2", sys.executable, "-c", code], timeout=60)
    assert proc.returncode == 0, proc.stderr
    expected = ("distributed_level: the ranks were given different arguments (dtype: "
                "'float64' on rank(s) 0, 'float32' on rank(s) 1; n: 32 on rank(s) 0, 64 on "
                "rank(s) 1); every rank must call it with the same ones")
    assert [(tmp_path / f"rank{r}.txt").read_text() for r in (0, 1)] == [expected] * 2
