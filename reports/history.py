"""History across commits: a time series per workload and machine, and its steps.

Runs are grouped by machine (the setup fingerprint, recomputed so that files written
with another cache directory join their machine) and ordered by their git commit's date
(the run's start where the commit is unknown); several runs of one commit give one
point, the median of their medians. Steps are found as asv does: a penalised
piecewise-constant fit of the log medians (PELT with an L1 cost from `ruptures`, a
well-kept change-point library), with the penalty scaled by the series' own noise, so a
load spike is no step; a step smaller than `min_effect` is merged away. Each step names
the commit range it happened in: the last commit at the old level and the first at the
new.
"""

from __future__ import annotations

import datetime as dt
import io
import subprocess
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks.schema.records import Results
from reports.frame import format_params, format_seconds, short_hostname
from reports.section import Section

SERIES_KEY = ["suite", "workload", "params", "backend", "device", "dtype"]
PENALTY = 3.0
"""PELT penalty per step, times log(points), in units of the series' noise: with it no
step was found in 200 simulated noise-only series (normal and heavy-tailed, 8-120
points), and 95% of 20% steps over 3% noise were."""
MIN_EFFECT = 0.05
NOISE_FLOOR = 1e-3


@dataclass
class Step:
    """A change of level in one series: between `good` (the last commit at the old level)
    and `bad` (the first at the new one); `ratio` = new level / old level of the median
    time (>1: slower, a regression)."""

    index: int
    good: str
    bad: str
    before: float
    after: float

    @property
    def ratio(self) -> float:
        """New median time over the old one."""
        return self.after / self.before

    @property
    def kind(self) -> str:
        """`regression` (slower) or `improvement` (faster)."""
        return "regression" if self.ratio > 1 else "improvement"


def noise_scale(logs: np.ndarray) -> float:
    """The point-to-point noise of a log series, robust to its steps: the MAD of the first
    differences over sqrt(2) (a step moves one difference only), at least NOISE_FLOOR."""
    if logs.size < 3:
        return NOISE_FLOOR
    mad = 1.4826 * float(np.median(np.abs(np.diff(logs))))
    return max(mad / np.sqrt(2.0), NOISE_FLOOR)


def detect_steps(medians: list[float] | np.ndarray, min_effect: float = MIN_EFFECT,
                 penalty: float = PENALTY) -> list[tuple[int, float, float]]:
    """Steps of a series of median times: `(index of the first point at the new level,
    old level, new level)`, levels being segment medians. A level needs two points (one
    deviating point is indistinguishable from a busy moment); neighbouring levels closer
    than `min_effect` (relative) are merged."""
    import ruptures

    y = np.log(np.asarray(medians, dtype=float))
    if y.size < 4:
        return []
    z = y / noise_scale(y)
    cuts = ruptures.Pelt(model="l1", min_size=2, jump=1).fit(z).predict(
        pen=penalty * np.log(y.size))[:-1]
    while True:
        bounds = [0, *cuts, y.size]
        levels = [float(np.median(y[a:b])) for a, b in pairwise(bounds)]
        changes = [abs(b - a) for a, b in pairwise(levels)]
        if not changes or min(changes) >= np.log1p(min_effect):
            break
        cuts.pop(int(np.argmin(changes)))
    return [(c, float(np.exp(a)), float(np.exp(b)))
            for c, (a, b) in zip(cuts, pairwise(levels), strict=True)]


