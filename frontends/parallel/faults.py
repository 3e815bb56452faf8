"""MPI fault cases, each run as a 2-rank job and timed from launch to the job's exit.

    python -m frontends.parallel.faults                 # every case, a markdown table
    python -m frontends.parallel.faults exit kill --cap 30

Each case makes rank 1 fail one way (an exception before its first collective, inside the
training loop or inside a pipeline stage, `hal train` options that differ, a shape
mismatch, a send that never comes, SIGKILL, a nonzero `sys.exit`) and says which message
in the job's output is the failing rank's reason. A row gives the job's exit status, the
wall seconds from launch to exit (`hung` when the job outlived `--cap` and was killed) and
whether the reason was shown. The ranks compute on the cpu
backend; the seconds include starting Python and importing hal on both ranks.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import NamedTuple

from hal import HalError

ROOT = Path(__file__).resolve().parents[2]
TINY = ["--batch", "4", "--seq", "16", "--dim", "32", "--heads", "2", "--layers", "1",
        "--sample", "0"]
MESH = '''
import os, signal, sys
import numpy as np
from mpi4py import MPI
from frontends.parallel import Mesh
rank = MPI.COMM_WORLD.Get_rank()
'''
LOOP = '''
from frontends.parallel.trainer import Trainer
with Trainer({"batch": 4, "seq": 16, "dim": 32, "heads": 2, "layers": 1}) as trainer:
    for step, (ids, targets) in enumerate(trainer.batches(5)):
        if rank == 1 and step == 2:
            raise RuntimeError("injected at step 3")
        trainer.step(ids, targets)
'''


class Case(NamedTuple):
    """A fault: the Python code of both ranks (or `hal train` options per rank) and a
    regular expression that matches the failing rank's reason on stderr."""

    title: str
    reason: str
    script: str = ""
    train: tuple[list[str], list[str]] = ([], [])


CASES = {
    "raise": Case("rank 1 raises before its first collective",
                  r"rank 1 of 2: uncaught ValueError at \S+:\d+: injected", MESH + '''
with Mesh((2,), ("dp",)) as mesh:
    if rank == 1:
        raise ValueError("injected")
    mesh.groups["dp"].all_reduce(np.ones(4))
'''),
    "loop": Case("rank 1 raises inside the training loop (step 3 of 5)",
                 r"rank 1 of 2: uncaught RuntimeError at \S+:\d+: injected at step 3",
                 MESH + LOOP),
    "steps": Case("hal train --steps 2 on rank 0, 3 on rank 1",
                  r"--steps 2 on rank 0, 3 on rank 1",
                  train=([*TINY, "--steps", "2"], [*TINY, "--steps", "3"])),
    "dtype": Case("hal train --dtype float128 on rank 1 (--timeout 10)",
                  r"--dtype 'float32' on rank 0, 'float128' on rank 1",
                  train=([*TINY, "--steps", "2", "--timeout", "10"],
                         [*TINY, "--steps", "2", "--timeout", "10", "--dtype", "float128"])),
    "shape": Case("all_reduce of shape (4,) on rank 0, (5,) on rank 1 (timeout=10)",
                  r"rank 0: all_reduce float64\(4\).*rank 1: all_reduce float64\(5\)", MESH + '''
with Mesh((2,), ("dp",), timeout=10) as mesh:
    mesh.groups["dp"].all_reduce(np.ones(4 + rank))
'''),
    "kill": Case("rank 1 killed by SIGKILL after a collective (mpiexec names its pid)",
                 r"PID \d+ RUNNING AT .*\n.*EXIT CODE: 9", MESH + '''
with Mesh((2,), ("dp",)) as mesh:
    mesh.groups["dp"].all_reduce(np.ones(4))
    if rank == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    mesh.groups["dp"].all_reduce(np.ones(4))
'''),
    "exit": Case("rank 1 sys.exit(3) inside the mesh's with block",
                 r"rank 1 of 2: sys\.exit\(3\) inside a Mesh block", MESH + '''
with Mesh((2,), ("dp",)) as mesh:
    mesh.groups["dp"].all_reduce(np.ones(4))
    if rank == 1:
        sys.exit(3)
    mesh.groups["dp"].all_reduce(np.ones(4))
'''),
    "stage": Case("pipeline stage 1 (rank 1) raises inside the training loop (step 3 of 5)",
                  r"rank 1 of 2: uncaught RuntimeError at \S+:\d+: injected in stage 1",
                  MESH + LOOP.replace('{"batch": 4', '{"pp": 2, "microbatches": 2, "batch": 4')
                  .replace("injected at step 3", "injected in stage 1")),
    "recv": Case("rank 1 never sends what rank 0 receives (timeout=10)",
                 r"rank 0 of 2: recv float64\(4\) from 1 tag=0 .* has not completed", MESH + '''
import hal
with Mesh((2,), ("pp",), timeout=10) as mesh:
    like = hal.zeros((4,), dtype=hal.float64)
    if rank == 0:  # rank 1 sends nothing
        hal.collectives.recv(like, group=mesh.group("pp"), peer=1)
'''),
    "exit-outside": Case("rank 1 sys.exit(3) with no with block (timeout=10)",
                         r"rank 0 of 2: all_reduce .* has not completed", MESH + '''
mesh = Mesh((2,), ("dp",), timeout=10)
mesh.groups["dp"].all_reduce(np.ones(4))
if rank == 1:
    sys.exit(3)
mesh.groups["dp"].all_reduce(np.ones(4))
'''),
}


