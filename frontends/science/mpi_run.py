"""A domain-decomposition case on every rank, under `mpiexec -n P`.

    mpiexec -n 2 python -m frontends.science.mpi_run jacobi --n 64 --iterations 50
    mpiexec -n 2 python -m frontends.science.mpi_run multigrid --n 128 --pre 1 --post 1
    mpiexec -n 4 python -m frontends.science.mpi_run schwarz --n 64
    mpiexec -n 2 python -m frontends.science.mpi_run jacobi --n 512 --serve

Rank 0 prints one JSON line: the case, ranks, size, and the case's figures (jacobi: the
sha256 and the sum of the gathered field; multigrid: the factor per V-cycle; schwarz: CG
iterations, the relative residual and the max error against the exact solution). With
`--serve` the job builds its level once, answers `{"ready": true, ...}`, then rank 0
reads commands on stdin, one per line: `run` (every rank runs the case again; rank 0
answers its JSON line) and `quit`. That is how the `science` benchmark suite times a case
from outside (`benchmarks.mpi_job`); nothing here keeps time. A rank that fails (a bad
size, a bad argument, arguments that differ from the other ranks') prints its message,
prefixed with its rank, and aborts the whole job with exit status 2 (1 for an unexpected
exception, with its traceback): the other ranks never wait on a rank that is gone.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
import traceback

import numpy as np

import hal

from . import distributed, multigrid, schwarz


def _jacobi(comm, level, args) -> dict:
    f = distributed.poisson_rhs(level)
    u = distributed.jacobi(level, hal.zeros_like(f), f, args.iterations)
    whole = distributed.gather_rows(comm, u).numpy()
    return {"sha256": hashlib.sha256(whole.tobytes()).hexdigest(), "sum": float(whole.sum()),
            "iterations": args.iterations}


def _multigrid(comm, level, args) -> dict:
    factor, _ = multigrid.convergence_factor(level, args.cycles, args.pre, args.post,
                                             norm=distributed.global_norm(comm))
    return {"factor": factor, "cycles": args.cycles}


def _schwarz(comm, level, args) -> dict:
    f = distributed.poisson_rhs(level)
    u, iterations, rel = schwarz.pcg(comm, level, f, args.tol)
    y = (np.arange(level.row0, level.row0 + level.rows) / level.n)[:, None]
    x = (np.arange(1, level.n) / level.n)[None, :]
    exact = np.sin(np.pi * x) * np.sin(np.pi * y)
    err = comm.allreduce(float(np.max(np.abs(u.numpy() - exact))), op=_max())
    return {"iterations": iterations, "residual": rel, "max_error": err}


def _max():
    from mpi4py import MPI

    return MPI.MAX


CASES = {"jacobi": _jacobi, "multigrid": _multigrid, "schwarz": _schwarz}


def main(argv: list[str] | None = None) -> int:
    """Parse the case, run it on every rank (once, or per `run` command with --serve) and
    print rank 0's JSON lines; a rank that fails aborts the job (`comm.Abort`) after
    printing why."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    try:
        args = _arguments(argv)
        distributed.same_on_every_rank(comm, "mpi_run", **{
            k: v for k, v in vars(args).items() if k != "device"})  # devices may differ
        level = distributed.distributed_level(comm, args.n, args.dtype, args.device,
                                              hierarchy=args.case == "multigrid")
        head = {"case": args.case, "ranks": comm.Get_size(), "n": args.n, "dtype": args.dtype}
        if not args.serve:
            _answer(comm, {**head, **CASES[args.case](comm, level, args)})
            return 0
        _answer(comm, {"ready": True, **head})
        while (command := _next_command(comm)) == "run":
            _answer(comm, {**head, **CASES[args.case](comm, level, args)})
        if command not in ("quit", ""):
            _abort(comm, f"unknown command {command!r}; the commands are run and quit", 2)
    except SystemExit as exc:  # argparse printed the message (or --help, code 0)
        if exc.code:
            _abort(comm, "bad arguments (see above)", 2)
        raise
    except hal.HalError as exc:
        _abort(comm, f"{type(exc).__name__}: {exc}", 2)
    except Exception:
        _abort(comm, traceback.format_exc().rstrip(), 1)
    return 0


def _answer(comm, result: dict) -> None:
    """Rank 0 prints one JSON line."""
    if comm.Get_rank() == 0:
        print(json.dumps(result), flush=True)


def _next_command(comm) -> str:
    """Rank 0's next line on stdin ("" at its end), on every rank. Rank 0 waits on its input;
    the others wait at a nonblocking barrier, polling it with pauses of up to a
    millisecond, so that a job between commands leaves the cores to other work."""
    line = sys.stdin.readline() if comm.Get_rank() == 0 else None
    arrived = comm.Ibarrier()
    pause = 0.0
    while not arrived.Test():
        time.sleep(pause)
        pause = min(1e-3, pause + 1e-5)
    return comm.bcast(line, root=0).strip()


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    """The parsed command line; counts out of range are argparse errors."""
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
    parser.add_argument("--serve", action="store_true",
                        help="build once, then run the case per `run` line on stdin")
    args = parser.parse_args(argv)
    if args.cycles < 1 or min(args.iterations, args.pre, args.post) < 0 or not args.tol > 0:
        parser.error("--cycles must be at least 1, --iterations, --pre and --post at least 0, "
                     "and --tol above 0")
    return args


def _abort(comm, message: str, code: int) -> None:
    """Print why this rank fails, then end every rank of the job (no rank waits on it)
    once the process manager has read the message (`abort_job`: an abort on a loaded
    machine lost it)."""
    from frontends.parallel.abort import abort_job

    abort_job(f"rank {comm.Get_rank()} of {comm.Get_size()}: {message}", code)


if __name__ == "__main__":
    sys.exit(main())
