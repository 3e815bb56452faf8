"""Build report.md, a self-contained report.html and results.csv from result files."""

from __future__ import annotations

import base64
import html
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from benchmarks.schema import Results
from reports import plots, tables
from reports.frame import load_frame

CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 78em; color: #222; }
h1, h2, h3 { font-weight: 600; } h2 { border-bottom: 1px solid #ccc; padding-bottom: .2em; }
table { border-collapse: collapse; font-size: .85em; margin: .8em 0; }
th, td { border: 1px solid #ddd; padding: .25em .6em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; } tr:nth-child(even) td { background: #fafafa; }
img { max-width: 100%; } code { background: #f3f3f3; padding: 0 .2em; }
"""


class ReportError(Exception):
    """The report cannot be written: the message names the directory and the cause."""


@dataclass
class Section:
    """A titled part of the report: paragraphs, tables and PNG images, in order."""

    title: str
    blocks: list[str | pd.DataFrame | tuple[str, bytes]] = field(default_factory=list)


def _runs_table(results: list[Results]) -> pd.DataFrame:
    """One row per run: times, host, git state and fingerprint."""
    rows = []
    for r in results:
        run, host, git = r.run, r.run.host, r.run.git or {}
        memory = host.get("memory_bytes")
        rows.append(
            {
                "run": run.id,
                "start (UTC)": run.start,
                "end (UTC)": run.end or "",
                "completed": r.completed,
                "cpu": host.get("cpu", ""),
                "cores": host.get("cores"),
                "memory GiB": round(memory / 2**30, 1) if memory else None,
                "os": host.get("os", ""),
                "python": host.get("python", ""),
                "git": str(git.get("commit") or "")[:10] + (" (dirty)" if git.get("dirty") else ""),
                "load at start": f"{run.loadavg[0]:.2f}" if run.loadavg else "",
                "fingerprint": run.fingerprint[:12],
            }
        )
    return pd.DataFrame(rows)


def _devices_table(results: list[Results]) -> pd.DataFrame:
    """One row per device of each run with its measured peaks."""
    rows = []
    for r in results:
        for d in r.run.devices:
            flops = d.peaks.get("gflops") or {}
            rows.append(
                {
                    "run": r.run.id,
                    "backend": d.backend,
                    "device": d.name,
                    "name": d.capabilities.get("name", ""),
                    "peak GFLOP/s": ", ".join(f"{k}: {v:.4g}" for k, v in sorted(flops.items())),
                    "peak GB/s": f"{d.peaks['gbps']:.4g}" if d.peaks.get("gbps") else "",
                    "peaks measured in run": d.peaks_from or "",
                }
            )
    return pd.DataFrame(rows)


def build_sections(
    frame: pd.DataFrame, results: list[Results], baseline: str | None
) -> list[Section]:
    """The report's content, independent of the output format."""
    sections = [Section("Runs", [_runs_table(results)])]
    devices = _devices_table(results)
    sections.append(
        Section(
            "Devices and measured peaks",
            [
                devices if not devices.empty else "No devices recorded.",
                "Peaks are measured by `hal bench --suite peak` (GEMM sweep; STREAM scale, "
                "add and triad).",
            ],
        )
    )
    if frame.empty:
        sections.append(Section("Measurements", ["No measurements in these files."]))
        return sections
    for suite, group in frame.groupby("suite", sort=True):
        sections.append(Section(f"Suite `{suite}`", [tables.suite_table(group)]))
    base = baseline or tables.default_baseline(frame)
    long = tables.speedups(frame, base)
    speed = Section(
        f"Speedup vs `{base}`",
        [
            "Ratio of medians (baseline time / backend time; >1 is faster than the baseline) "
            "with a 99% bootstrap CI; the last row is the geometric mean over workloads."
        ],
    )
    if long.empty:
        speed.blocks.append(f"No workload measured `ok` on both `{base}` and another backend.")
    else:
        speed.blocks += [
            tables.speedup_matrix(long).reset_index(names="workload"),
            ("speedup.png", plots.speedup_bars(long, base)),
        ]
    sections.append(speed)
    sections.append(Section("Op coverage and fallbacks", [tables.coverage_table(frame)]))
    roof = Section("Rooflines")
    for r in results:
        for d in r.run.devices:
            pts = frame[
                (frame["run"] == r.run.id)
                & (frame["backend"] == d.backend)
                & (frame["device"] == d.name)
                & (frame["status"] == "ok")
            ]
            pts = pts[
                (pts["flops"].fillna(0) > 0) & (pts["bytes"].fillna(0) > 0) & pts["gflops"].notna()
            ]
            if d.peaks.get("gflops") or d.peaks.get("gbps"):
                name = f"roofline-{r.run.id}-{d.backend}-{d.name}.png".replace(":", "_")
                roof.blocks.append((name, plots.roofline(d, pts)))
    if not roof.blocks:
        roof.blocks.append("No measured peaks in these runs: run `hal bench --suite peak`.")
    sections.append(roof)
    if frame["samples"].map(len).gt(0).any():
        sections.append(
            Section(
                "Sample distributions",
                [
                    "Each measurement's samples divided by its median (at most 40 shown).",
                    ("distributions.png", plots.distributions(frame)),
                ],
            )
        )
    return sections


def render_markdown(sections: list[Section]) -> str:
    """Markdown with pipe tables; images are referenced as files beside report.md."""
    out = ["# hal benchmark report", ""]
    for s in sections:
        out += [f"## {s.title}", ""]
        for b in s.blocks:
            if isinstance(b, pd.DataFrame):
                out += [b.to_markdown(index=False), ""]
            elif isinstance(b, tuple):
                out += [f"![{b[0]}]({b[0]})", ""]
            else:
                out += [b, ""]
    return "\n".join(out)


def _inline_code(text: str) -> str:
    """Escape text for HTML and render `code` spans."""
    parts = html.escape(text).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


def render_html(sections: list[Section]) -> str:
    """One self-contained HTML page: inline CSS, plots embedded as base64 PNG."""
    body = ["<h1>hal benchmark report</h1>"]
    for s in sections:
        body.append(f"<h2>{_inline_code(s.title)}</h2>")
        for b in s.blocks:
            if isinstance(b, pd.DataFrame):
                body.append(b.to_html(index=False, border=0, na_rep=""))
            elif isinstance(b, tuple):
                data = base64.b64encode(b[1]).decode("ascii")
                body.append(f'<img alt="{html.escape(b[0])}" src="data:image/png;base64,{data}">')
            else:
                body.append(f"<p>{_inline_code(b)}</p>")
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>hal benchmark report'
        f"</title><style>{CSS}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n"
    )


def csv_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """The measurements as flat CSV columns (samples and placement maps left out)."""
    if frame.empty:
        return frame
    flat = frame.drop(columns=["samples", "ops", "params_json"])
    return flat.assign(fallback_ops=frame["fallback_ops"].map(";".join))


def build_report(paths: list[Path], out_dir: Path, baseline: str | None = None) -> list[Path]:
    """Read result files and write report.md, report.html, results.csv and PNG plots.

    Raises `benchmarks.schema.ResultsError` for an unreadable results file and
    `ReportError` when `out_dir` cannot be written. Returns the files written.
    """
    frame, results = load_frame(paths)
    if baseline is not None and not frame.empty and baseline not in set(frame["series"]):
        valid = ", ".join(sorted(frame["series"].unique()))
        raise ReportError(f"baseline {baseline!r} is not in these results; choose one of {valid}")
    sections = build_sections(frame, results, baseline)
    out_dir = Path(out_dir)
    written = [out_dir / "report.md", out_dir / "report.html", out_dir / "results.csv"]
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        written[0].write_text(render_markdown(sections), encoding="utf-8")
        written[1].write_text(render_html(sections), encoding="utf-8")
        csv_frame(frame).to_csv(written[2], index=False)
        for s in sections:
            for b in s.blocks:
                if isinstance(b, tuple):
                    (out_dir / b[0]).write_bytes(b[1])
                    written.append(out_dir / b[0])
    except OSError as exc:
        raise ReportError(f"cannot write the report to {out_dir}: {exc.strerror or exc}") from exc
    return written
