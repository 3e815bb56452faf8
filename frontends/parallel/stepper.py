"""Training steps and collectives on command: an MPI job another process drives and times.

    mpiexec -n 2 python -m frontends.parallel.stepper '{"tp": 2, "lr": 0}'

Every rank builds a `Trainer` for the JSON config (keys of `trainer.DEFAULTS`), then rank 0
reads commands from stdin, one per line, and every rank runs each:

    step                        one training step on the first batch of the seed
    all_reduce BYTES ALGORITHM [CALLS]
                                CALLS (default 1) all_reduces of a float32 buffer over all
                                ranks (ALGORITHM: one of cost.ALGORITHMS, or "chosen": by
                                the cost model, calibrated at the first "chosen", when
                                this job is busy alone, not while others start)
    stats                       collective seconds and calls so far, the cost model's table
                                (once calibrated)
    pipeline                    with pp > 1: each stage's measured bubble in the last step
                                (its idle share of the pipeline's step, from the first
                                stage's start to the last one's end, on the node's
                                monotonic clock: the time outside its forwards and
                                backwards), the formula (p-1)/(m+p-1), the bubbles its
                                stages' measured work predicts (`uneven_bubbles`), and the
                                sends and recvs each stage issued so far and the seconds
                                it spent waiting in its recvs (the handoffs)
    quit

Rank 0 answers each with one JSON line on stdout: {"loss": ...} (with lr 0 the parameters
never change, so every step's loss is the loss of the initial model, which a single
process can check), {"checksum": ..., "algorithm": ...} (the result's sum, whose exact
value the driver knows: rank r sends r + 1 in every element), or the stats. This is how
the `parallel` benchmark suite times a distributed step from the outside: a step costs
the ranks' work plus one pipe round trip (tens of microseconds). A failure is printed
as {"error": "rank R of N: Type: message", "kind": "Type"} by every rank it happens on
(the job's ranks share stdout: the driver reads the first) and ends the job. The config's "device"
places the ranks (`trainer.rank_device`).
"""

from __future__ import annotations

import json
import sys
import time
import traceback

import numpy as np

from . import cost
from .abort import abort_job
from .pipeline import bubble, uneven_bubbles
from .trainer import Trainer


def serve(config: dict, lines=sys.stdin, out=sys.stdout) -> None:
    """Build the trainer and run commands until "quit" or the end of `lines` (rank 0's)."""
    from mpi4py import MPI

    world = MPI.COMM_WORLD
    rank = world.Get_rank()
    with Trainer(config) as trainer:
        model = None
        ids, targets = next(trainer.batches(1))

        def answer(obj) -> None:
            if rank == 0:
                out.write(json.dumps(obj) + "\n")
                out.flush()

        answer({"ready": True, "ranks": world.Get_size(), "dp": trainer.dp, "pp": trainer.pp,
                "tp": trainer.tp})
        while True:
            command = _next_command(world, lines)
            if not command or command[0] == "quit":
                return
            if command[0] == "step":
                answer({"loss": trainer.step(ids, targets)})
            elif command[0] == "all_reduce":
                nbytes, algorithm = int(command[1]), command[2]
                calls = int(command[3]) if len(command) > 3 else 1
                if algorithm == "chosen" and model is None:
                    model = cost.calibrate(world, repeats=3)
                chosen = model.choose(nbytes) if algorithm == "chosen" else algorithm
                x = np.full(nbytes // 4, rank + 1, dtype=np.float32)
                for _ in range(calls):
                    result = cost.run(chosen, world, x)
                answer({"checksum": float(result.sum(dtype=np.float64)), "algorithm": chosen})
            elif command[0] == "stats":
                groups = trainer.mesh.groups.values()
                answer({"collective_seconds": trainer.collective_seconds(),
                        "calls": sum(sum(g.counts.values()) for g in groups),
                        "cost_model": model.table() if model else None})
            elif command[0] == "pipeline" and trainer.stage is not None:
                stage, pp = trainer.stage, trainer.mesh.groups["pp"]
                measured = trainer.mesh.comm("pp").gather(
                    (stage.started, stage.ended, stage.busy(), pp.counts["send"],
                     pp.counts["recv"], pp.seconds["recv"]), root=0) or []
                m = trainer.config["microbatches"]
                step = (max(row[1] for row in measured) - min(row[0] for row in measured)
                        if measured else 0.0)  # the ranks' clocks agree: one node
                answer({"bubble": [1.0 - row[2] / step for row in measured],
                        "step_s": step,
                        "formula": bubble(stage.count, m),
                        "uneven": uneven_bubbles([row[2] for row in measured], m)
                        if measured else [],
                        "sends": [row[3] for row in measured],
                        "recvs": [row[4] for row in measured],
                        "recv_s": [row[5] for row in measured]})
            else:
                answer({"error": f"unknown command {command[0]!r}"})


COMMAND_BYTES = 256
SPIN_S = 0.005  # polled without sleeping this long after each command


def _next_command(world, lines) -> list[str]:
    """Rank 0's next command line, split, on every rank. The ranks wait in a nonblocking
    broadcast: polling for SPIN_S, then sleeping longer the longer they wait, so a job
    between commands leaves the cores to others (a blocking MPICH broadcast spins) yet
    answers a quick succession of commands at once."""
    buffer = bytearray(COMMAND_BYTES)
    if world.Get_rank() == 0:
        text = lines.readline().encode()[:COMMAND_BYTES]
        buffer[:len(text)] = text
    request = world.Ibcast(buffer, root=0)
    spin_until, pause = time.perf_counter() + SPIN_S, 0.0
    while not request.Test():
        time.sleep(pause)
        if time.perf_counter() > spin_until:
            pause = min(1e-3, pause + 1e-5)
    return buffer.rstrip(b"\0").decode().split()


def main(argv: list[str] | None = None) -> int:
    """`python -m frontends.parallel.stepper CONFIG_JSON` under mpiexec."""
    from mpi4py import MPI

    argv = sys.argv[1:] if argv is None else argv
    try:
        serve(json.loads(argv[0]) if argv else {})
    except Exception as exc:  # every failure ends the whole job, said once per failing rank
        world = MPI.COMM_WORLD  # any failing rank answers: the first answer ends the driver's wait
        abort_job(traceback.format_exc().rstrip(), 1, answer=json.dumps({
            "error": f"rank {world.Get_rank()} of {world.Get_size()}: "
                     f"{type(exc).__name__}: {exc}",
            "kind": type(exc).__name__}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
