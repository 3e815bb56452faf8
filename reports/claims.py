"""The "Claims vs measured" tables: each published claim beside what the seed suite measured.

A claim's row pairs the best measured candidate with its baseline (`benchmarks.claims`:
the metric and the pairing), names both (a peer by its name and version, hal by its
backend and device), gives both figures, the ratio beside the published one and the
output checks. A side that could not be measured says why, in full. Nothing is
estimated: a claim without measurements says so.
"""

from __future__ import annotations

import pandas as pd

from benchmarks.claims import CLAIMS, Claim
from benchmarks.schema.records import Measurement, Results
from reports.tables import without_device

LOWER_IS_BETTER = {"time", "time per item", "footprint"}


def value(claim: Claim, m: Measurement) -> float | None:
    """The figure a claim compares, of an `ok` measurement (None if it lacks it)."""
    median = (m.stats or {}).get("median")
    if claim.metric == "time":
        return median
    if claim.metric == "time per item":
        return median / m.items if median and m.items else None
    if claim.metric == "rate":
        return m.metrics.get("items_per_s")
    if claim.metric == "footprint":
        return m.metrics.get("footprint_mib")
    return None


def _figure(claim: Claim, x: float) -> str:
    """A figure with its unit."""
    if claim.metric == "rate":
        return f"{x:,.0f} {claim.unit or 'items/s'}" if x >= 100 else f"{x:.3g} {claim.unit}"
    if claim.metric == "footprint":
        return f"{x:,.3g} MiB"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if x >= scale:
            return f"{x / scale:.3g} {unit}"
    return f"{x / 1e-9:.3g} ns"


def label(m: Measurement) -> str:
    """Who measured: a peer's name, version and the device it computed on (its facts, where
    the run recorded them), else hal with its mode or layout and device
    (and the count of fallback calls where `hal bench --fallback` let ops run on the CPU)."""
    if "peer" in m.params:
        where = m.facts.get("peer_device")
        return f"{m.facts.get('peer', m.params['peer'])}{f' on {where}' if where else ''}"
    what = m.params.get("layout") or m.params.get("mode") or m.params.get("precision")
    fallbacks = m.placement.fallbacks if m.placement else 0
    aside = f" (CPU fallback calls: {fallbacks})" if fallbacks else ""
    return f"hal{f' {what}' if what else ''} on {m.device}{aside}"


def _better(claim: Claim, ms: list[Measurement]) -> list[Measurement]:
    """`ms` with a figure, best first."""
    valued = [m for m in ms if value(claim, m) is not None]
    return sorted(
        valued, key=lambda m: value(claim, m), reverse=claim.metric not in LOWER_IS_BETTER
    )


def _ratio(claim: Claim, base: float, candidate: float) -> float:
    """How many times better the candidate is than the baseline."""
    return base / candidate if claim.metric in LOWER_IS_BETTER else candidate / base


def _check(ms: list[Measurement]) -> str:
    """The output checks of the compared measurements, in a few words."""
    parts = []
    for m in ms:
        if m.check is None:
            continue
        q = m.check.quality
        if "cosine_min" in q:
            parts.append(
                f"{label(m)}: cosine to FP32 >= {q['cosine_min']:.4f} (mean {q['cosine_mean']:.4f})"
            )
        elif m.check.max_error is not None:
            parts.append(
                f"{label(m)}: {'passed' if m.check.passed else 'FAILED'}, error "
                f"{m.check.max_error:.2g} (limit {m.check.tolerance:.2g})"
            )
    return "; ".join(parts)


def _pair(claim: Claim, ms: list[Measurement], roles: tuple[str, str]):
    """(baseline, candidate) ok measurements of `roles`, by the claim's pairing; or None."""
    ok = [m for m in ms if m.status == "ok"]
    bases = _better(claim, [m for m in ok if m.params.get("role") == roles[0]])
    candidates = _better(claim, [m for m in ok if m.params.get("role") == roles[1]])
    for candidate in candidates:
        if claim.pairing == "best" and bases:
            return bases[0], candidate
        same = [b for b in bases if (b.backend, b.device) == (candidate.backend, candidate.device)]
        if same:
            return same[0], candidate
    return None