def commit_times(commits: set[str], repo: Path | None) -> dict[str, float]:
    """Commit -> its committer date (epoch seconds) from the git repository at `repo`;
    commits it does not know are left out (empty without a repository)."""
    if repo is None or not commits:
        return {}
    try:
        out = subprocess.run(
            ["git", "-C", str(repo), "log", "--no-walk=unsorted", "--format=%H %ct",
             "--ignore-missing", *sorted(commits)],
            capture_output=True, text=True, timeout=60, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    times = {}
    for line in out.splitlines():
        sha, _, when = line.partition(" ")
        times[sha] = float(when)
    return times


def _epoch(iso: str) -> float:
    """An ISO 8601 time as epoch seconds (0 when unreadable)."""
    try:
        return dt.datetime.fromisoformat(iso).timestamp()
    except (TypeError, ValueError):
        return 0.0


def machine_label(results: Results) -> str:
    """`host (cpu) fingerprint[:8]`: the machine a history belongs to."""
    run = results.run
    return f"{short_hostname(run)} ({run.host.get('cpu') or 'unknown cpu'}) " \
           f"{run.compute_fingerprint()[:8]}"


def history_frame(results: list[Results], repo: Path | None = None) -> pd.DataFrame:
    """One row per (machine, series, commit): the median time over that commit's runs, the
    runs' count, the order of the commit, ok measurements only. A run without a git commit
    is its own point, named by its run id; a dirty checkout's commit gets a `+dirty`."""
    rows = []
    for r in results:
        git = r.run.git or {}
        commit = git.get("commit") or ""
        label = (commit[:10] + ("+dirty" if git.get("dirty") else "")) if commit else r.run.id
        machine = machine_label(r)
        for m in r.measurements:
            if m.status == "ok" and m.median:
                rows.append({"machine": machine, "commit": commit, "point": label,
                             "start": _epoch(r.run.start), "run": r.run.id,
                             "suite": m.suite, "workload": m.workload,
                             "params": format_params(m.params), "backend": m.backend,
                             "device": m.device, "dtype": m.dtype, "median": m.median})
    if not rows:
        return pd.DataFrame()
    frame = pd.DataFrame(rows)
    times = commit_times(set(frame["commit"]) - {""}, repo)
    frame["when"] = [times.get(c, s) for c, s in zip(frame["commit"], frame["start"])]
    points = frame.groupby(["machine", *SERIES_KEY, "point"], sort=False).agg(
        median=("median", "median"), runs=("run", "nunique"), when=("when", "min"),
        start=("start", "min"), commit=("commit", "first")).reset_index()
    return points.sort_values(["machine", *SERIES_KEY, "when", "start"], ignore_index=True)


def steps_table(points: pd.DataFrame, min_effect: float = MIN_EFFECT) -> pd.DataFrame:
    """Every step of every series: machine, series, kind, the change in %, the levels
    before and after, and the commit range (`good..bad`)."""
    rows = []
    for key, series in points.groupby(["machine", *SERIES_KEY], sort=False):
        labels = list(series["point"])
        for index, before, after in detect_steps(series["median"].to_numpy(), min_effect):
            step = Step(index, labels[index - 1], labels[index], before, after)
            rows.append({**dict(zip(["machine", *SERIES_KEY], key)), "kind": step.kind,
                         "change %": round(100.0 * (step.ratio - 1.0), 1),
                         "before": format_seconds(before), "after": format_seconds(after),
                         "commits": f"{step.good}..{step.bad}", "good": step.good,
                         "bad": step.bad})
    return pd.DataFrame(rows, columns=["machine", *SERIES_KEY, "kind", "change %", "before",
                                       "after", "commits", "good", "bad"])


def series_table(points: pd.DataFrame, steps: pd.DataFrame) -> pd.DataFrame:
    """One row per series of a machine: its points, first and latest median, and its
    steps as `+12.0% at a..b`."""
    rows = []
    for key, series in points.groupby(SERIES_KEY, sort=False):
        mine = steps
        for column, value in zip(SERIES_KEY, key):
            mine = mine[mine[column] == value]
        rows.append({**dict(zip(SERIES_KEY, key)), "points": len(series),
                     "first": format_seconds(series["median"].iloc[0]),
                     "latest": format_seconds(series["median"].iloc[-1]),
                     "steps": "; ".join(f"{r['change %']:+.1f}% at {r['commits']}"
                                        for _, r in mine.iterrows())})
    return pd.DataFrame(rows)


def plot_history(points: pd.DataFrame, steps: pd.DataFrame, max_series: int = 12) -> bytes:
    """Median time per commit of the series with steps (the others up to `max_series`),
    one small panel each, relative to the first point, steps marked; the title says how
    many series were left out."""
    import matplotlib
    from matplotlib.figure import Figure

    stepped = {tuple(r[SERIES_KEY]) for _, r in steps.iterrows()}
    groups = sorted(points.groupby(SERIES_KEY, sort=False),
                    key=lambda g: (tuple(g[0]) not in stepped, g[0]))
    shown = groups[:max_series]
    cols = min(3, len(shown))
    rows = -(-len(shown) // cols)
    with matplotlib.rc_context({"text.parse_math": False}):
        fig = Figure(figsize=(4.2 * cols, 2.6 * rows), layout="tight")
        axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False)).ravel()
        for ax, (key, series) in zip(axes, shown):
            y = series["median"].to_numpy()
            ax.plot(np.arange(y.size), y / y[0], marker=".", color="#1f77b4")
            for index, _, _ in detect_steps(y) if tuple(key) in stepped else []:
                ax.axvline(index - 0.5, color="#d62728", linestyle="--", linewidth=1)
            ax.set_title(f"{key[1]} {key[2]} {key[4]} {key[5]}"[:60], fontsize=8)
            ax.set_ylabel("time / first", fontsize=7)
            ax.tick_params(labelsize=7)
        for ax in axes[len(shown):]:
            ax.set_visible(False)
        if len(groups) > len(shown):
            fig.suptitle(f"{len(shown)} of {len(groups)} series shown (those with steps "
                         "first); the table lists all", fontsize=9)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=90)
    return buf.getvalue()


def history_sections(results: list[Results], repo: Path | None = None,
                     min_effect: float = MIN_EFFECT) -> list[Section]:
    """A section per machine whose results span two or more commits: its steps, its series
    and a plot; nothing for a single commit."""
    if len({(r.run.git or {}).get("commit") or r.run.id for r in results}) < 2:
        return []
    points = history_frame(results, repo)
    if points.empty:
        return []
    sections = []
    for machine, mine in points.groupby("machine", sort=False):
        if mine["point"].nunique() < 2:
            continue
        steps = steps_table(mine, min_effect)
        n = mine["point"].nunique()
        text = (f"{n} commits on {machine}: {len(steps)} step(s) of at least "
                f"{100 * min_effect:.0f}% found by a penalised piecewise-constant fit of "
                "the medians (a step needs two commits at its new level). "
                "`hal history --bisect WORKLOAD --good A --bad B` narrows a range down.")
        blocks: list = [text]
        if not steps.empty:
            blocks.append(steps.drop(columns=["machine", "good", "bad"]))
        blocks += [series_table(mine, steps),
                   (f"history-{machine.split()[-1]}.png", plot_history(mine, steps))]
        sections.append(Section(f"History on {machine}", blocks))
    return sections

