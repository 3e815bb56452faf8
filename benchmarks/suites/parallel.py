"""Parallel suite: training steps of the byte-level LM over MPI ranks, and all_reduce algorithms.

The ranks are an MPI job (`mpiexec -n P python -m frontends.parallel.stepper CONFIG`)
started once per layout and driven through a pipe (`Ranks`): one call of a workload is
one command, so the harness times a distributed step from outside, including the pipe
round trip and the ranks' wake-up, 0.5-0.6 ms per command here (1% of a step). The ranks
compute on the host (the cpu backend), so the suite runs under the cpu backend and is
skipped with that reason on the others.

- `lm_step[layout]`: one step (loss, gradient, gradient sync, AdamW with lr 0, so the
  parameters stay as they are) of `train.LanguageModel` (dim 128, 2 layers, 4 heads,
  seq 64, batch 8, float32) under `hal.jit`; items are tokens, so items_per_s is tokens/s.
  Layouts: 1 rank; dp=2 (25 MiB buckets); dp=2 with bucketing off (one all_reduce per
  gradient); dp=2 with ZeRO-2; tp=2 (Megatron's split written as annotations). The output
  (the step's loss) is checked against the same model's loss on the whole batch in this
  process.
- `all_reduce[bytes, algorithm]` on 2 ranks: allreduce (MPI's), rs_ag (reduce-scatter then
  all-gather), hierarchical (within the node, then among node leaders), and chosen (what
  the cost model, calibrated in the job at its first "chosen" call, picks for that size);
  checked by the exact sum. A call is `calls` all_reduces (64 at 64 KiB, 4 at 4 MiB, 1 at
  32 MiB, so that a command takes ~10 ms or more and its overhead stays small); items are
  all_reduces.

Scaling efficiency (tokens/s at 2 ranks / (2 x at 1 rank)), the share of a step spent in
collectives, bucketing on/off and the cost model's choice against the best algorithm are
read from these rows by `python -m benchmarks.parallel_figures`, which also prints the
planner's projection for the 175B model.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import select
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

import hal
from benchmarks.workload import Case, Workload

MODEL = {"dim": 128, "layers": 2, "heads": 4, "seq": 64, "batch": 8, "dtype": "float32",
         "lr": 0.0, "sample": 0, "steps": 1000}
LAYOUTS = {
    "1 rank": {"dp": 1},
    "dp=2": {"dp": 2},
    "dp=2 buckets off": {"dp": 2, "bucket_mb": 0},
    "dp=2 zero=2": {"dp": 2, "zero": 2},
    "tp=2": {"dp": 1, "tp": 2},
}
SIZES = (64 * 2**10, 4 * 2**20, 32 * 2**20)  # bytes per rank
CALLS = {64 * 2**10: 64, 4 * 2**20: 4, 32 * 2**20: 1}  # all_reduces per command: >= ~10 ms
ALGORITHMS = ("allreduce", "rs_ag", "hierarchical", "chosen")
REPLY_TIMEOUT_S = 300.0
ROOT = Path(__file__).resolve().parents[2]


class RanksError(hal.HalError):
    """The MPI job of a layout failed to start or to answer (its stderr is in the message)."""


class Ranks:
    """An MPI job of `frontends.parallel.stepper` for one config, driven command by command."""

    def __init__(self, config: dict):
        mpiexec = shutil.which("mpiexec", path=str(Path(sys.executable).parent)) \
            or shutil.which("mpiexec")
        if mpiexec is None:
            raise hal.UnsupportedOp("the parallel suite needs mpiexec (pip install mpich)")
        ranks = config.get("dp", 1) * config.get("tp", 1)
        env = {**os.environ, "HAL_DEVICE": "cpu", "OMP_NUM_THREADS": "1",
               "PYTHONPATH": str(ROOT)}
        if ranks > (os.cpu_count() or 1):
            env["MPIR_CVAR_CH4_PROGRESS_THROTTLE"] = "1"
        self.ranks = ranks
        self._proc = subprocess.Popen(
            [mpiexec, "-n", str(ranks), sys.executable, "-m", "frontends.parallel.stepper",
             json.dumps(config)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
        atexit.register(self.close)
        self.info = self._reply()

    def request(self, command: str) -> dict:
        """Send one command; rank 0's JSON answer."""
        self._proc.stdin.write(command + "\n")
        self._proc.stdin.flush()
        return self._reply()

    def _reply(self) -> dict:
        ready, _, _ = select.select([self._proc.stdout], [], [], REPLY_TIMEOUT_S)
        line = self._proc.stdout.readline() if ready else ""
        answer = json.loads(line) if line.startswith("{") else None
        if answer is None or "error" in answer:
            self.close()
            why = answer["error"] if answer else f"no answer in {REPLY_TIMEOUT_S:.0f} s"
            raise RanksError(f"parallel suite: the {self.ranks}-rank job failed ({why}); "
                             f"its stderr:\n{self._proc.stderr.read()[-2000:]}")
        return answer

    def close(self) -> None:
        """End the job (quit, then kill if it does not)."""
        if self._proc.poll() is None:
            try:
                self._proc.stdin.write("quit\n")
                self._proc.stdin.flush()
                self._proc.wait(timeout=20)
            except (OSError, subprocess.TimeoutExpired):
                self._proc.kill()