def _notes(claim: Claim, ms: list[Measurement], pair: tuple | None) -> list[str]:
    """The peer's own comparison, scaling efficiency, footprints, and every side not
    measured with its whole reason."""
    notes = []
    peer = _pair(claim, ms, ("peer baseline", "peer candidate"))
    if peer:
        b, c = peer
        notes.append(
            f"peer {label(c)}: {_figure(claim, value(claim, b))} -> "
            f"{_figure(claim, value(claim, c))} "
            f"({_ratio(claim, value(claim, b), value(claim, c)):.2f}x)"
        )
    single = [m for m in ms if m.params.get("role") == "single" and m.status == "ok"]
    if single and pair and claim.metric == "rate":
        c = pair[1]
        ranks = int(c.params.get("dp", 1)) * int(c.params.get("tp", 1))
        eff = value(claim, c) / (ranks * value(claim, single[0]))
        notes.append(
            f"scaling efficiency of {label(c)}: {100 * eff:.0f}% of {ranks} x {label(single[0])}"
        )
    missing: dict[tuple[str, str], list[Measurement]] = {}
    for m in ms:
        if m.status == "ok" and claim.metric == "footprint":
            notes.append(
                f"{label(m)}: {_figure(claim, value(claim, m))}, steady call peak "
                f"{m.metrics.get('call_peak_mib', float('nan')):.4g} MiB"
            )
        if m.status != "ok":
            key = (m.status, without_device(m.error or "", m.device))
            missing.setdefault(key, []).append(m)
    notes += [_missing_note(status, reason, group) for (status, reason), group in missing.items()]
    return notes


def _missing_note(status: str, reason: str, ms: list[Measurement]) -> str:
    """One line for the measurements not made for one reason (a device's name in it counts
    as any device's): each set of workloads with the devices it was skipped on."""
    devices: dict[str, list[str]] = {}
    for m in ms:
        devices.setdefault(m.workload, [])
        if m.device not in devices[m.workload]:
            devices[m.workload].append(m.device)
    workloads: dict[tuple[str, ...], list[str]] = {}
    for workload, on in devices.items():
        workloads.setdefault(tuple(on), []).append(workload)
    where = "; ".join(f"{', '.join(w)} on {', '.join(on)}" for on, w in workloads.items())
    errors = {m.error or "" for m in ms}
    return f"{where} {status}: {errors.pop() if len(errors) == 1 else reason}"


def _joules(x: float) -> str:
    """Joules with a unit that keeps three figures readable."""
    for unit, scale in (("J", 1.0), ("mJ", 1e-3), ("uJ", 1e-6)):
        if x >= scale:
            return f"{x / scale:.3g} {unit}"
    return f"{x / 1e-9:.3g} nJ"


def _energy(base: Measurement, candidate: Measurement) -> str:
    """Energy per call of both sides and the candidate's perf/W against the baseline's
    (baseline joules / candidate joules), where both read their device's energy."""
    b, c = base.metrics.get("joules_per_call"), candidate.metrics.get("joules_per_call")
    if not (b and c):
        return ""
    return f"{_joules(b)} -> {_joules(c)} a call ({b / c:.2f}x perf/W)"


def _lines_row(ms: list[Measurement]) -> dict[str, str]:
    """The code-size claim: the lines a user changes to go parallel with annotations, against
    the same training with Megatron's split written by hand (the seed records both)."""
    ok = [m for m in ms if m.status == "ok" and m.check and m.check.quality]
    if not ok:
        return {"measured": "not measured", "ratio": ""}
    q = ok[0].check.quality
    ours = q["lines_differing"] + q["model_annotation_lines"]
    row = {"candidate": "hal: parallel annotations + parallelize",
           "measured": f"{q['single_device_lines']:.0f}-line single-device script: "
                       f"{q['lines_differing']:.0f} lines changed + "
                       f"{q['model_annotation_lines']:.0f} annotations in the model = "
                       f"{ours:.0f}"}
    if "manual_lines_differing" not in q:
        return {**row, "ratio": "not measured: no hand-written version in these results"}
    manual = q["manual_lines_differing"]
    return {**row, "baseline": "the same training with Megatron's split by hand "
                               "(frontends.parallel.training_scripts.MANUAL)",
            "measured": f"{manual:.0f} lines by hand -> {ours:.0f} ({row['measured']}; "
                        f"{100 * (1 - ours / manual):.0f}% fewer)",
            "ratio": f"{manual / ours:.2f}x"}


