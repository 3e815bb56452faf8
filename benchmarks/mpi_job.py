"""An MPI job driven through a pipe: how suites time distributed work from outside.

The job (`mpiexec -n P python -m MODULE ARGS...`) is a frontend's command server: it
builds its state once, then rank 0 reads one command per line on stdin, every rank runs
it, and rank 0 answers with one JSON line on stdout (`{"error": ...}` ends the job). A
workload's call is one command, so the harness times the ranks' work plus one pipe round
trip. The ranks' default device is the host's (`HAL_DEVICE=cpu`; a job may name another in
its own arguments) and they share the host's cores: hal gives each rank its share of
threads (`hal.settings.threads`). A job that refuses its work as a skip (rank 0 answers
`{"error": ..., "kind": "UnsupportedOp"}`, or UnsupportedDType, FallbackRefused) raises
that error here, so the harness records a skip, not a failure.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import shutil
import subprocess
import sys
from pathlib import Path

import hal

REPLY_TIMEOUT_S = 300.0
ROOT = Path(__file__).resolve().parents[1]


class MpiJobError(hal.HalError):
    """An MPI job that failed to start or to answer (its stderr is in the message)."""


def mpiexec() -> str:
    """The mpiexec beside this Python, else on PATH; UnsupportedOp (a skip) without one."""
    found = shutil.which("mpiexec", path=str(Path(sys.executable).parent)) \
        or shutil.which("mpiexec")
    if found is None:
        raise hal.UnsupportedOp("MPI jobs need mpiexec (pip install mpich mpi4py)")
    return found


SKIPS = {e.__name__: e for e in (hal.UnsupportedOp, hal.UnsupportedDType, hal.FallbackRefused)}


class MpiJob:
    """`mpiexec -n ranks python -m module *args`, driven command by command; `what` names
    it in errors; `env` adds variables to the ranks' environment. `info` is its first
    answer (sent once it is ready)."""

    def __init__(self, module: str, args: list[str], ranks: int, what: str,
                 env: dict[str, str] | None = None):
        env = {**os.environ, "HAL_DEVICE": "cpu", "OMP_NUM_THREADS": "1",
               # ROOT, then the caller's path: the ranks load the plugins the caller loads
               "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT),
                                                           os.environ.get("PYTHONPATH")))),
               "HAL_PARALLEL_DEBUG": "0",  # time the collectives, not the cross-rank check
               **(env or {})}
        if ranks > (os.cpu_count() or 1):
            env["MPIR_CVAR_CH4_PROGRESS_THROTTLE"] = "1"
        self.ranks, self.what = ranks, what
        self._failure: tuple[type[hal.HalError], str] | None = None  # what ended the job
        self._proc = subprocess.Popen(
            [mpiexec(), "-n", str(ranks), sys.executable, "-m", module, *args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=env, cwd=ROOT)
        atexit.register(self.close)
        self.info = self._reply()

    def request(self, command: str) -> dict:
        """Send one command; rank 0's JSON answer. A job that has failed raises its failure
        again (suites keep their jobs: the next workload on it is refused as the first)."""
        if self._failure is not None:
            raise self._failure[0](self._failure[1])
        try:
            self._proc.stdin.write(command + "\n")
            self._proc.stdin.flush()
        except BrokenPipeError:
            self._fail(MpiJobError, f"it ended (exit status {self._proc.wait()}) before "
                                    f"{command.split()[0]!r}")
        return self._reply()

    def _reply(self) -> dict:
        ready, _, _ = select.select([self._proc.stdout], [], [], REPLY_TIMEOUT_S)
        line = self._proc.stdout.readline() if ready else ""
        answer = _first_object(line)
        if answer is not None and answer.get("kind") in SKIPS:
            self._fail(SKIPS[answer["kind"]], answer["error"])
        if answer is None or "error" in answer:
            self._fail(MpiJobError, answer["error"] if answer else
                       f"an answer that is not JSON: {line[:200]!r}" if line.strip() else
                       "it ended without answering" if ready else
                       f"no answer in {REPLY_TIMEOUT_S:.0f} s")
        return answer

    def _fail(self, kind: type[hal.HalError], why: str) -> None:
        """End the job and raise `kind` saying why (with its stderr unless a skip); later
        requests raise the same."""
        self.close()
        if kind is MpiJobError:
            message = (f"{self.what}: the {self.ranks}-rank job failed ({why}); its stderr:\n"
                       f"{self._proc.stderr.read()[-2000:]}")
        else:
            message = f"{self.what}, {self.ranks} ranks: {why}"
        self._failure = (kind, message)
        raise kind(message)

    def close(self) -> None:
        """End the job (quit, then kill if it does not)."""
        if self._proc.poll() is None:
            try:
                self._proc.stdin.write("quit\n")
                self._proc.stdin.flush()
                self._proc.wait(timeout=20)
            except (OSError, subprocess.TimeoutExpired):
                self._proc.kill()


def _first_object(line: str) -> dict | None:
    """The first JSON object on a line of the job's stdout, else None. Ranks that fail
    together each print an answer, and the process manager may join them on one line."""
    try:
        answer, _ = json.JSONDecoder().raw_decode(line) if line.startswith("{") else (None, 0)
    except json.JSONDecodeError:
        return None
    return answer if isinstance(answer, dict) else None
