"""Build report.md, a self-contained report.html and results.csv from result files."""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from benchmarks.schema.records import Results, RunRecord
from reports import claims, plots, tables
from reports.figures import autograd, int8, jit, mlperf, parallel, science
from reports.frame import Inputs, load_inputs
from reports.section import Section

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


def _devices_text(run: RunRecord) -> str:
    """A run's devices with their names, e.g. `cpu:0 (AMD EPYC); null:0 (null device)`."""
    return "; ".join(
        f"{d.name} ({d.capabilities['name']})" if d.capabilities.get("name") else d.name
        for d in run.devices
    )


def _runs_table(results: list[Results]) -> pd.DataFrame:
    """One row per results file: its run, host, devices, times, git state and fingerprint."""
    rows = []
    for r in results:
        run, host, git = r.run, r.run.host, r.run.git or {}
        memory = host.get("memory_bytes")
        rows.append(
            {
                "file": r.path.name,
                "run": run.id,
                "host": host.get("hostname") or "",
                "devices": _devices_text(run),
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
                    "peak GB/s": tables.bandwidth_cell(d.peaks),
                    "peaks measured in run": d.peaks_from or "",
                }
            )
    return pd.DataFrame(rows)


# Each part of the report: (inputs, baseline series or None) -> its sections, maybe none.
Part = Callable[[Inputs, str | None], list[Section]]


def runs_part(inputs: Inputs, baseline: str | None) -> list[Section]:
    """The results files: run, host, devices, software and load."""
    if not inputs.results:
        return [Section("Runs", ["No benchmark runs in these files."])]
    return [Section("Runs", [_runs_table(inputs.results)])]


def devices_part(inputs: Inputs, baseline: str | None) -> list[Section]:
    """The devices of each run with their measured peaks."""
    devices = _devices_table(inputs.results)
    return [
        Section(
            "Devices and measured peaks",
            [
                devices if not devices.empty else "No devices recorded.",
                "Peaks are measured by `hal bench --suite peak` (GEMM sweep; STREAM scale, "
                "add and triad).",
            ],
        )
    ]


def claims_part(inputs: Inputs, baseline: str | None) -> list[Section]:
    """Each published claim beside what the seed suite measured (none without seed results)."""
    table = claims.claims_table(inputs.results)
    if table.empty:
        return []
    return [Section("Claims vs measured", [
        "The published claims (`benchmarks/claims.py`) beside this run's `seed` suite: the "
        "best measured candidate against its baseline (a peer named with its version, or hal "
        "on the same backend), both figures, our ratio beside the published one (>1: the "
        "candidate is better), the output checks, and the whole reason wherever a side could "
        "not be measured here. Published figures come from other hardware: compare ratios, "
        "not absolute figures.", table])]


def conformance_part(inputs: Inputs, baseline: str | None) -> list[Section]:
    """Each conformance run's cells by outcome, the ops that fall back, the failures."""
    runs = inputs.conformance
    if not runs:
        return []
    section = Section(
        "Conformance",
        [
            "`hal conformance` cells (op x dtype against the numpy reference): passed by "
            "the device's kernel or by the op's decomposition, correct but with ops on the "
            "CPU fallback, unsupported (declared by the device), failed.",
            tables.conformance_summary(runs),
        ],
    )
    fallback = tables.conformance_fallback_ops(runs)
    if not fallback.empty:
        section.blocks += ["Ops with a cell that ran on the CPU fallback:", fallback]
    failures = tables.conformance_failures(runs)
    section.blocks.append(failures if not failures.empty else "No cell failed.")
    return [section]


def suites_part(inputs: Inputs, baseline: str | None) -> list[Section]:
    """One table per suite: every measurement with its figures and status."""
    if inputs.frame.empty:
        return [Section("Measurements", ["No measurements in these files."])]
    return [
        Section(f"Suite `{suite}`", [tables.suite_table(group)])
        for suite, group in inputs.frame.groupby("suite", sort=True)
    ]


FIGURES = (jit, int8, mlperf, parallel, science, autograd)


def figures_part(inputs: Inputs, baseline: str | None) -> list[Section]:
    """The figure sections of the suites that have them (`reports.figures`)."""
    return [section for figures in FIGURES for section in figures.sections(inputs.results)]


def skipped_part(inputs: Inputs, baseline: str | None) -> list[Section]:
    """Measurements skipped, failed or timed out, grouped by their whole reason."""
    table = tables.skipped_table(inputs.frame) if not inputs.frame.empty else pd.DataFrame()
    if table.empty:
        return []
    return [
        Section(
            "Skipped and failed",
            [
                "Every measurement not `ok`, with its whole reason; workloads sharing a backend, "
                "status and reason are listed together.",
                table,
            ],
        )
    ]


FALLBACK_NOTE = (
    f"{tables.FALLBACK_MARK} ran ops on the CPU fallback (`hal bench --fallback warn` or "
    "`allow`): the time includes CPU work and copies; the geometric mean without "
    f"{tables.FALLBACK_MARK} leaves these out."
)


def speedup_part(inputs: Inputs, baseline: str | None) -> list[Section]:
    """Speedups of every series against the baseline series, with CIs and geometric means."""
    if inputs.frame.empty:
        return []
    long = tables.speedups(inputs.frame, baseline)
    speed = Section(
        f"Speedup vs `{baseline}`",
        [
            "Ratio of medians (baseline time / backend time; >1 is faster than the baseline) "
            "with a 99% bootstrap CI, and the geometric mean over workloads."
        ],
    )
    if long.empty:
        speed.blocks.append(f"No workload measured `ok` on both `{baseline}` and another backend.")
        return [speed]
    speed.blocks += [
        tables.speedup_matrix(long).reset_index(names="workload"),
        ("speedup.png", plots.speedup_bars(long, baseline)),
    ]
    if long["fallback"].any():
        speed.blocks.append(FALLBACK_NOTE)
    return [speed]