def _reasons(ms: list[Measurement]) -> str:
    """The reasons of measurements not `ok`, each once (a device's name counts as any's)."""
    return "; ".join(dict.fromkeys(without_device(m.error or m.status, m.device) for m in ms))


def _unpaired(claim: Claim, ms: list[Measurement], completed: bool) -> str:
    """Why a claim has no baseline and candidate to compare: the reasons where nothing was
    measured, else the side that is missing (its reasons, or that the run ended first) and
    what was measured."""
    unfinished = "" if completed else " (the run did not finish)"
    ok = [m for m in ms if m.status == "ok"]
    if not ok:
        return f"not measurable here{unfinished}: {_reasons(ms)}"
    parts, unmeasured = [], []
    for role in ("baseline", "candidate"):
        if any(m.params.get("role") == role for m in ok):
            continue
        side = [m for m in ms if m.params.get("role") == role]
        if side:
            parts.append(f"no {role}: {_reasons(side)}")
        else:
            unmeasured.append(role)
    if unmeasured:
        parts.append(f"no {' or '.join(unmeasured)} measured"
                     + (" before the run ended" if unfinished else ""))
    if not parts:
        parts.append("no baseline on the device of a candidate")
    measured = ", ".join(dict.fromkeys(f"{label(m)} ({m.params.get('role')})" for m in ok))
    return f"incomplete: {'; '.join(parts)}; measured: {measured}"


def claim_row(claim: Claim, ms: list[Measurement], completed: bool = True) -> dict[str, str]:
    """One claim's row (see the module docstring); `completed` says whether the run
    finished (a side it did not reach is said to be missing, not unmeasurable)."""
    row = {
        "claim": claim.text,
        "published": claim.published,
        "published ratio": f"{claim.ratio:.2f}x" if claim.ratio else "",
        "our workload": claim.workload,
    }
    if not ms:
        if not completed:
            return {**row, "measured": "not reached: the run ended before it (`hal bench "
                                       "--resume RUN` finishes it)"}
        return {**row, "measured": "not run: `hal bench --suite seed`"}
    if claim.metric == "lines":
        return {
            **row,
            **_lines_row(ms),
            "check": _check(ms[:1]),
            "notes": "; ".join(_notes(claim, ms, None)),
        }
    pair = _pair(claim, ms, ("baseline", "candidate"))
    if pair is None:
        return {**row, "measured": _unpaired(claim, ms, completed)}
    base, candidate = pair
    b, c = value(claim, base), value(claim, candidate)
    return {
        **row,
        "baseline": label(base),
        "candidate": label(candidate),
        "measured": f"{_figure(claim, b)} -> {_figure(claim, c)}",
        "ratio": f"{_ratio(claim, b, c):.2f}x",
        "perf/W": _energy(base, candidate),
        "check": _check([base, candidate]),
        "notes": "; ".join(_notes(claim, ms, pair)),
    }


COLUMNS = [
    "claim",
    "published",
    "published ratio",
    "our workload",
    "baseline",
    "candidate",
    "measured",
    "ratio",
    "perf/W",
    "check",
    "notes",
]


def claims_table(results: list[Results]) -> pd.DataFrame:
    """One row per published claim and run (figures of different machines are not mixed);
    empty when no result carries seed measurements."""
    rows = []
    for r in results:
        seeds = [m for m in r.measurements if m.suite == "seed" and "claim" in m.params]
        rows += [
            {
                "run": r.run.id,
                **dict.fromkeys(COLUMNS, ""),
                **claim_row(c, [m for m in seeds if m.params["claim"] == c.id], r.completed),
            }
            for c in CLAIMS
            if seeds
        ]
    table = pd.DataFrame(rows, columns=["run", *COLUMNS])
    return table.drop(columns="run") if table["run"].nunique() <= 1 else table
