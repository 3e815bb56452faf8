"""ci/main's terminal: one line per phase with its time, the kit's example count and the
bench's samples (3 and --quick, or the whole kit's 20 and full samples with --full), the
kernel caches under HAL_CACHE_DIR, and `hal bench` last. Run over stub `python` and `hal`
commands in a copy of ci/, so nothing is installed or measured."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

HAL_STUB = """#!/usr/bin/env bash
echo "hal $*" >> "$HAL_CALLS"
echo "$NUMBA_CACHE_DIR $POCL_CACHE_DIR" > "$HAL_CALLS.caches"
if [ "$1" = conformance ]; then
    while [ "$#" -gt 0 ]; do
        [ "$1" = --out ] && mkdir -p "$(dirname "$2")" && echo [] > "$2"
        shift
    done
fi
echo "output of hal"
"""


@pytest.fixture
def checkout(tmp_path):
    """A copy of ci/ beside the two pyproject files, with a .venv of stubs that is current."""
    shutil.copytree(ROOT / "ci", tmp_path / "ci")
    (tmp_path / "examples" / "numba-backend").mkdir(parents=True)
    for name in ("pyproject.toml", "examples/numba-backend/pyproject.toml"):
        shutil.copy(ROOT / name, tmp_path / name)
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python").write_text("#!/usr/bin/env bash\nexit 0\n")
    (bin_dir / "hal").write_text(HAL_STUB)
    for stub in bin_dir.iterdir():
        stub.chmod(0o755)
    want = hashlib.sha256(b"".join(
        (tmp_path / n).read_bytes()
        for n in ("pyproject.toml", "examples/numba-backend/pyproject.toml"))).hexdigest()
    (tmp_path / ".venv" / ".hal-installed").write_text(want + "\n")
    return tmp_path


def _main(checkout: Path, *args: str, **env: str) -> tuple[list[str], list[str]]:
    calls = checkout / "calls.log"
    run = subprocess.run(
        ["bash", str(checkout / "ci" / "main"), *args], capture_output=True, text=True,
        timeout=60, env={**os.environ, "HAL_CALLS": str(calls),
                         "HAL_CACHE_DIR": str(checkout / "cache"), **env})
    assert run.returncode == 0, run.stderr
    seconds = re.compile(r"(?<= )\d+ s\b")  # the stubs take 0 s, a loaded machine 1
    out = [seconds.sub("N s", line) for line in run.stdout.splitlines()]
    return out, calls.read_text().splitlines()


def test_one_line_per_phase_then_the_bench(checkout):
    out, calls = _main(checkout)
    phases = [line.split()[1] for line in out if line.startswith("[main] ")]
    assert phases == ["set-up", "devices", "conformance", "tune", "bench:", "done"]
    assert "[main] conformance  N s  (3 example(s) a cell; --full: 20)" in out
    assert out[-1] == "[main] done in N s, exit status 0"
    assert [c.split()[1] for c in calls] == ["devices", "conformance", "tune", "bench"]
    assert "--examples 3 " in calls[1]
    assert calls[3].startswith("hal bench --conformance ") and "--suite seed" in calls[3]
    assert calls[3].endswith(" --quick")
    cache = checkout / "cache"  # every kernel cache under HAL_CACHE_DIR
    caches = (checkout / "calls.log.caches").read_text().split()
    assert caches == [str(cache / "numba"), str(cache / "pocl")]


def test_tuning_is_skipped_once_a_job_has_tuned(checkout):
    log = checkout / "cache" / "tvm" / "llvm-x" / "tuning" / "runs.jsonl"
    log.parent.mkdir(parents=True)
    log.write_text("{}\n")
    out, calls = _main(checkout)
    assert "[main] tune         N s  (tuned by an earlier job; `hal tune` tunes further)" in out
    assert [c.split()[1] for c in calls] == ["devices", "conformance", "bench"]


def test_full_runs_the_whole_kit_and_arguments_go_to_the_bench(checkout):
    out, calls = _main(checkout, "--full", "--suite", "ops")
    assert "--examples 20 " in calls[1] and "[main] conformance  N s  (20 example(s) a cell)" in out
    assert [c.split()[1] for c in calls] == ["devices", "conformance", "bench"]
    assert calls[2].endswith("--suite ops")
    _, calls = _main(checkout, "--full")
    assert "--examples 20 " in calls[-3] and "--suite parallel" in calls[-1]
    assert "--quick" not in calls[-1]
