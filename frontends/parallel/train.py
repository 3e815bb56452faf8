"""`hal train`: a small decoder-only transformer LM on the shipped text, over MPI.

    mpiexec -n 2 hal train --steps 200                     # dp = 2 (the default: dp = ranks)
    mpiexec -n 2 python -m frontends.parallel.train --tp 2 --dtype float64 --out run.json
    mpiexec -n 2 hal train --pp 2 --microbatches 4          # two pipeline stages, 1F1B
    mpiexec -n 2 hal train --device opencl:0                # each rank computes on PoCL
    python -m frontends.parallel.train --examples          # the two scripts side by side

The options are the keys of `trainer.DEFAULTS`; every rank trains (`trainer.train`), rank 0
prints and writes --out, and a rank that fails ends the whole job with the reason.
"""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from pathlib import Path

from hal import HalError

from .abort import abort_job
from .corpus import TrainConfigError
from .trainer import DEFAULTS, train
from .training_scripts import side_by_side


def register(subparsers) -> None:
    """Add `hal train` to the hal command line (the `hal.commands` entry point)."""
    parser = subparsers.add_parser("train", help="train a small transformer LM over MPI "
                                                 "(mpiexec -n P hal train ...; dp x pp x tp)")
    _options(parser)
    parser.set_defaults(func=run)


def main(argv: list[str] | None = None) -> int:
    """`python -m frontends.parallel.train`: parse the options and run."""
    parser = argparse.ArgumentParser(prog="python -m frontends.parallel.train",
                                     description=__doc__.split("\n")[0])
    _options(parser)
    return run(parser.parse_args(argv))


def run(args: argparse.Namespace) -> int:
    """Train as the options say, rank 0 printing and writing --out. A config that cannot
    run is reported once, by rank 0; any other failure by the rank it happens on. Either
    way the whole job is aborted (exit status 2, or 1 with a traceback), so no rank waits."""
    if args.examples:
        print(side_by_side())
        return 0
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    config = {k: v for k, v in vars(args).items() if k in DEFAULTS}
    try:
        result = train(config)
    except TrainConfigError as exc:
        if comm.Get_rank() != 0:
            comm.Barrier()  # rank 0, which found the same, reports it and aborts the job
        _abort(comm, str(exc), 2, everywhere=True)
    except HalError as exc:
        _abort(comm, f"{type(exc).__name__}: {exc}", 2)
    except Exception:
        _abort(comm, traceback.format_exc().rstrip(), 1)
    if args.out and comm.Get_rank() == 0:
        Path(args.out).write_text(json.dumps(result, indent=1))
    return 0


def _abort(comm, message: str, code: int, everywhere: bool = False) -> None:
    """Print why this rank (or, `everywhere`, every rank) fails, then end every rank."""
    where = "" if everywhere or comm.Get_size() == 1 else \
        f"rank {comm.Get_rank()} of {comm.Get_size()}: "
    abort_job(f"hal train: {where}{message}", code)


def _options(parser: argparse.ArgumentParser) -> None:
    d = DEFAULTS
    add = parser.add_argument
    add("--dp", type=int, default=d["dp"], help="data-parallel ranks (default: ranks / tp)")
    add("--tp", type=int, default=d["tp"], help="tensor-parallel ranks (default 1)")
    add("--pp", type=int, default=d["pp"], help="pipeline stages (default 1)")
    add("--sp", action="store_true",
        help="sequence parallel: the activations between tp-split layers sharded along the "
             "sequence (needs --tp 2 or more)")
    add("--overlap", action="store_true",
        help="issue the dp gradient buckets during the backward pass, piece by piece (each "
             "piece's forward and backward compiled graphs; needs --dp 2 or more and --zero "
             "0 or 1)")
    add("--microbatches", type=int, default=d["microbatches"],
        help="microbatches per step with --pp (default: one per stage)")
    add("--schedule", choices=("1f1b", "gpipe"), default=d["schedule"],
        help="pipeline schedule (default 1f1b)")
    add("--device", default=d["device"],
        help="the device each rank computes on: NAME:INDEX, or a backend NAME alone for one "
             "device per rank on the node (cuda: rank i on cuda:i); default hal's default "
             "device (HAL_DEVICE); collectives are staged through host memory")
    add("--steps", type=int, default=d["steps"])
    add("--batch", type=int, default=d["batch"], help="windows per step, over all dp ranks")
    add("--seq", type=int, default=d["seq"], help="bytes per window")
    add("--dim", type=int, default=d["dim"])
    add("--layers", type=int, default=d["layers"])
    add("--heads", type=int, default=d["heads"])
    add("--lr", type=float, default=d["lr"], help="peak learning rate")
    add("--optimizer", choices=("adamw", "sgd"), default=d["optimizer"])
    add("--zero", type=int, choices=(0, 1, 2), default=d["zero"],
        help="ZeRO stage over dp (1: sharded optimizer state, 2: and gradients)")
    add("--bucket-mb", dest="bucket_mb", type=float, default=d["bucket_mb"],
        help="gradient bucket size in MiB (0: one collective per tensor)")
    add("--seed", type=int, default=d["seed"])
    add("--dtype", default=d["dtype"])
    add("--eager", action="store_true", help="run the step op by op instead of hal.jit")
    add("--debug", action=argparse.BooleanOptionalAction, default=d["debug"],
        help="compare every collective's op, shape and dtype across the ranks first "
             "(default on, unless HAL_PARALLEL_DEBUG=0; --no-debug for speed)")
    add("--timeout", type=float, default=d["timeout"],
        help="abort the job when a collective takes longer than this (seconds)")
    add("--log-every", dest="log_every", type=int, default=d["log_every"])
    add("--sample", type=int, default=d["sample"], help="bytes to generate at the end")
    add("--prompt", default=d["prompt"])
    add("--out", help="write the results as JSON to this file")
    add("--examples", action="store_true",
        help="print the single-device and parallel scripts side by side and exit")


if __name__ == "__main__":
    sys.exit(main())
