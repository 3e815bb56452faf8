"""The report's plots as PNG bytes: speedup bars, rooflines (numbered points) and work per
joule, speed against energy, sample distributions."""

from __future__ import annotations

import functools
import io
from collections.abc import Callable

import matplotlib
import numpy as np
import pandas as pd
from matplotlib import ticker
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from benchmarks.schema.records import DeviceRecord

# Rows in one plot at most; the report's caption says which rows a cut plot shows.
MAX_ROWS = 40


def _figure(width: float, height: float) -> tuple[Figure, Axes]:
    """A figure with one axes, rendered by Agg (no pyplot, no GUI, no global state)."""
    fig = Figure(figsize=(width, height), layout="tight")
    return fig, fig.subplots()


def _as_written(plot: Callable[..., bytes]) -> Callable[..., bytes]:
    """A plot whose text (workload, device and dtype names from the results files) is drawn
    as written: a '$' there would otherwise start mathtext, and fail to parse."""

    @functools.wraps(plot)
    def draw(*args, **kwargs) -> bytes:
        with matplotlib.rc_context({"text.parse_math": False}):
            return plot(*args, **kwargs)

    return draw


def _png(fig: Figure) -> bytes:
    """Render a figure to PNG bytes."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    return buf.getvalue()


LABEL_CHARS = 80


def _short(text: str) -> str:
    """`text` cut to LABEL_CHARS with an ellipsis in the middle (long params stay readable
    and the axes keep room for the plot)."""
    if len(text) <= LABEL_CHARS:
        return text
    half = (LABEL_CHARS - 1) // 2
    return text[:half] + "…" + text[-half:]


def _labels(data: pd.DataFrame) -> pd.Series:
    """One unique label per row: suite/workload params dtype, at most LABEL_CHARS long
    (numbered where cutting made two alike)."""
    labels = (
        data["suite"] + "/" + data["workload"] + " " + data["params"] + " " + data["dtype"]
    ).map(_short)
    alike = labels.duplicated(keep=False)
    number = labels.groupby(labels).cumcount().add(1).astype(str)
    return labels.where(~alike, labels + " #" + number)


def extremes(data: pd.DataFrame, column: str, n: int = MAX_ROWS) -> pd.DataFrame:
    """`data` sorted by `column`: every row when they are `n` or fewer, else the `n // 2`
    lowest and the rest of `n` highest (a plot stays readable; its caption says so)."""
    ordered = data.sort_values(column, kind="stable")
    if len(ordered) <= n:
        return ordered
    return pd.concat([ordered.head(n // 2), ordered.tail(n - n // 2)])


def _height(rows: int) -> float:
    """Inches of a horizontal plot with `rows` labelled rows."""
    return 1.5 + 0.28 * rows


@_as_written
def speedup_bars(long: pd.DataFrame, baseline: str, series: str) -> bytes:
    """Horizontal bars of `series`' speedup vs `baseline` per workload (every row given, the
    first at the top), log scale, CI whiskers."""
    data = long.iloc[::-1]
    labels = _labels(data)
    fig, ax = _figure(9, _height(len(data)))
    lower = (data["speedup"] - data["ci_low"]).clip(lower=0).fillna(0)
    upper = (data["ci_high"] - data["speedup"]).clip(lower=0).fillna(0)
    colors = np.where(data["speedup"] >= 1, "tab:green", "tab:red")
    ax.barh(labels, data["speedup"] - 1.0, left=1.0, xerr=[lower, upper], color=colors)
    ax.axvline(1.0, color="black", linewidth=0.8)
    _log_axes(ax, y=False)
    ax.set_title(f"{series} vs {baseline}")
    ax.set_xlabel(f"speedup vs {baseline} (median ratio, 99% bootstrap CI)")
    return _png(fig)


def _log_axes(ax: Axes, x: bool = True, y: bool = True) -> None:
    """Log scales whose tick labels are plain numbers (the plots draw text as written, so
    matplotlib's mathtext labels such as 10^2 would show as their source)."""
    plain = ticker.FuncFormatter(lambda v, _: f"{v:g}")
    for on, scale, axis in ((x, ax.set_xscale, ax.xaxis), (y, ax.set_yscale, ax.yaxis)):
        if on:
            scale("log")
            axis.set_major_formatter(plain)
            axis.set_minor_formatter(ticker.NullFormatter())


def _numbered(ax: Axes, x: pd.Series, y: pd.Series, numbers: pd.Series) -> None:
    """Each point's number beside it (points that coincide share one label, "1,2"): the
    table beside the picture names each workload."""
    spots: dict[tuple[float, float], list[str]] = {}
    for xi, yi, n in zip(x, y, numbers, strict=True):
        spots.setdefault((float(f"{xi:.3g}"), float(f"{yi:.3g}")), []).append(str(n))
    for (xi, yi), ns in spots.items():
        ax.annotate(",".join(ns), (xi, yi), xytext=(3, 3), textcoords="offset points",
                    fontsize=7)


def _dtype_points(ax: Axes, points: pd.DataFrame, x: pd.Series, y: str, color: dict) -> None:
    """The points by dtype (a colour each), numbered by their `number` column."""
    for dtype, group in points.groupby("dtype"):
        ax.scatter(x[group.index], group[y], s=18, color=color.get(dtype, "C0"),
                   edgecolors="black", linewidths=0.5, label=str(dtype))
    _numbered(ax, x, points[y], points["number"])


@_as_written
def roofline(device: DeviceRecord, points: pd.DataFrame) -> bytes:
    """Roofline of one device from its measured peaks, with its measurements as points,
    each numbered (`points["number"]`: the table beside the picture names them)."""
    gbps = device.peaks.get("gbps")
    peaks = device.peaks.get("gflops") or {}
    intensity = points["flops"] / points["bytes"]
    lo = min([0.01, *intensity.tolist()]) / 2
    hi = max([100.0, *intensity.tolist()]) * 2
    x = np.geomspace(lo, hi, 200)
    fig, ax = _figure(7, 4.5)
    dtypes = sorted(set(peaks) | set(points["dtype"]))
    color = {d: f"C{i % 10}" for i, d in enumerate(dtypes)}
    for dtype, peak in sorted(peaks.items()):
        roof = np.minimum(peak, x * gbps) if gbps else np.full_like(x, peak)
        ax.plot(x, roof, color=color[dtype], label=f"peak {dtype}: {peak:.4g} GFLOP/s")
    if gbps:
        ax.plot(x, x * gbps, linestyle=":", color="grey", label=f"bandwidth {gbps:.4g} GB/s")
    _dtype_points(ax, points, intensity, "gflops", color)
    _log_axes(ax)
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("GFLOP/s")
    ax.set_title(f"roofline: {device.backend} {device.name}")
    ax.legend(fontsize=7)
    return _png(fig)


@_as_written
def work_per_joule(device: DeviceRecord, points: pd.DataFrame, counter: str) -> bytes:
    """GFLOP per joule of one device's measurements against their arithmetic intensity,
    numbered as in its roofline."""
    intensity = points["flops"] / points["bytes"]
    fig, ax = _figure(7, 4.5)
    color = {d: f"C{i % 10}" for i, d in enumerate(sorted(set(points["dtype"])))}
    _dtype_points(ax, points, intensity, "gflops_per_joule", color)
    _log_axes(ax)
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("GFLOP/J")
    ax.set_title(f"work per joule: {device.backend} {device.name}\n({counter})", fontsize=9)
    ax.legend(fontsize=7)
    return _png(fig)


@_as_written
def speed_energy(device: str, points: pd.DataFrame, counter: str) -> bytes:
    """Time against energy per call of one device's measurements (numbered; the table
    beside names them), log-log, with lines of constant mean power: a point down and to
    the left is faster and cheaper."""
    fig, ax = _figure(7, 4.5)
    x, y = points["joules_per_call"], points["median"]
    color = {d: f"C{i % 10}" for i, d in enumerate(sorted(set(points["dtype"])))}
    _dtype_points(ax, points, x, "median", color)
    lo, hi = x.min() / 2, x.max() * 2
    bottom, top = y.min() / 3, y.max() * 3
    watts = points["watts"]
    for w in 10.0 ** np.arange(np.floor(np.log10(watts.min())), np.ceil(np.log10(watts.max())) + 1):
        joules = np.geomspace(lo, hi, 50)
        ax.plot(joules, joules / w, linestyle=":", color="grey", linewidth=0.8)
        at = min(max(w * np.sqrt(bottom * top), lo), hi)  # on the line, inside the axes
        ax.annotate(f"{w:g} W", (at, at / w), fontsize=7, color="grey")
    ax.set_xlim(lo, hi)
    ax.set_ylim(bottom, top)
    _log_axes(ax)
    ax.set_xlabel("energy per call (J)")
    ax.set_ylabel("time per call (s, median)")
    ax.set_title(f"speed against energy: {device}\n({counter})", fontsize=9)
    ax.legend(fontsize=7)
    return _png(fig)


@_as_written
def distributions(frame: pd.DataFrame, series: str) -> bytes:
    """Box plots of `series`' samples relative to each measurement's median (every row
    given, the first at the top): spread at a glance."""
    data = frame.iloc[::-1]
    labels = _labels(data)
    relative = [np.asarray(s) / m for s, m in zip(data["samples"], data["median"], strict=True)]
    fig, ax = _figure(9, _height(len(data)))
    ax.boxplot(relative, orientation="horizontal", tick_labels=list(labels), showfliers=True)
    ax.axvline(1.0, color="black", linewidth=0.8)
    _log_axes(ax, y=False)
    ax.set_title(series)
    ax.set_xlabel("sample / median (log scale)")
    return _png(fig)
