"""The report's tables, built from the measurements frame of `reports.frame`."""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchmarks.stats import geometric_mean, speedup
from reports.frame import KEY_COLUMNS, format_seconds


def _number(value: object, fmt: str = ".4g") -> str:
    """A figure formatted, or empty when missing."""
    return "" if value is None or pd.isna(value) else format(value, fmt)


def _ci(row: pd.Series) -> str:
    """The 99% CI of the median as `[low, high]`."""
    if row["ci_low"] is None or pd.isna(row["ci_low"]):
        return ""
    return f"[{format_seconds(row['ci_low'])}, {format_seconds(row['ci_high'])}]"


def suite_table(frame: pd.DataFrame) -> pd.DataFrame:
    """One suite's rows: workload x backend with median, CI, CV, rates, % of peak, status."""
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
            "% peak": rows["pct_of_peak"].map(lambda v: _number(v, ".1f")),
            "status": rows["status"].where(
                rows["error"] == "", rows["status"] + ": " + rows["error"].str.slice(0, 80)
            ),
        }
    ).reset_index(drop=True)


def default_baseline(frame: pd.DataFrame) -> str:
    """The baseline series: `cpu` when present, else the first series alphabetically."""
    series = sorted(frame["series"].unique())
    return "cpu" if "cpu" in series else series[0]


def speedups(frame: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """Long table of speedups `median(baseline) / median(series)` per workload, with CI.

    Only measurements that are `ok` on both sides are compared; without raw samples the
    CI is left empty.
    """
    ok = frame[frame["status"] == "ok"]
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
            )
        )
    return pd.DataFrame(rows, columns=[*KEY_COLUMNS, "series", "speedup", "ci_low", "ci_high"])


def speedup_matrix(long: pd.DataFrame) -> pd.DataFrame:
    """Workload x series matrix of `speedup [CI]` strings with a geometric-mean row."""
    if long.empty:
        return pd.DataFrame()

    def cell(r: pd.Series) -> str:
        ci = "" if pd.isna(r["ci_low"]) else f" [{r['ci_low']:.2f}, {r['ci_high']:.2f}]"
        return f"{r['speedup']:.2f}x{ci}"

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
    geo = long.groupby("series")["speedup"].apply(geometric_mean)
    matrix.loc["geometric mean"] = [f"{geo[c]:.2f}x" for c in matrix.columns]
    matrix.columns.name = None
    return matrix


def coverage_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per backend: statuses, ops run by its kernels / decomposed / on the CPU fallback."""
    rows = []
    for series, group in frame.groupby("series"):
        how: dict[str, set[str]] = {"kernel": set(), "decomposed": set(), "fallback": set()}
        for ops in group["ops"]:
            for op, where in ops.items():
                for place in where:
                    how.setdefault(place.rsplit(":", 1)[-1], set()).add(op)
        counts = group["status"].value_counts()
        rows.append(
            {
                "backend": series,
                "measurements": len(group),
                **{s: int(counts.get(s, 0)) for s in ("ok", "failed", "skipped", "timeout")},
                "ops by kernel": len(how["kernel"]),
                "ops decomposed": len(how["decomposed"]),
                "ops on CPU fallback": len(how["fallback"]),
                "fallback calls": int(group["fallbacks"].sum()),
                "fallback ops": ", ".join(sorted(how["fallback"])),
                "bytes moved": int(group["bytes_moved"].sum()),
                "not run (skipped)": ", ".join(
                    sorted(set(group.loc[group["status"] == "skipped", "workload"]))
                ),
            }
        )
    return pd.DataFrame(rows)
