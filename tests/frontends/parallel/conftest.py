"""`run_ranks`: run a Python snippet on P real MPI ranks under mpiexec, with a timeout.

    def test_x(run_ranks):
        out = run_ranks(2, '''
            from frontends.parallel import Mesh
            mesh = Mesh((2,), ("dp",))
            emit({"rank": mesh.rank})
        ''')
        assert [o["rank"] for o in out] == [0, 1]

The snippet runs with `emit(obj)` defined: each rank's emitted objects come back as JSON
(written to a file per rank), in rank order (a list per rank when a rank emits several).
A failed run (non-zero exit, timeout) fails the test with every rank's stderr.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
MPIEXEC = shutil.which("mpiexec", path=str(Path(sys.executable).parent)) or shutil.which(
    "mpiexec")
PRELUDE = '''
import json, sys
from mpi4py import MPI
_EMITTED = []
def emit(obj):
    _EMITTED.append(obj)
'''
POSTLUDE = '''
import os
with open(os.path.join(os.environ["HAL_RANKS_OUT"], f"{MPI.COMM_WORLD.Get_rank()}.json"),
          "w") as _f:
    json.dump(_EMITTED, _f)
'''


def mpiexec(ranks: int, args: list[str], timeout: float = 90, env: dict | None = None,
            ) -> subprocess.CompletedProcess:
    """mpiexec -n ranks args, all ranks killed after `timeout` seconds at the latest."""
    if MPIEXEC is None:
        pytest.skip("mpiexec not found (install mpich and mpi4py)")
    environment = {**os.environ, "MPIR_CVAR_CH4_PROGRESS_THROTTLE": "1",
                   "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT),
                   "HAL_DEVICE": "cpu",  # the ranks need not probe every backend at start-up
                   **(env or {})}
    cmd = ["timeout", "-k", "5", str(timeout), MPIEXEC, "-n", str(ranks), *args]
    return subprocess.run(cmd, cwd=ROOT, env=environment, capture_output=True, text=True,
                          timeout=timeout + 15)


@pytest.fixture
def run_ranks(tmp_path):
    """run_ranks(P, code, timeout=90, env=None, expect_failure=False): emitted objects per rank
    (or the CompletedProcess when expect_failure, for tests of how failures are reported)."""
    def run(ranks: int, code: str, timeout: float = 90, env: dict | None = None,
            expect_failure: bool = False):
        script, results = tmp_path / "rank_script.py", tmp_path / f"ranks{ranks}"
        results.mkdir(exist_ok=True)
        for old in results.glob("*.json"):
            old.unlink()
        script.write_text(PRELUDE + textwrap.dedent(code) + POSTLUDE)
        proc = mpiexec(ranks, [sys.executable, str(script)], timeout,
                       {**(env or {}), "HAL_RANKS_OUT": str(results)})
        if expect_failure:
            return proc
        assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
        found = {int(f.stem): json.loads(f.read_text()) for f in results.glob("*.json")}
        assert sorted(found) == list(range(ranks)), proc.stdout + proc.stderr
        return [found[r][0] if len(found[r]) == 1 else found[r] for r in range(ranks)]

    return run