class Outcome(NamedTuple):
    """How a fault case's job ended."""

    case: str
    status: int | None  # the job's exit status; None when it hung and was killed
    seconds: float  # launch to exit
    shown: bool  # the failing rank's reason was in the output
    output: str  # the job's stdout and stderr


def mpiexec() -> str | None:
    """The mpiexec beside this Python (the mpich wheel's), else the one on PATH, else None."""
    return shutil.which("mpiexec", path=str(Path(sys.executable).parent)) or \
        shutil.which("mpiexec")


def run_case(name: str, cap: float = 60.0) -> Outcome:
    """Run one case as a 2-rank job, killed after `cap` seconds at the latest."""
    case, launcher = CASES[name], mpiexec()
    if launcher is None:
        raise HalError("faults: mpiexec not found; pip install mpich mpi4py")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HAL_DEVICE": "cpu", "OMP_NUM_THREADS": "1",
           "MPIR_CVAR_CH4_PROGRESS_THROTTLE": "1"}
    with tempfile.TemporaryDirectory() as tmp:
        if case.script:
            script = Path(tmp) / f"fault_{name}.py"
            script.write_text(textwrap.dedent(case.script))
            command = [launcher, "-n", "2", sys.executable, str(script)]
        else:
            train = [sys.executable, "-m", "frontends.parallel.train"]
            first, second = case.train
            command = [launcher, "-n", "1", *train, *first, ":", "-n", "1", *train, *second]
        start = time.perf_counter()
        proc = subprocess.run(["timeout", "-k", "5", str(cap), *command], cwd=tmp, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        seconds = time.perf_counter() - start
    hung = proc.returncode in (124, 137)
    return Outcome(name, None if hung else proc.returncode, seconds,
                   re.search(case.reason, proc.stdout) is not None, proc.stdout)


def table(outcomes: list[Outcome], cap: float) -> str:
    """The outcomes as a markdown table."""
    rows = ["| fault | exit status | seconds to abort | failing rank's reason shown |",
            "|---|---|---|---|"]
    for o in outcomes:
        seconds = f"hung (killed at {cap:g} s)" if o.status is None else f"{o.seconds:.1f}"
        rows.append(f"| {CASES[o.case].title} | {o.status if o.status is not None else '-'} "
                    f"| {seconds} | {'yes' if o.shown else 'no'} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    """Run the named cases (default all) one after another and print the table."""
    parser = argparse.ArgumentParser(prog="python -m frontends.parallel.faults",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("cases", nargs="*", metavar="CASE",
                        help=f"of {', '.join(CASES)} (default all)")
    parser.add_argument("--cap", type=float, default=60.0,
                        help="seconds after which a job counts as hung and is killed")
    parser.add_argument("--output", action="store_true",
                        help="print each job's output too (to stderr)")
    args = parser.parse_args(argv)
    unknown = [name for name in args.cases if name not in CASES]
    if unknown:
        parser.error(f"unknown case(s) {', '.join(unknown)}; the cases are {', '.join(CASES)}")
    outcomes = []
    for name in args.cases or CASES:
        outcome = run_case(name, args.cap)
        outcomes.append(outcome)
        if args.output:
            print(f"--- {name}\n{outcome.output}", file=sys.stderr)
    print(table(outcomes, args.cap))
    return 0 if all(o.status not in (None, 0) and o.shown for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
