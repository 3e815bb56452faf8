"""The report's first screen: is it correct, how fast is it against the alternatives, and
how much is missing, each in a short table; the details sections hold the rest."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from benchmarks.stats import geometric_mean
from reports import claims, tables
from reports.conformance import CATEGORIES, ConformanceRun
from reports.frame import Inputs
from reports.render import CELL_CHARS, short
from reports.section import Block, Section


def reason_kind(reason: str) -> str:
    """The kind of a skip or failure reason: its leading error name (`FallbackRefused` of
    `FallbackRefused: matmul on tpu:0 ...`), else the whole reason."""
    match = re.match(r"\s*([A-Za-z_][\w.]*)\s*:", reason)
    return match.group(1) if match else reason


def _verdict(run: ConformanceRun, failed: int) -> str:
    """`certified`, or what keeps the device from it: failed cells, jit cells and layers."""
    layers = [layer["name"] for layer in run.layers if not layer["ok"]]
    graphs = sum(g["status"] == "fail" for g in run.graphs)
    problems = [f"{failed} cell{'s' * (failed != 1)} failed"] if failed else []
    problems += [f"{graphs} jit cell{'s' * (graphs != 1)} failed"] if graphs else []
    problems += [f"layer {name} failed" for name in layers]
    if not problems:
        return "certified" if run.ok else "not certified"
    return "; ".join(problems)


def correctness(inputs: Inputs) -> list[Block]:
    """Per conformance run: the verdict and its cells by outcome; the benchmark output
    checks that failed."""
    blocks: list[Block] = []
    runs = inputs.conformance
    if runs:
        table = tables.conformance_summary(runs)
        table["verdict"] = [_verdict(r, fail) for r, fail in zip(runs, table["fail"], strict=True)]
        table["jit cells"] = [f"{sum(g['status'] == 'pass' for g in r.graphs)}/{len(r.graphs)}"
                              if r.graphs else "" for r in runs]
        host = ["host"] if table["host"].nunique() > 1 else []
        jit = ["jit cells"] if any(r.graphs for r in runs) else []
        columns = [*host, "backend", "device", "verdict", "cells", *CATEGORIES, *jit]
        blocks += ["`hal conformance`: every op x dtype against the numpy reference.",
                   table[columns]]
    else:
        blocks.append("No conformance results in these files: `hal conformance --out FILE`, "
                      "then `hal report` or `hal bench --conformance FILE` with it.")
    frame = inputs.frame
    if not frame.empty:
        checked = frame[(frame["status"] == "ok") & frame["check_passed"].notna()]
        bad = checked[checked["check_passed"] == False]  # noqa: E712 (a column of objects)
        if bad.empty:
            blocks.append(f"Benchmark output checks: all {len(checked)} passed.")
        else:
            names = ", ".join(sorted(set(bad["series"] + " " + bad["workload"])))
            blocks.append(f"Benchmark output checks: {len(bad)} of {len(checked)} FAILED: "
                          f"{short(names, 400)}.")
    return blocks


def claims_summary(inputs: Inputs) -> pd.DataFrame:
    """Each claim in a line: the published ratio, ours, who was compared, or what is
    missing."""
    table = claims.claims_table(inputs.results)
    if table.empty:
        return table

    def ours(row: pd.Series) -> str:
        if not row["ratio"]:
            return short(row["measured"])
        return f"{row['ratio']} ({short(row['candidate'], 60)} vs {short(row['baseline'], 60)})"

    out = pd.DataFrame({
        **({"run": table["run"]} if "run" in table else {}),
        "claim": table["claim"].map(lambda t: short(t, 90)),
        "published": table["published ratio"],
        "measured here": table.apply(ours, axis=1),
    })
    return out.reset_index(drop=True)


def headline_speedups(long: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """Per series: the workloads compared with `baseline`, the geometric mean of the
    speedups, their middle half and range, and how many are faster or slower beyond the
    99% CI."""
    rows = []
    for series, group in long.groupby("series", sort=True):
        s = group["speedup"].astype(float)
        q1, q3 = np.percentile(s, [25, 75])
        rows.append({
            "backend": series,
            "workloads": len(s),
            "geometric mean": f"{geometric_mean(s):.2f}x",
            "middle half": f"{q1:.2f}x – {q3:.2f}x",
            "range": f"{s.min():.2g}x – {s.max():.2g}x",
            "faster (CI > 1)": int((group["ci_low"] > 1).sum()),
            "slower (CI < 1)": int((group["ci_high"] < 1).sum()),
            "with CPU fallback": int(group["fallback"].sum()),
        })
    return pd.DataFrame(rows)


def speed(inputs: Inputs, baseline: str | None, long: pd.DataFrame) -> list[Block]:
    """The claims against the published figures, then the speedups against `baseline`."""
    blocks: list[Block] = []
    table = claims_summary(inputs)
    if not table.empty:
        blocks += ["Published claims beside this run's `seed` suite (ratio: how many times "
                   "better the candidate is; published figures come from other hardware).",
                   table]
    if baseline is None:
        return blocks or ["No measurements in these files."]
    if long.empty:
        blocks.append(f"No workload measured `ok` on both `{baseline}` and another backend.")
    else:
        blocks += [f"Speedup of each backend against `{baseline}` over the workloads both "
                   "measured (ratio of medians, >1 faster): geometric mean and spread.",
                   headline_speedups(long, baseline)]
    return blocks


def status_counts(frame: pd.DataFrame) -> pd.DataFrame:
    """Per series: measurements by status and the CPU-fallback calls."""
    counts = frame.groupby(["series", "status"]).size().unstack(fill_value=0)
    table = pd.DataFrame({"backend": counts.index, "measurements": counts.sum(axis=1).values})
    for status in ("ok", "skipped", "failed", "timeout"):
        table[status] = counts[status].values if status in counts else 0
    fallbacks = frame.groupby("series")["fallbacks"].sum()
    table["fallback calls"] = table["backend"].map(fallbacks).astype(int).values
    return table.reset_index(drop=True)


def reason_groups(frame: pd.DataFrame) -> pd.DataFrame:
    """Measurements not `ok` grouped by status and the kind of their reason: how many, on
    which backends, and the group's most frequent reason (devices named `<device>`)."""
    bad = frame[frame["status"] != "ok"]
    if bad.empty:
        return pd.DataFrame()
    reasons = pd.Series([tables.without_device(e or s, d) for e, s, d in
                         zip(bad["error"], bad["status"], bad["device"], strict=True)],
                        index=bad.index)
    bad = bad.assign(reason=reasons, kind=reasons.map(reason_kind))
    rows = []
    for (status, _kind), group in bad.groupby(["status", "kind"], sort=False):
        distinct = group["reason"].nunique()
        more = (f" (and {distinct - 1} other reason{'s' * (distinct > 2)} of this kind)"
                if distinct > 1 else "")
        rows.append({
            "status": status,
            "reason": short(group["reason"].mode().iloc[0], CELL_CHARS - len(more)) + more,
            "count": len(group),
            "backends": ", ".join(sorted(set(group["series"]))),
        })
    return pd.DataFrame(rows).sort_values(["count", "status"], ascending=[False, True])


