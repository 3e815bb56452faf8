"""Find the commit where one workload's time changed: `hal bench` at chosen commits.

`bench_at_commit` checks a commit out into a temporary git worktree, runs that commit's
own `hal bench` there on one suite and backend (the whole suite: older commits have no
workload filter) and returns the workload's median. `bisect` is a binary search over the
commits between a good and a bad one (`git rev-list --ancestry-path`): each probe is
called good or bad by which side of the geometric midpoint of the two ends' medians it
falls, so it needs no threshold of its own. It is written here rather than driven through
`git bisect run` so that every probe's median comes back with the answer and the
checkout the user works in is never touched.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.schema.files import read_results
from benchmarks.schema.records import ResultsError


class BisectError(Exception):
    """A bisection that cannot go on: the message names the commit and the cause."""


def _git(repo: Path, *args: str) -> str:
    """Output of a git command in `repo`; BisectError with git's message when it fails."""
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          timeout=120)
    if proc.returncode:
        raise BisectError(f"git {' '.join(args)} in {repo}: {proc.stderr.strip()}")
    return proc.stdout.strip()


@dataclass
class BenchRequest:
    """What to run at each commit: the workload (name, optional dtype) of one suite on one
    backend, with `--quick` or not, by the Python in `python`."""

    workload: str
    suite: str = "quick"
    backend: str = "cpu"
    dtype: str | None = None
    quick: bool = True
    python: str = sys.executable
    timeout: float = 1800.0


def bench_at_commit(repo: Path, commit: str, request: BenchRequest) -> float:
    """The median seconds per call of `request.workload` measured by `hal bench` at
    `commit`, in a temporary worktree removed afterwards; BisectError when the commit is
    unknown, the bench fails or does not measure the workload."""
    sha = _git(repo, "rev-parse", "--verify", f"{commit}^{{commit}}")
    with tempfile.TemporaryDirectory(prefix="hal-bisect-") as tmp:
        tree, out = Path(tmp) / "src", Path(tmp) / "results"
        _git(repo, "worktree", "add", "--detach", str(tree), sha)
        try:
            command = [request.python, "-m", "hal.cli", "bench", "--suite", request.suite,
                       "--backend", request.backend, "--no-report", "--out", str(out)]
            command += ["--quick"] * request.quick
            command += ["--dtype", request.dtype] if request.dtype else []
            proc = subprocess.run(command, cwd=tree, capture_output=True, text=True,
                                  timeout=request.timeout, env={**os.environ})
            files = sorted(out.glob("*.jsonl"))
            if not files:
                tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
                raise BisectError(f"hal bench at {sha[:10]} wrote no results (exit "
                                  f"{proc.returncode}): {' / '.join(tail)}")
            return _median(files[-1], sha, request)
        finally:
            _git(repo, "worktree", "remove", "--force", str(tree))


def _median(path: Path, sha: str, request: BenchRequest) -> float:
    """The workload's median in a results file; BisectError when it is not there or not ok."""
    try:
        results = read_results(path)
    except ResultsError as exc:
        raise BisectError(f"results of {sha[:10]}: {exc}") from exc
    found = [m for m in results.measurements if m.workload == request.workload
             and (request.dtype is None or m.dtype == request.dtype)]
    ok = [m for m in found if m.status == "ok" and m.median]
    if len(ok) != 1:
        what = "measured ok" if found else "measured at all"
        names = sorted({m.workload for m in results.measurements})
        raise BisectError(f"{request.workload} was not {what} exactly once by suite "
                          f"{request.suite} on {request.backend} at {sha[:10]} (found "
                          f"{len(ok)}; give --dtype to pick one); workloads there: "
                          f"{', '.join(names) or 'none'}")
    return float(ok[0].median)


@dataclass
class BisectResult:
    """The first commit at the bad level, the last at the good one, and every median
    measured on the way (commit -> seconds per call)."""

    first_bad: str
    last_good: str
    medians: dict[str, float] = field(default_factory=dict)


def bisect(repo: Path, good: str, bad: str, measure: Callable[[str], float],
           min_effect: float = 0.05) -> BisectResult:
    """Binary search for the first commit after `good` whose median (`measure(commit)`) is
    on `bad`'s side of the geometric midpoint of the two ends' medians; BisectError when
    the ends differ by less than `min_effect` (nothing to look for)."""
    good, bad = (_git(repo, "rev-parse", "--verify", f"{c}^{{commit}}") for c in (good, bad))
    commits = _git(repo, "rev-list", "--ancestry-path", "--reverse", f"{good}..{bad}").split()
    if not commits:
        raise BisectError(f"{bad[:10]} does not descend from {good[:10]}: give an older "
                          "--good and a newer --bad")
    medians = {good: measure(good), bad: measure(bad)}
    if abs(math.log(medians[bad] / medians[good])) < math.log1p(min_effect):
        raise BisectError(f"{good[:10]} and {bad[:10]} measure {medians[good]:.4g} s and "
                          f"{medians[bad]:.4g} s, less than {100 * min_effect:g}% apart: "
                          "no step to look for between them")
    middle = math.sqrt(medians[good] * medians[bad])
    slower = medians[bad] > medians[good]
    lo, hi = -1, len(commits) - 1  # commits[lo] (good itself at -1) is good, commits[hi] bad
    while hi - lo > 1:
        mid = (lo + hi) // 2
        medians[commits[mid]] = measure(commits[mid])
        if (medians[commits[mid]] > middle) == slower:
            hi = mid
        else:
            lo = mid
    return BisectResult(commits[hi], good if lo < 0 else commits[lo], medians)