def across_part(inputs: Inputs, baseline: str | None) -> list[Section]:
    """Median times of each workload across series (devices, hosts, runs) side by side."""
    table = tables.across_table(inputs.frame, baseline) if not inputs.frame.empty else None
    if table is None or table.empty:
        return []
    blocks: list = [
        f"Median time per call of every workload measured `ok` by two or more series, with "
        f"its ratio to `{baseline}` (baseline time / series time; >1 is faster); the last "
        "row is the geometric mean of each series' ratios.",
        table,
    ]
    if table.map(lambda v: isinstance(v, str) and v.endswith(tables.FALLBACK_MARK)).any(axis=None):
        blocks.append(FALLBACK_NOTE)
    return [Section("Across devices and runs", blocks)]


def coverage_part(inputs: Inputs, baseline: str | None) -> list[Section]:
    """Ops by kernel, decomposed and on the CPU fallback per series; fallback calls."""
    frame = inputs.frame
    if frame.empty and not inputs.conformance:
        return []
    text = [
        "Ops by kernel, decomposed and on the CPU fallback are counted from the device's "
        "conformance results where given (every op x dtype), else from the ops its "
        "workloads ran. Fallback calls and bytes moved are those of one call of each "
        "workload."
    ]
    if not frame.empty and frame["fallbacks"].sum() == 0:
        if (frame["fallback_policy"] == "error").all():
            text.append(
                "No fallback calls: `hal bench` refused the CPU fallback in these runs (the "
                "default `--fallback error` skips a workload that needs it, with the reason); "
                "`hal bench --fallback allow` (or `warn`) measures such workloads and counts "
                "their fallback calls."
            )
    table = tables.coverage_table(frame, inputs.conformance)
    return [Section("Op coverage and fallbacks", [*text, table])]


def rooflines_part(inputs: Inputs, baseline: str | None) -> list[Section]:
    """A roofline per device with measured peaks, the run's measurements on it."""
    frame = inputs.frame
    if frame.empty:
        return []
    roof = Section("Rooflines")
    taken: set[str] = set()
    for r in inputs.results:
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
                name = _plot_file(f"roofline-{r.run.id}-{d.backend}-{d.name}", taken)
                roof.blocks.append((name, plots.roofline(d, pts)))
    if not roof.blocks:
        roof.blocks.append("No measured peaks in these runs: run `hal bench --suite peak`.")
    return [roof]


def _plot_file(label: str, taken: set[str]) -> str:
    """A PNG file name for a plot labelled with text from the results files: every character
    but letters, digits, '.', '_' and '-' becomes '_' (so the file stays in the report's
    directory), and a name already taken gets a number."""
    stem = re.sub(r"[^A-Za-z0-9._-]", "_", label)
    name, k = f"{stem}.png", 1
    while name in taken:
        k += 1
        name = f"{stem}-{k}.png"
    taken.add(name)
    return name


def distributions_part(inputs: Inputs, baseline: str | None) -> list[Section]:
    """Each measurement's samples relative to its median."""
    frame = inputs.frame
    if frame.empty or not frame["samples"].map(len).gt(0).any():
        return []
    return [
        Section(
            "Sample distributions",
            [
                "Each measurement's samples divided by its median (at most 40 shown).",
                ("distributions.png", plots.distributions(frame)),
            ],
        )
    ]


PARTS: list[Part] = [
    runs_part,
    devices_part,
    claims_part,
    conformance_part,
    suites_part,
    figures_part,
    skipped_part,
    speedup_part,
    across_part,
    coverage_part,
    rooflines_part,
    distributions_part,
]


def build_sections(inputs: Inputs, baseline: str | None) -> list[Section]:
    """The report's content, independent of the output format: the sections of each part
    in `PARTS`, in order. `baseline` is the series speedups compare against (default: cpu
    when present, else the first series)."""
    frame = inputs.frame
    base = baseline or (tables.default_baseline(frame) if not frame.empty else None)
    return [section for part in PARTS for section in part(inputs, base)]


def render_markdown(sections: list[Section]) -> str:
    """Markdown with pipe tables (a `|` or line break in a cell escaped); images are
    referenced as files beside report.md."""
    out = ["# hal benchmark report", ""]
    for s in sections:
        out += [f"## {s.title}", ""]
        for b in s.blocks:
            if isinstance(b, pd.DataFrame):
                cells = b.map(lambda v: _markdown_cell(v) if isinstance(v, str) else v)
                out += [cells.to_markdown(index=False), ""]
            elif isinstance(b, tuple):
                out += [f"![{b[0]}]({b[0]})", ""]
            else:
                out += [b, ""]
    return "\n".join(out)


def _markdown_cell(text: str) -> str:
    """Text that stays inside one pipe-table cell."""
    return text.replace("|", "\\|").replace("\n", "<br>")


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
    """Read result and conformance files and write report.md, report.html, results.csv and
    PNG plots.

    Raises `benchmarks.schema.records.ResultsError` for an unreadable results or conformance file
    and `ReportError` when `out_dir` cannot be written. Returns the files written.
    """
    inputs = load_inputs(paths)
    frame = inputs.frame
    if baseline is not None and not frame.empty and baseline not in set(frame["series"]):
        valid = ", ".join(sorted(frame["series"].unique()))
        raise ReportError(f"baseline {baseline!r} is not in these results; choose one of {valid}")
    sections = build_sections(inputs, baseline)
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
