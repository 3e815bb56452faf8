"""A domain-decomposition case on every rank, under `mpiexec -n P`.

    mpiexec -n 2 python -m frontends.science.mpi_run jacobi --n 64 --iterations 50
    mpiexec -n 2 python -m frontends.science.mpi_run multigrid --n 128 --pre 1 --post 1
    mpiexec -n 4 python -m frontends.science.mpi_run schwarz --n 64

Rank 0 prints one JSON line: the case, ranks, size, seconds, and the case's figures
(jacobi: sha256 of the gathered field; multigrid: factor per V-cycle; schwarz: CG
iterations). A bad size is a message on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time

import numpy as np

import hal

from . import distributed, multigrid, schwarz


def _jacobi(comm, level, args) -> dict:
    f = distributed.poisson_rhs(level)
    start = time.perf_counter()
    u = distributed.jacobi(level, hal.zeros_like(f), f, args.iterations)
    seconds = time.perf_counter() - start
    whole = distributed.gather_rows(comm, u).numpy()
    return {"sha256": hashlib.sha256(whole.tobytes()).hexdigest(), "seconds": seconds,
            "iterations": args.iterations}


def _multigrid(comm, level, args) -> dict:
    start = time.perf_counter()
    factor, _ = multigrid.convergence_factor(level, args.cycles, args.pre, args.post,
                                             norm=distributed.global_norm(comm))
    return {"factor": factor, "seconds_per_cycle": (time.perf_counter() - start) / args.cycles}


def _schwarz(comm, level, args) -> dict:
    f = distributed.poisson_rhs(level)
    start = time.perf_counter()
    u, iterations, rel = schwarz.pcg(comm, level, f, args.tol)
    seconds = time.perf_counter() - start
    y = (np.arange(level.row0, level.row0 + level.rows) / level.n)[:, None]
    x = (np.arange(1, level.n) / level.n)[None, :]
    exact = np.sin(np.pi * x) * np.sin(np.pi * y)
    err = comm.allreduce(float(np.max(np.abs(u.numpy() - exact))), op=_max())
    return {"iterations": iterations, "residual": rel, "max_error": err, "seconds": seconds}


def _max():
    from mpi4py import MPI

    return MPI.MAX


CASES = {"jacobi": _jacobi, "multigrid": _multigrid, "schwarz": _schwarz}


def main(argv: list[str] | None = None) -> int:
    """Parse the case, run it on every rank, print rank 0's JSON line."""
    from mpi4py import MPI

    parser = argparse.ArgumentParser(prog="python -m frontends.science.mpi_run")
    parser.add_argument("case", choices=sorted(CASES))
    parser.add_argument("--n", type=int, default=64, help="grid intervals (power of two)")
    parser.add_argument("--dtype", default="float64")
    parser.add_argument("--device", default=None)
    parser.add_argument("--iterations", type=int, default=50, help="Jacobi sweeps")
    parser.add_argument("--cycles", type=int, default=8, help="multigrid V-cycles")
    parser.add_argument("--pre", type=int, default=1)
    parser.add_argument("--post", type=int, default=1)
    parser.add_argument("--tol", type=float, default=1e-8, help="CG relative residual")
    args = parser.parse_args(argv)
    comm = MPI.COMM_WORLD
    try:
        level = distributed.distributed_level(comm, args.n, args.dtype, args.device,
                                              hierarchy=args.case == "multigrid")
        result = CASES[args.case](comm, level, args)
    except hal.HalError as exc:
        print(f"rank {comm.Get_rank()}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    if comm.Get_rank() == 0:
        print(json.dumps({"case": args.case, "ranks": comm.Get_size(), "n": args.n,
                          "dtype": args.dtype, **result}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
