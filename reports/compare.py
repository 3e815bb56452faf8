"""Compare two runs (or the backends of one run) measurement by measurement.

Per matching key: the speedup `median(base) / median(new)` (>1: NEW is faster) with a
bootstrap CI, the Mann-Whitney p-value, and a verdict. A change is a regression or an
improvement only when it is significant (Mann-Whitney and the bootstrap CI agree) and
larger than both the minimum effect (`threshold`) and the noise of that workload between
these two runs (`noise_limit`): NOISE_FACTOR standard deviations of each side's
repeat-to-repeat spread (`sample_sigma`) and of the run-to-run noise of the pair over all
workloads (`run_noise`), added in quadrature. The spread of single repeats, not the
standard error of their median: how far a workload's median moves between two runs
follows how noisy its repeats are (softmax or attention ~8% between quiet runs, GEMM ~1%),
and a median's standard error, n times smaller, called identical runs regressions.

When either run started on a loaded machine (`busy_warning`), what all workloads share is
the load, not the code: each workload's change is taken relative to the pair's median
change, and workloads measured on the host CPU are judged on the process's CPU time
(`Measurement.cpu_samples`), which leaves out the time the process waited for a core.
Exit codes: 0 no regression, 1 a regression or new failure, 2 not comparable.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd
import scipy.stats as sps

from benchmarks.schema.records import Measurement, Results, RunRecord, fingerprinted_env
from benchmarks.stats import mann_whitney_p, speedup
from reports.frame import format_params, format_seconds

VERDICTS = ("improved", "regressed", "unchanged", "new failure", "fixed", "incomparable")
EXIT_OK, EXIT_REGRESSION, EXIT_NOT_COMPARABLE = 0, 1, 2
RUN_NOISE_KEYS = 5
"""Workloads two runs must share for their run-to-run noise to be estimated from them."""
NOISE_FACTOR = 3.0
"""A change must exceed this many standard deviations of its noise (3: one workload in a
thousand crosses it by chance for normal noise; timing noise has heavier tails), more where
the run-to-run noise is estimated from few workloads (`noise_factor`)."""
IQR_PER_SIGMA = 1.349
CLOCKS = ("wall", "cpu")
"""What a comparison times: wall seconds (`samples`) or the process's CPU seconds
(`cpu_samples`)."""


@dataclass
class Comparison:
    """One key compared: medians, speedup with CI, p-value, the noise a change had to
    exceed (relative), the clock judged on, verdict and why."""

    suite: str
    workload: str
    params: str
    dtype: str
    base: str
    new: str
    base_median: float | None
    new_median: float | None
    speedup: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    verdict: str
    note: str = ""
    noise: float | None = None
    clock: str = "wall"


@dataclass(frozen=True)
class RunNoise:
    """How much two runs differ over the workloads both measured on one clock: the median
    change (`shift`, new / base time) and the robust standard deviation of the log changes
    around it (`sigma`), from `keys` workloads; `busy` when either run started on a loaded
    machine, so that the change every workload shares counts as load."""

    keys: int
    shift: float
    sigma: float
    busy: bool
    clock: str = "wall"

    def describe(self) -> str:
        """One line for the terminal."""
        what = "CPU time" if self.clock == "cpu" else "time"
        text = (f"run-to-run noise over {self.keys} workloads ({what}): the median one moved "
                f"{100 * (self.shift - 1):+.1f}%, standard deviation {100 * self.sigma:.1f}%")
        if self.busy:
            text += " (a busy run: the change all workloads share counts as load, not code)"
        return text


def timings(m: Measurement, clock: str) -> list[float]:
    """A measurement's seconds per call on `clock` (wall or the process's CPU time)."""
    return m.cpu_samples if clock == "cpu" else m.samples


def clock_median(m: Measurement, clock: str) -> float | None:
    """The median seconds per call on `clock` (None without any)."""
    if clock == "cpu":
        return float(np.median(m.cpu_samples)) if m.cpu_samples else None
    return m.median


def sample_sigma(m: Measurement, clock: str = "wall") -> float:
    """The relative repeat-to-repeat spread of a measurement on `clock`: (IQR / 1.349) /
    median of its samples (a robust standard deviation; from its statistics where it kept
    no samples; 0 without either)."""
    samples = timings(m, clock)
    if len(samples) >= 2:
        q1, median, q3 = np.percentile(samples, [25, 50, 75])
        iqr = q3 - q1
    else:
        stats = (m.stats or {}) if clock == "wall" else {}
        iqr, median = stats.get("iqr"), stats.get("median")
    if not iqr or not median:
        return 0.0
    return float(iqr / median / IQR_PER_SIGMA)


def noise_factor(keys: int | None = None) -> float:
    """How many standard deviations a change must exceed: NOISE_FACTOR, widened as a
    Student t bound of the same tail where the run-to-run noise was estimated from `keys`
    workloads (11 workloads: 3.96; 50: 3.16)."""
    if not keys or keys < 2:
        return NOISE_FACTOR
    tail = float(sps.norm.sf(NOISE_FACTOR))
    return max(NOISE_FACTOR, float(sps.t.isf(tail, keys - 1)))


def noise_limit(base: Measurement, new: Measurement, run_sigma: float = 0.0,
                clock: str = "wall", keys: int | None = None) -> float:
    """The relative change a workload must exceed to stand out of its noise between two
    runs: `noise_factor(keys)` x the quadrature sum of both sides' repeat-to-repeat spreads
    and the pair's run-to-run noise `run_sigma` (log units, estimated from `keys`
    workloads)."""
    sigma = math.sqrt(sample_sigma(base, clock) ** 2 + sample_sigma(new, clock) ** 2
                      + run_sigma ** 2)
    return math.expm1(noise_factor(keys) * sigma)


def run_noise(pairs: list[tuple[Measurement, Measurement]], busy: bool,
              clock: str = "wall") -> RunNoise | None:
    """The run-to-run noise of two runs on `clock`, from the log ratios of the medians of
    the workloads both measured ok (None with fewer than RUN_NOISE_KEYS of them): 1.4826 x
    the median absolute deviation of the log ratios about their median."""
    medians = [(clock_median(a, clock), clock_median(b, clock)) for a, b in pairs
               if a.status == b.status == "ok"]
    logs = np.array([math.log(b / a) for a, b in medians if a and b])
    if logs.size < RUN_NOISE_KEYS:
        return None
    center = float(np.median(logs))
    sigma = 1.4826 * float(np.median(np.abs(logs - center)))
    return RunNoise(int(logs.size), math.exp(center), sigma, busy, clock)


def judge(
    base: Measurement | None,
    new: Measurement | None,
    threshold: float = 0.05,
    alpha: float = 0.01,
    noise: RunNoise | None = None,
) -> tuple[str, dict[str, Any]]:
    """Verdict for one key and the figures behind it.

    Improved/regressed need a change beyond `1 + threshold` and beyond the workload's
    noise (`noise_limit`, with the pair's run-to-run `noise`) either way; and, when both
    sides have raw samples, a Mann-Whitney p-value below `alpha` and a 99% bootstrap CI of
    the speedup that excludes 1. With a busy pair's noise the change is taken relative to
    the change all workloads share (`noise.shift`), on `noise.clock`.
    """
    figures: dict[str, Any] = {
        "speedup": None,
        "ci_low": None,
        "ci_high": None,
        "p_value": None,
        "note": "",
        "noise": None,
    }
    if base is None or new is None:
        figures["note"] = "only in NEW" if base is None else "only in BASE"
        failed = new is not None and new.status in ("failed", "timeout")
        return ("new failure" if failed else "incomparable"), figures
    bad = ("failed", "timeout")
    if base.status == "ok" and new.status in bad:
        figures["note"] = (new.error or new.status)[:120]
        return "new failure", figures
    if base.status in bad and new.status == "ok":
        return "fixed", figures
    if base.status != "ok" or new.status != "ok" or not base.median or not new.median:
        figures["note"] = f"status {base.status} -> {new.status}"
        return "incomparable", figures
    clock = noise.clock if noise else "wall"
    a, b = timings(base, clock), timings(new, clock)
    if a and b:
        s = speedup(a, b)
        p = mann_whitney_p(a, b)
        figures.update(speedup=s.ratio, ci_low=s.ci_low, ci_high=s.ci_high, p_value=p)
        # Both tests must agree: Mann-Whitney, and a bootstrap CI that excludes 1.
        significant = not pd.isna(p) and p < alpha and (s.ci_low > 1 or s.ci_high < 1)
    else:
        figures["speedup"] = base.median / new.median
        figures["note"] = "no raw samples: threshold and spread only"
        significant = True
    if clock == "cpu":
        figures["note"] = "judged on CPU time (a busy run)"
    limit = max(threshold, noise_limit(base, new, noise.sigma if noise else 0.0, clock,
                                       noise.keys if noise else None))
    figures["noise"] = limit
    ratio = figures["speedup"] * (noise.shift if noise and noise.busy else 1.0)
    if significant and max(ratio, 1 / ratio) > 1 + limit:
        return ("improved" if ratio > 1 else "regressed"), figures
    if significant and max(ratio, 1 / ratio) > 1 + threshold:
        figures["note"] = figures["note"] or "within the noise"
    return "unchanged", figures


def _comparison(
    base: Measurement | None,
    new: Measurement | None,
    threshold: float,
    alpha: float,
    noises: dict[str, RunNoise] | None = None,
) -> Comparison:
    """Compare two measurements of one workload key against the pair's `noises`."""
    either = base or new
    assert either is not None
    noise = None
    if noises and base is not None and new is not None:
        noise = noises.get("cpu" if base.cpu_samples and new.cpu_samples else "wall")
        noise = noise or noises.get("wall")
    verdict, figures = judge(base, new, threshold, alpha, noise)
    clock = noise.clock if noise else "wall"
    return Comparison(
        suite=either.suite,
        workload=either.workload,
        params=format_params(either.params),
        dtype=either.dtype,
        base=base.device if base else "",
        new=new.device if new else "",
        base_median=clock_median(base, clock) if base else None,
        new_median=clock_median(new, clock) if new else None,
        verdict=verdict,
        clock=clock,
        **figures,
    )


def pair_noise(base: Results, new: Results) -> dict[str, RunNoise]:
    """The run-to-run noise of two runs per clock (see `run_noise`): wall time, and the
    process's CPU time when either run started on a loaded machine (`busy_warning`) and
    enough workloads have it on both sides; a clock is missing with too few workloads."""
    a = {m.key: m for m in base.measurements}
    pairs = [(a[m.key], m) for m in new.measurements if m.key in a]
    busy = busy_warning(base) is not None or busy_warning(new) is not None
    noises = {"wall": run_noise(pairs, busy)}
    if busy:
        noises["cpu"] = run_noise([(x, y) for x, y in pairs if x.cpu_samples and y.cpu_samples],
                                  busy, "cpu")
    return {clock: noise for clock, noise in noises.items() if noise is not None}


def compare_runs(
    base: Results, new: Results, threshold: float = 0.05, alpha: float = 0.01
) -> list[Comparison]:
    """Compare every measurement key of two runs (keys in one run only included), each
    change judged against the pair's run-to-run noise (`pair_noise`) too."""
    a = {m.key: m for m in base.measurements}
    b = {m.key: m for m in new.measurements}
    noises = pair_noise(base, new)
    keys = sorted(a.keys() | b.keys())
    return [_comparison(a.get(k), b.get(k), threshold, alpha, noises) for k in keys]


def compare_backends(
    results: Results, baseline: str, threshold: float = 0.05, alpha: float = 0.01
) -> list[Comparison]:
    """Compare each backend of one run against `baseline` on the workloads both measured.

    Raises ValueError naming the backends present when `baseline` is not one of them.
    """
    backends = sorted({m.backend for m in results.measurements})
    if baseline not in backends:
        raise ValueError(
            f"baseline backend {baseline!r} is not in {results.path}; "
            f"backends there: {', '.join(backends) or 'none'}"
        )

    def workload_key(m: Measurement) -> tuple[str, ...]:
        return m.key[:3] + m.key[5:]

    ref = {workload_key(m): m for m in results.measurements if m.backend == baseline}
    return [
        _comparison(ref.get(workload_key(m)), m, threshold, alpha)
        for m in sorted(results.measurements, key=lambda m: m.key)
        if m.backend != baseline
    ]


def busy_warning(results: Results) -> str | None:
    """A warning when the run started on an already loaded machine (its verdicts are shaky)."""
    load = (results.run.loadavg or [0.0])[0]
    cores = results.run.host.get("usable_cores") or results.run.host.get("cores")
    if cores and load >= 0.5 * cores:
        return (
            f"warning: {results.path} started at load average {load:.2f} on {cores} "
            "cores: other work shared the machine, so verdicts may be noise"
        )
    return None


def fingerprint_differences(a: RunRecord, b: RunRecord) -> list[str]:
    """What differs between the setups of two runs (host, devices, libraries, env keys)."""
    diffs = [
        f"host.{k}: {a.host.get(k)!r} != {b.host.get(k)!r}"
        for k in sorted(a.host.keys() | b.host.keys())
        if a.host.get(k) != b.host.get(k)
    ]
    diffs += [
        f"{name}: {a.libraries.get(name)!r} != {b.libraries.get(name)!r}"
        for name in sorted(a.libraries.keys() | b.libraries.keys())
        if a.libraries.get(name) != b.libraries.get(name)
    ]
    env_a, env_b = fingerprinted_env(a.env), fingerprinted_env(b.env)
    diffs += [
        f"env {k}: {env_a.get(k)!r} != {env_b.get(k)!r}"
        for k in sorted(env_a.keys() | env_b.keys())
        if env_a.get(k) != env_b.get(k)
    ]
    devs = [
        [(d.backend, d.name, str(sorted(d.capabilities.items()))) for d in r.devices]
        for r in (a, b)
    ]
    if sorted(devs[0]) != sorted(devs[1]):
        diffs.append("devices or their capabilities differ")
    return diffs or ["fingerprints differ"]


def exit_code(comparisons: list[Comparison]) -> int:
    """1 when anything regressed or newly fails, else 0."""
    bad = {"regressed", "new failure"}
    return EXIT_REGRESSION if any(c.verdict in bad for c in comparisons) else EXIT_OK


def _percent(fraction: float | None) -> str:
    """A relative change in per cent for the table; beyond 1000% only its order matters."""
    if fraction is None:
        return ""
    return ">1000%" if fraction > 10 else f"{100 * fraction:.0f}%"


def comparison_table(comparisons: list[Comparison]) -> pd.DataFrame:
    """Comparisons as a display table (times humanised, speedups with CI)."""
    rows = []
    for c in comparisons:
        d = asdict(c)
        ci = "" if c.ci_low is None else f"[{c.ci_low:.3f}, {c.ci_high:.3f}]"
        rows.append(
            {
                "suite": d["suite"],
                "workload": d["workload"],
                "params": d["params"],
                "dtype": d["dtype"],
                "base": d["base"],
                "new": d["new"],
                "base median": format_seconds(c.base_median),
                "new median": format_seconds(c.new_median),
                "speedup": "" if c.speedup is None else f"{c.speedup:.3f}",
                "99% CI": ci,
                "p": "" if c.p_value is None or pd.isna(c.p_value) else f"{c.p_value:.2g}",
                "noise": _percent(c.noise),
                "verdict": c.verdict,
                "note": c.note,
            }
        )
    return pd.DataFrame(rows)
