"""The lines a `hal bench` run ends with, read back from its results file: the time each
suite took, a short table of headline figures, the counts ok / skipped (by reason) /
failed, and where the report is. Everything fits 80 columns; the report has the rest.

A headline is a device's speedup over the baseline device (the geometric mean of the
median-time ratios over the workloads both measured, with their range), plus any rows the
layer above hands in (the published claims beside what was measured).
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from benchmarks.schema.records import Measurement, Results

FAILED = ("failed", "timeout")
REASONS_SHOWN = 6  # skip reasons listed by name; the report lists every one
WIDTH = 80


@dataclass
class Counts:
    """Measurements by outcome; `reasons` groups the skipped ones by reason, most first:
    (count, reason, devices it hit)."""

    ok: int = 0
    skipped: int = 0
    failed: int = 0
    reasons: list[tuple[int, str, list[str]]] = field(default_factory=list)


def reason(error: str | None) -> str:
    """A skip reason without what varies between workloads, so that one reason groups every
    device, op and dtype it hit. hal's errors read `Type: where: why; what to do`: the
    reason is `Type: why`, device names in it become DEVICE and quoted names '…'."""
    text = (error or "no reason given").strip().splitlines()[0]
    kind, sep, rest = text.partition(": ")
    if not (sep and kind.isidentifier()):
        kind, rest = "", text
    why = rest.rsplit(": ", 1)[-1].split("; ")[0]
    why = re.sub(r"\b[a-z][a-z0-9_]*:\d+\b", "DEVICE", why)
    why = re.sub(r"'[^']*'", "'…'", why)
    return f"{kind}: {why}" if kind else why


def counts(measurements: Sequence[Measurement]) -> Counts:
    """How many measurements are ok, skipped (grouped by `reason`) and failed or timed out."""
    found = Counts()
    groups: dict[str, list[str]] = defaultdict(list)
    for m in measurements:
        if m.status == "ok":
            found.ok += 1
        elif m.status in FAILED:
            found.failed += 1
        else:
            found.skipped += 1
            groups[reason(m.error)].append(m.device)
    found.reasons = sorted(
        ((len(devs), why, list(dict.fromkeys(devs))) for why, devs in groups.items()),
        key=lambda g: (-g[0], g[1]),
    )
    return found


def _seconds(stamp: str) -> float:
    """An ISO 8601 time as seconds since the epoch."""
    return datetime.fromisoformat(stamp).timestamp()


def suite_seconds(results: Results) -> dict[str, float]:
    """About how long each suite took: each measurement lasts until the next one starts
    (the last until the run's end), summed per suite, in the order the suites first ran."""
    timed = sorted(results.measurements, key=lambda m: m.time)
    ends = [m.time for m in timed[1:]] + [results.run.end or (timed[-1].time if timed else "")]
    took: dict[str, float] = {}
    for m, end in zip(timed, ends, strict=True):
        took[m.suite] = took.get(m.suite, 0.0) + max(0.0, _seconds(end) - _seconds(m.time))
    return took


def speedups(results: Results, baseline: str = "cpu") -> list[tuple[str, str]]:
    """Per device: its speedup over device 0 of `baseline` over the workloads both measured
    ok (same suite, workload, params and dtype): the geometric mean of the ratios of median
    times, their range and their count. Empty without a baseline device."""
    base_device = f"{baseline}:0"
    by_device: dict[str, dict[tuple, float]] = defaultdict(dict)
    for m in results.measurements:
        if m.status == "ok" and m.median and m.median > 0:
            suite, workload, params, _, _, dtype = m.key
            by_device[m.device][suite, workload, params, dtype] = m.median
    base = by_device.pop(base_device, {})
    rows = []
    for device in sorted(by_device):
        ratios = [base[k] / t for k, t in by_device[device].items() if k in base]
        if not ratios:
            continue
        mean = math.exp(sum(map(math.log, ratios)) / len(ratios))
        rows.append((
            f"{device} vs {base_device}",
            f"{mean:.2f}x geomean ({min(ratios):.2g}x-{max(ratios):.2g}x, "
            f"{len(ratios)} workloads)",
        ))
    return rows


def duration(seconds: float) -> str:
    """Seconds in words: `42 s`, `3 min 05 s`, `1 h 02 min`."""
    s = round(seconds)
    if s < 60:
        return f"{seconds:.1f} s" if seconds < 10 else f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def _fit(text: str, width: int) -> str:
    """`text` cut to `width` characters (an ellipsis marks the cut)."""
    return text if len(text) <= width else text[: width - 1] + "…"


def summary_lines(
    results: Results,
    report: Path | None = None,
    report_seconds: float | None = None,
    headlines: Sequence[tuple[str, str]] = (),
) -> list[str]:
    """The run's closing lines (see the module docstring): suite times, the report's time,
    the headline table (`headlines` first, then the speedups), the counts with the skip
    reasons, and the report's path."""
    run = results.run
    took = _seconds(run.end) - _seconds(run.start) if run.end else None
    lines = [f"bench: {len(results.measurements)} measurement(s)"
             f"{f' in {duration(took)}' if took is not None else ''}"]
    lines += [
        f"  {'suite ' + suite:<22} {duration(took)}"
        for suite, took in suite_seconds(results).items()
    ]
    if report_seconds is not None:
        lines.append(f"  {'report':<22} {duration(report_seconds)}")
    rows = [*headlines, *speedups(results)]
    if rows:
        left = min(max(len(what) for what, _ in rows), WIDTH // 2)
        lines += ["", "headline figures:"] + [
            _fit(f"  {_fit(what, left):<{left}}  {figure}", WIDTH) for what, figure in rows
        ]
    found = counts(results.measurements)
    state = "" if results.completed else " (run not finished)"
    lines += [
        "",
        f"{found.ok} ok, {found.skipped} skipped, {found.failed} failed or timed out{state}",
    ]
    if found.reasons:
        lines.append("skipped, by reason:")
        for n, why, devices in found.reasons[:REASONS_SHOWN]:
            where = ", ".join(devices) if len(devices) <= 2 else f"{len(devices)} devices"
            lines.append(_fit(f"  {n:>5}  [{where}] {why}", WIDTH))
        rest = found.reasons[REASONS_SHOWN:]
        if rest:
            lines.append(
                f"  {sum(g[0] for g in rest):>5}  in {len(rest)} more reasons: see the "
                "report's skipped section"
            )
    if found.failed:
        failed = Counter(m.device for m in results.measurements if m.status in FAILED)
        lines.append(
            "failed: " + ", ".join(f"{n} on {device}" for device, n in failed.most_common())
        )
    lines.append(f"results: {results.path}")
    if report:
        lines.append(f"report: {report}")
    return lines
