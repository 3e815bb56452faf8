"""Domain decomposition under real `mpiexec -n P`: Jacobi bitwise, multigrid factor, Schwarz."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import hal
from frontends.science import distributed, multigrid

ROOT = Path(__file__).resolve().parents[3]
MPIEXEC = shutil.which("mpiexec", path=str(Path(sys.executable).parent)) or shutil.which(
    "mpiexec")


def _mpirun(ranks: int, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    if MPIEXEC is None:
        pytest.skip("mpiexec not found (install mpich and mpi4py)")
    env = {**os.environ, "MPIR_CVAR_CH4_PROGRESS_THROTTLE": "1", "OMP_NUM_THREADS": "1"}
    cmd = [MPIEXEC, "-n", str(ranks), sys.executable, "-m", "frontends.science.mpi_run", *args]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)


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
