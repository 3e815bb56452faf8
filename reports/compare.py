"""Compare two runs (or the backends of one run) measurement by measurement.

Per matching key: the speedup `median(base) / median(new)` (>1: NEW is faster) with a
bootstrap CI, the Mann-Whitney p-value, and a verdict. Exit codes: 0 no regression,
1 a regression or new failure, 2 not comparable.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd

from benchmarks.schema.records import Measurement, Results, RunRecord
from benchmarks.stats import mann_whitney_p, speedup
from reports.frame import format_params, format_seconds

VERDICTS = ("improved", "regressed", "unchanged", "new failure", "fixed", "incomparable")
EXIT_OK, EXIT_REGRESSION, EXIT_NOT_COMPARABLE = 0, 1, 2


@dataclass
class Comparison:
    """One key compared: medians, speedup with CI, p-value, verdict and why."""

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


def judge(
    base: Measurement | None,
    new: Measurement | None,
    threshold: float = 0.05,
    alpha: float = 0.01,
) -> tuple[str, dict[str, Any]]:
    """Verdict for one key and the figures behind it.

    Improved/regressed need a speedup beyond `1 + threshold` (either way) and, when both
    sides have raw samples, a Mann-Whitney p-value below `alpha` and a 99% bootstrap CI
    of the speedup that excludes 1 (the two together keep noise from raising alarms).
    """
    figures: dict[str, Any] = {
        "speedup": None,
        "ci_low": None,
        "ci_high": None,
        "p_value": None,
        "note": "",
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
    if base.samples and new.samples:
        s = speedup(base.samples, new.samples)
        p = mann_whitney_p(base.samples, new.samples)
        figures.update(speedup=s.ratio, ci_low=s.ci_low, ci_high=s.ci_high, p_value=p)
        # Both tests must agree: Mann-Whitney, and a bootstrap CI that excludes 1.
        significant = not pd.isna(p) and p < alpha and (s.ci_low > 1 or s.ci_high < 1)
    else:
        figures["speedup"] = base.median / new.median
        figures["note"] = "no raw samples: threshold only"
        significant = True
    ratio = figures["speedup"]
    if significant and ratio > 1 + threshold:
        return "improved", figures
    if significant and ratio < 1 / (1 + threshold):
        return "regressed", figures
    return "unchanged", figures


def _comparison(
    base: Measurement | None, new: Measurement | None, threshold: float, alpha: float
) -> Comparison:
    """Compare two measurements of one workload key."""
    either = base or new
    assert either is not None
    verdict, figures = judge(base, new, threshold, alpha)
    return Comparison(
        suite=either.suite,
        workload=either.workload,
        params=format_params(either.params),
        dtype=either.dtype,
        base=base.device if base else "",
        new=new.device if new else "",
        base_median=base.median if base else None,
        new_median=new.median if new else None,
        verdict=verdict,
        **figures,
    )


def compare_runs(
    base: Results, new: Results, threshold: float = 0.05, alpha: float = 0.01
) -> list[Comparison]:
    """Compare every measurement key of two runs (keys in one run only included)."""
    a = {m.key: m for m in base.measurements}
    b = {m.key: m for m in new.measurements}
    keys = sorted(a.keys() | b.keys())
    return [_comparison(a.get(k), b.get(k), threshold, alpha) for k in keys]


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
    diffs += [
        f"env {k}: {a.env.get(k)!r} != {b.env.get(k)!r}"
        for k in sorted(a.env.keys() | b.env.keys())
        if a.env.get(k) != b.env.get(k)
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
                "verdict": c.verdict,
                "note": c.note,
            }
        )
    return pd.DataFrame(rows)
