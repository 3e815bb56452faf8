"""The report's tables, built from the measurements frame of `reports.frame` and the
conformance results of `reports.conformance`."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from benchmarks.peaks import IN_CACHE
from benchmarks.stats import geometric_mean, speedup
from reports.conformance import (
    CATEGORIES,
    ConformanceRun,
    category,
    cells_frame,
    failed_graphs_frame,
    jit_cells,
)
from reports.frame import KEY_COLUMNS, format_seconds

# Marks a figure that includes CPU-fallback calls (measured under `--fallback warn/allow`).
FALLBACK_MARK = "†"


def _number(value: object, fmt: str = ".4g") -> str:
    """A figure formatted, or empty when missing."""
    return "" if value is None or pd.isna(value) else format(value, fmt)


def _ci(row: pd.Series) -> str:
    """The 99% CI of the median as `[low, high]`."""
    if row["ci_low"] is None or pd.isna(row["ci_low"]):
        return ""
    return f"[{format_seconds(row['ci_low'])}, {format_seconds(row['ci_high'])}]"


def _calls(n: int) -> str:
    """`n fallback call(s)`."""
    return f"{n} fallback call{'' if n == 1 else 's'}"


def _status(row: pd.Series) -> str:
    """Status with the fallback calls and ops of a measurement that had them, and the whole
    error of one that failed or was skipped."""
    text = row["status"]
    if row["fallbacks"]:
        text += f" ({_calls(row['fallbacks'])}: {', '.join(row['fallback_ops'])})"
    return f"{text}: {row['error']}" if row["error"] else text


def bandwidth_cell(peaks: dict) -> str:
    """A device's bandwidth peak with the memory it belongs to and what measured it, e.g.
    `11.9 (host memory, numba copy, 2 threads; last-level cache 480 MiB; load 0.52)`."""
    if not peaks.get("gbps"):
        return ""
    memory = peaks.get("memory") or {}
    if not memory:
        return f"{peaks['gbps']:.4g}"
    facts = [f"{memory['name']} memory" + (f", {memory['kernel']}" if memory.get("kernel")
                                            else "")]
    if memory.get("cache_bytes"):
        facts.append(f"last-level cache {memory['cache_bytes'] / 2**20:.0f} MiB")
    if memory.get("load") is not None:
        facts.append(f"load {memory['load']:.2f}")
    return f"{peaks['gbps']:.4g} ({'; '.join(facts)})"


def _pct_of_peak(row: pd.Series) -> str:
    """% of peak: "in cache" where the bytes fit in the memory's cache (no % of its
    bandwidth), a figure above 100 with its reason (`benchmarks.peaks.percent_of_peak`)."""
    note = row.get("peak_note") or ""
    if note == IN_CACHE:
        return note
    text = _number(row["pct_of_peak"], ".1f")
    return f"{text}: {note}" if text and note else text


def suite_table(frame: pd.DataFrame) -> pd.DataFrame:
    """One suite's rows: workload x backend with median, CI, CV, rates, % of peak, status
    (the whole reason of a skip or failure; the fallback calls of a measurement with any)."""
    rows = frame.sort_values(["workload", "params", "dtype", "series"])
    return pd.DataFrame(
        {
            "workload": rows["workload"],
            "params": rows["params"],
            "dtype": rows["dtype"],
            "backend": rows["series"],
            "median": rows["median"].map(format_seconds),
            "99% CI": rows.apply(_ci, axis=1),
            "CV %": (100 * rows["cv"].astype(float)).map(lambda v: _number(v, ".1f")),
            "GFLOP/s": rows["gflops"].map(_number),
            "GB/s": rows["gbps"].map(_number),
            "% peak": rows.apply(_pct_of_peak, axis=1),
            "status": rows.apply(_status, axis=1),
        }
    ).reset_index(drop=True)


def hal_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows hal measured, without the peers': a peer placed on two devices under test
    may compute on the same hardware (numpy under cpu and under PoCL), so its ratio says
    nothing of the backends; the suite tables and the claims compare peers with hal."""
    return frame[frame["peer"].isna()] if "peer" in frame else frame