@functools.cache
def ranks(layout: str) -> Ranks:
    """The running job of a layout (started on first use, ended at exit)."""
    return Ranks({**MODEL, **LAYOUTS[layout]})


@functools.cache
def single_loss() -> float:
    """The model's loss on the whole first batch, on one device in this process."""
    from frontends.parallel import LanguageModel, batches, cross_entropy

    model = LanguageModel(256, MODEL["dim"], MODEL["heads"], MODEL["layers"], MODEL["seq"],
                          dtype=hal.dtype(MODEL["dtype"]), device="cpu", seed=0)
    ids, targets = next(batches(1, MODEL["batch"], MODEL["seq"], device="cpu"))
    return float(cross_entropy(model(ids), targets).numpy())


def _on_cpu(device) -> None:
    """The ranks compute on the host: the suite is measured under the cpu backend only."""
    if device.backend.name != "cpu":
        raise hal.UnsupportedOp(f"the parallel suite's MPI ranks compute on the host; it is "
                                f"measured under the cpu backend, not {device.name}")


def _step(layout: str):
    def run(x: hal.Tensor) -> hal.Tensor:
        _on_cpu(x.device)
        return hal.asarray(np.float64(ranks(layout).request("step")["loss"]), device=x.device)

    return run


def _all_reduce(nbytes: int, algorithm: str):
    def run(x: hal.Tensor) -> hal.Tensor:
        _on_cpu(x.device)
        answer = ranks("dp=2").request(f"all_reduce {nbytes} {algorithm} {CALLS[nbytes]}")
        return hal.asarray(np.float64(answer["checksum"]), device=x.device)

    return run


def _case(items: float, bytes_: float | None = None):
    return lambda dtype: Case([np.zeros(1, np.float32)], items=items, bytes=bytes_)


def workloads() -> list[Workload]:
    """One step per layout; all_reduce per size and algorithm at 2 ranks."""
    tokens = MODEL["batch"] * MODEL["seq"]
    shape = {k: MODEL[k] for k in ("dim", "layers", "heads", "seq", "batch")}
    found = [Workload(
        "lm_step", {"layout": layout, **LAYOUTS[layout], **shape}, ["float32"],
        _case(tokens), _step(layout), lambda _x: np.float64(single_loss()),
        tolerance_scale=10.0)
        for layout in LAYOUTS]
    for nbytes in SIZES:
        expected = float(nbytes // 4 * 3)  # ranks 1 and 2 send 1 and 2 in every element
        for algorithm in ALGORITHMS:
            found.append(Workload(
                "all_reduce", {"bytes": nbytes, "algorithm": algorithm, "ranks": 2,
                               "calls": CALLS[nbytes]},
                ["float32"], _case(CALLS[nbytes], 2 * nbytes * CALLS[nbytes]),
                _all_reduce(nbytes, algorithm),
                functools.partial(lambda _x, e: np.float64(e), e=expected)))
    return found