def missing(inputs: Inputs) -> list[Block]:
    """Measurements by status per backend, the reasons of those not `ok` grouped, and the
    ops that fall back to the CPU in conformance."""
    frame = inputs.frame
    blocks: list[Block] = [
        f"Run `{r.run.id}` did not finish: what it did not reach is missing below "
        f"(`hal bench --resume {r.run.id}` finishes it)."
        for r in inputs.results if not r.completed
    ]
    if not frame.empty:
        blocks.append(status_counts(frame))
        groups = reason_groups(frame)
        if not groups.empty:
            blocks += ["Not measured, by reason (the details list every workload with its "
                       "whole reason):", groups.reset_index(drop=True)]
    fallback = tables.conformance_fallback_ops(inputs.conformance)
    if not fallback.empty:
        fallback = fallback.assign(**{"ops that fall back": fallback["ops that fall back"]
                                      .map(lambda t: short(t, 200))})
        blocks += ["Ops with a conformance cell on the CPU fallback:",
                   fallback.drop(columns=["file", "host"]) if fallback["host"].nunique() <= 1
                   else fallback.drop(columns=["file"])]
    return blocks or ["No measurements or conformance results in these files."]


def summary_sections(inputs: Inputs, baseline: str | None, long: pd.DataFrame) -> list[Section]:
    """The three answers, each a section: correct, how fast, what is missing. `long` is
    `tables.speedups(inputs.frame, baseline)`."""
    return [
        Section("Is it correct?", correctness(inputs)),
        Section("How fast, against the alternatives?", speed(inputs, baseline, long)),
        Section("What is missing?", missing(inputs)),
    ]