def default_baseline(frame: pd.DataFrame) -> str:
    """The baseline series: `cpu` when present, else the first series alphabetically."""
    series = sorted(frame["series"].unique())
    return "cpu" if "cpu" in series else series[0]


def speedups(frame: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """Long table of speedups `median(baseline) / median(series)` per workload, with CI.

    Only hal's measurements (`hal_rows`) that are `ok` on both sides are compared; without
    raw samples the CI is left empty. `fallback` says that either side ran ops on the CPU fallback;
    `per_joule` is the ratio of work per joule where both sides read their energy.
    """
    ok = hal_rows(frame[frame["status"] == "ok"])
    base = ok[ok["series"] == baseline].set_index(KEY_COLUMNS)
    rows = []
    for _, row in ok[ok["series"] != baseline].iterrows():
        key = tuple(row[c] for c in KEY_COLUMNS)
        if key not in base.index:
            continue
        ref = base.loc[[key]].iloc[0]
        if len(ref["samples"]) and len(row["samples"]):
            s = speedup(ref["samples"], row["samples"])
            ratio, low, high = s.ratio, s.ci_low, s.ci_high
        else:
            ratio, low, high = ref["median"] / row["median"], np.nan, np.nan
        rows.append(
            dict(
                zip(KEY_COLUMNS, key, strict=True),
                series=row["series"],
                speedup=ratio,
                ci_low=low,
                ci_high=high,
                fallback=bool(row["fallbacks"] or ref["fallbacks"]),
                per_joule=_per_joule(ref, row),
            )
        )
    return pd.DataFrame(
        rows,
        columns=[*KEY_COLUMNS, "series", "speedup", "ci_low", "ci_high", "fallback", "per_joule"],
    )


def _per_joule(base: pd.Series, row: pd.Series) -> float:
    """How many times more work per joule `row` does than `base` (baseline joules per call /
    series joules per call), NaN unless both read their device's energy."""
    b, r = base.get("joules_per_call"), row.get("joules_per_call")
    return b / r if b and r and not (pd.isna(b) or pd.isna(r)) else np.nan


def _geometric_means(ratios: pd.DataFrame, columns: list[str]) -> dict[str, list[str]]:
    """Rows of per-series geometric means of `ratio`: over all, and without the ratios
    marked `fallback` when any are (empty where a series has none left)."""

    def row(part: pd.DataFrame) -> list[str]:
        geo = part.groupby("series")["ratio"].apply(geometric_mean)
        return [f"{geo[c]:.2f}x" if c in geo.index else "" for c in columns]

    rows = {"geometric mean": row(ratios)}
    if ratios["fallback"].any():
        rows[f"geometric mean without {FALLBACK_MARK}"] = row(ratios[~ratios["fallback"]])
    return rows


def speedup_matrix(long: pd.DataFrame) -> pd.DataFrame:
    """Workload x series matrix of `speedup [CI]` strings with geometric-mean rows, and the
    ratio of perf/W (work per joule) beside the speedup where both sides read their energy;
    a speedup involving CPU-fallback calls is marked and has a geometric mean without it."""
    if long.empty:
        return pd.DataFrame()

    def cell(r: pd.Series) -> str:
        ci = "" if pd.isna(r["ci_low"]) else f" [{r['ci_low']:.2f}, {r['ci_high']:.2f}]"
        energy = "" if pd.isna(r.get("per_joule", np.nan)) else f"; {r['per_joule']:.2f}x perf/W"
        return f"{r['speedup']:.2f}x{ci}{energy}" + (f" {FALLBACK_MARK}" if r["fallback"] else "")

    labelled = long.assign(
        workload=long["suite"]
        + "/"
        + long["workload"]
        + " "
        + long["params"]
        + " "
        + long["dtype"],
        cell=long.apply(cell, axis=1),
    )
    matrix = labelled.pivot_table(
        index="workload", columns="series", values="cell", aggfunc="first"
    ).fillna("")
    ratios = long.rename(columns={"speedup": "ratio"})
    for label, row in _geometric_means(ratios, list(matrix.columns)).items():
        matrix.loc[label] = row
    matrix.columns.name = None
    return matrix


def across_table(frame: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """Suite/workload/params/dtype x series: median time and its ratio to `baseline`
    (baseline time / series time, >1 faster), for hal's workloads (`hal_rows`) measured
    `ok` by two or more series, with the geometric mean of each series' ratios."""
    ok = hal_rows(frame[(frame["status"] == "ok") & frame["median"].notna()])
    ok = ok[ok.groupby(KEY_COLUMNS)["series"].transform("nunique") >= 2]
    if ok.empty:
        return pd.DataFrame()
    base = ok[ok["series"] == baseline].groupby(KEY_COLUMNS)["median"].first()
    ok = ok.join(base.rename("base_median"), on=KEY_COLUMNS)
    ratio = (ok["base_median"] / ok["median"]).where(ok["series"] != baseline)
    ok = ok.assign(ratio=ratio, fallback=ok["fallbacks"] > 0)

    def cell(r: pd.Series) -> str:
        text = format_seconds(r["median"])
        text += "" if pd.isna(r["ratio"]) else f" ({r['ratio']:.2f}x)"
        return text + (f" {FALLBACK_MARK}" if r["fallback"] else "")

    table = ok.assign(cell=ok.apply(cell, axis=1)).pivot_table(
        index=KEY_COLUMNS, columns="series", values="cell", aggfunc="first"
    )
    columns = [baseline, *sorted(set(table.columns) - {baseline})]
    table = table.reindex(columns=[c for c in columns if c in table.columns]).fillna("")
    table = table.reset_index()
    ratios = ok[ok["ratio"].notna()]
    if not ratios.empty:
        series = list(table.columns[len(KEY_COLUMNS) :])
        for label, row in _geometric_means(ratios, series).items():
            table.loc[len(table)] = [label, "", "", "", *row]
    table.columns.name = None
    return table


def without_device(reason: str, device: str) -> str:
    """A reason with its device's name replaced by `<device>`, so that devices skipped for
    the same reason share one line."""
    if not device:
        return reason
    return re.sub(rf"(?<![\w:]){re.escape(device)}(?!\w)", "<device>", reason)


def skipped_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Measurements not `ok`, one row per status and whole reason (a device's name in it
    counts as any device's): the backends that share the same workloads for it, and those
    workloads (suite/workload params dtype)."""
    bad = frame[frame["status"] != "ok"]
    if bad.empty:
        return pd.DataFrame()
    label = bad["suite"] + "/" + bad["workload"] + " " + bad["params"] + " " + bad["dtype"]
    general = [without_device(e, d) for e, d in zip(bad["error"], bad["device"], strict=True)]
    bad = bad.assign(label=label.str.replace("  ", " "), general=general)
    per_series = (
        bad.groupby(["series", "status", "general"], sort=True)
        .agg(label=("label", lambda labels: "; ".join(sorted(set(labels)))),
             error=("error", lambda errors: errors.iloc[0] if errors.nunique() == 1 else None))
        .reset_index()
    )
    grouped = (
        per_series.groupby(["status", "general", "label"], sort=False)
        .agg(series=("series", ", ".join),
             error=("error", lambda errors: errors.iloc[0] if errors.nunique(dropna=False) == 1
                    else None))
        .reset_index()
    )
    return pd.DataFrame(
        {
            "backend": grouped["series"],
            "status": grouped["status"],
            "workloads": grouped["label"],
            "reason": grouped["error"].where(grouped["error"].notna(), grouped["general"]),
        }
    ).sort_values(["status", "reason", "backend"], kind="stable", ignore_index=True)


# How an op ran, best first; an op counts where its worst call or cell ran.
_HOW = ("kernel", "decomposed", "fallback")
_CELL_HOW = {"pass by kernel": "kernel", "pass decomposed": "decomposed", "fallback": "fallback"}


def _short(host: str) -> str:
    """A host name up to its first dot."""
    return host.split(".")[0]


def _bench_ops(group: pd.DataFrame) -> dict[str, set[str]]:
    """Ops of a series' measurements by where they ran (an op may count in several)."""
    how: dict[str, set[str]] = {h: set() for h in _HOW}
    for ops in group["ops"]:
        for op, where in ops.items():
            for place in where:
                how.setdefault(place.rsplit(":", 1)[-1], set()).add(op)
    return how


def _conformance_ops(run: ConformanceRun) -> dict[str, set[str]]:
    """Ops of a conformance run by the worst way their passing or falling-back cells ran."""
    worst: dict[str, str] = {}
    for c in run.cells:
        how = _CELL_HOW.get(category(c["status"], c.get("ran", "")))
        if how and _HOW.index(how) >= _HOW.index(worst.get(c["op"], "kernel")):
            worst[c["op"]] = how
    out: dict[str, set[str]] = {h: set() for h in _HOW}
    for op, how in worst.items():
        out[how].add(op)
    return out


def _matching(runs: list[ConformanceRun], host: str, backend: str, device: str):
    """The last conformance run of this backend's device on this host (a run or results
    file that does not name its host matches any)."""
    found = [
        r
        for r in runs
        if r.backend == backend
        and r.device == device
        and (not r.host or host == "unknown" or _short(r.host) == host)
    ]
    return found[-1] if found else None


def _coverage_row(label: str, how: dict[str, set[str]], source: str) -> dict:
    """The op-count columns of a coverage row."""
    return {
        "backend": label,
        "ops by kernel": len(how["kernel"]),
        "ops decomposed": len(how["decomposed"]),
        "ops on CPU fallback": len(how["fallback"]),
        "fallback ops": ", ".join(sorted(how["fallback"])),
        "ops counted from": source,
    }


def coverage_table(frame: pd.DataFrame, conformance: list[ConformanceRun]) -> pd.DataFrame:
    """Per series: statuses, ops by kernel / decomposed / on the CPU fallback (from the
    device's conformance run where given, else from the ops its workloads ran), the bench's
    fallback calls and bytes moved, and the workloads skipped; then a row per conformance
    run without measurements."""
    rows, used = [], set()
    for series, group in frame.groupby("series") if not frame.empty else ():
        first = group.iloc[0]
        run = _matching(conformance, first["host"], first["backend"], first["device"])
        if run is None:
            row = _coverage_row(series, _bench_ops(group), "bench placements")
        else:
            used.add(id(run))
            row = _coverage_row(series, _conformance_ops(run), f"conformance ({run.path.name})")
        counts = group["status"].value_counts()
        rows.append(
            {
                **row,
                "measurements": len(group),
                **{s: int(counts.get(s, 0)) for s in ("ok", "failed", "skipped", "timeout")},
                "fallback calls": int(group["fallbacks"].sum()),
                "bytes moved": int(group["bytes_moved"].sum()),
                "not run (skipped)": ", ".join(
                    sorted(set(group.loc[group["status"] == "skipped", "workload"]))
                ),
            }
        )
    hosts = set(frame["host"]) if not frame.empty else set()
    hosts |= {_short(r.host) for r in conformance if r.host}
    for run in conformance:
        if id(run) not in used:
            label = run.device + (f"@{_short(run.host)}" if len(hosts) > 1 and run.host else "")
            row = _coverage_row(label, _conformance_ops(run), f"conformance ({run.path.name})")
            none = dict.fromkeys(("measurements", "ok", "failed", "skipped", "timeout"), 0)
            rows.append(
                {**row, **none, "fallback calls": 0, "bytes moved": 0, "not run (skipped)": ""}
            )
    columns = [
        "backend",
        "measurements",
        "ok",
        "failed",
        "skipped",
        "timeout",
        "ops by kernel",
        "ops decomposed",
        "ops on CPU fallback",
        "ops counted from",
        "fallback calls",
        "fallback ops",
        "bytes moved",
        "not run (skipped)",
    ]
    return pd.DataFrame(rows, columns=columns)


def conformance_summary(runs: list[ConformanceRun]) -> pd.DataFrame:
    """Per conformance run: its file, host, backend and device, ok, the cells by how they
    passed (by kernel, decomposed) or not (fallback, unsupported, fail), failed layers."""
    rows = []
    for r in runs:
        cats = pd.Series(
            [category(c["status"], c.get("ran", "")) for c in r.cells], dtype=object
        ).value_counts()
        rows.append(
            {
                "file": r.path.name,
                "host": _short(r.host),
                "backend": r.backend,
                "device": r.device,
                "ok": r.ok,
                "cells": len(r.cells),
                **{c: int(cats.get(c, 0)) for c in CATEGORIES},
                "jit cells (path)": jit_cells(r),
                "failed layers": "; ".join(
                    f"{layer['name']}: {layer.get('detail', '')}"
                    for layer in r.layers
                    if not layer["ok"]
                ),
            }
        )
    return pd.DataFrame(rows)


def conformance_fallback_ops(runs: list[ConformanceRun]) -> pd.DataFrame:
    """Per conformance run with any: the ops with a cell that ran on the CPU fallback."""
    cells = cells_frame(runs)
    fell = cells[cells["category"] == "fallback"]
    if fell.empty:
        return pd.DataFrame()
    grouped = fell.groupby(["file", "host", "backend", "device"], sort=False)["op"]
    table = grouped.agg(lambda ops: ", ".join(sorted(set(ops)))).rename("ops that fall back")
    return pd.concat([grouped.nunique().rename("ops"), table], axis=1).reset_index()


def conformance_failures(runs: list[ConformanceRun]) -> pd.DataFrame:
    """Every failed cell, op or jit, with its whole error."""
    cells = cells_frame(runs)
    failed = cells[cells["status"] == "fail"][["host", "backend", "device", "op", "dtype", "error"]]
    graphs = failed_graphs_frame(runs)
    return pd.concat([f for f in (failed, graphs) if not f.empty] or [failed], ignore_index=True)


def numbered_points(points: pd.DataFrame) -> pd.DataFrame:
    """A device's measurements in a fixed order (suite, workload, params, dtype), numbered
    from 1 in a `number` column: the numbers its pictures draw beside the points."""
    ordered = points.sort_values([*KEY_COLUMNS], kind="stable").reset_index(drop=True)
    return ordered.assign(number=range(1, len(ordered) + 1))


def roofline_points_table(points: pd.DataFrame) -> pd.DataFrame:
    """What each numbered point of a roofline is: workload, params, dtype, intensity,
    GFLOP/s, % of peak, and GFLOP per joule where the energy was read."""
    table = pd.DataFrame({
        "#": points["number"],
        "workload": points["suite"] + "/" + points["workload"],
        "params": points["params"],
        "dtype": points["dtype"],
        "FLOP/byte": (points["flops"] / points["bytes"]).map(_number),
        "GFLOP/s": points["gflops"].map(_number),
        "% peak": points.apply(_pct_of_peak, axis=1),
    })
    if "gflops_per_joule" in points and points["gflops_per_joule"].notna().any():
        table["GFLOP/J"] = points["gflops_per_joule"].map(_number)
    return table


def energy_points_table(points: pd.DataFrame) -> pd.DataFrame:
    """What each numbered point of a speed-against-energy picture is: workload, params,
    dtype, median time, joules per call, mean watts, items and GFLOP per joule."""
    return pd.DataFrame({
        "#": points["number"],
        "workload": points["suite"] + "/" + points["workload"],
        "params": points["params"],
        "dtype": points["dtype"],
        "median": points["median"].map(format_seconds),
        "J/call": points["joules_per_call"].map(_number),
        "W": points["watts"].map(lambda v: _number(v, ".3g")),
        "items/J": points["items_per_joule"].map(_number),
        "GFLOP/J": points["gflops_per_joule"].map(_number),
    })
