"""Build report.md (a summary), its details, a self-contained report.html and results.csv
from result files."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from benchmarks.schema.records import Results, RunRecord
from reports import claims, plots, render, summary, tables
from reports.figures import autograd, cnn, gpu, int8, jit, mlperf, parallel, science
from reports.frame import Inputs, load_inputs
from reports.history import history_sections
from reports.section import Section


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


# A table of this many rows or fewer with many columns is shown turned (a column per row).
WIDE_ROWS = 2

# Each part of the report: (inputs, baseline series or None) -> its sections, maybe none.
Part = Callable[[Inputs, str | None], list[Section]]


def runs_part(inputs: Inputs, baseline: str | None) -> list[Section]:
    """The results files: run, host, devices, software and load."""
    if not inputs.results:
        return [Section("Runs", ["No benchmark runs in these files."])]
    table = _runs_table(inputs.results)
    if len(table) <= WIDE_ROWS:  # a few runs read better as a column each
        table = table.set_index("run").T.rename_axis(None, axis=1).reset_index(names="")
    return [Section("Runs", [table])]


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
    run = ["run"] if "run" in table else []
    energy = ["perf/W"] if table["perf/W"].astype(bool).any() else []
    figures = [*run, "claim", "published", "published ratio", "baseline", "candidate",
               "measured", "ratio", *energy]
    workloads = [*run, "claim", "our workload", "check", "notes"]
    return [Section("Claims vs measured", [
        "The published claims (`benchmarks/claims.py`) beside this run's `seed` suite: the "
        "best measured candidate against its baseline (a peer named with its version, or hal "
        "on the same backend), both figures, our ratio beside the published one (>1: the "
        "candidate is better). Published figures come from other hardware: compare ratios, "
        "not absolute figures." + (" perf/W: the energy of a call on each side (the "
                                   "device's counter over the samples) and how many times "
                                   "more work per joule the candidate does." if energy
                                   else ""), table[figures],
        "What we measure for each claim, the output checks, and the whole reason wherever a "
        "side could not be measured here:", table[workloads]])]


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


FIGURES = (jit, int8, cnn, mlperf, parallel, science, autograd, gpu)


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
            "with a 99% bootstrap CI, and the geometric mean over workloads; where both "
            "sides read their device's energy, the ratio of work per joule beside it "
            "(`perf/W`: baseline joules per call / backend joules per call)."
        ],
    )
    if long.empty:
        speed.blocks.append(f"No workload measured `ok` on both `{baseline}` and another backend.")
        return [speed]
    speed.blocks.append(tables.speedup_matrix(long).reset_index(names="workload"))
    taken: set[str] = set()
    for series, group in long.groupby("series", sort=True):
        shown = plots.extremes(group, "speedup")
        name = _plot_file(f"speedup-{series}", taken)
        speed.blocks.append((name, plots.speedup_bars(shown, baseline, series)))
        if len(shown) < len(group):
            speed.blocks.append(
                f"`{series}`: {len(shown)} of its {len(group)} speedups plotted, the "
                f"{len(shown) // 2} lowest and the {len(shown) - len(shown) // 2} highest; "
                "the table above has every one."
            )
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
    """Ops by kernel, decomposed and on the CPU fallback per series; fallback calls.
    Measurements hal did not run (imported from pytest-benchmark: fallback policy "none")
    ran no hal op: they have no row here."""
    frame = inputs.frame
    if not frame.empty:
        frame = frame[frame["fallback_policy"] != "none"]
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
    """A roofline per device with measured peaks, the run's measurements on it numbered
    with a table naming each, and beside it their work per joule where the energy was
    read."""
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
            if not (d.peaks.get("gflops") or d.peaks.get("gbps")):
                continue
            pts = tables.numbered_points(pts)
            name = _plot_file(f"roofline-{r.run.id}-{d.backend}-{d.name}", taken)
            roof.blocks.append((name, plots.roofline(d, pts)))
            if not pts.empty:
                roof.blocks += [f"The points of `{d.name}`'s roofline, by number:",
                                tables.roofline_points_table(pts)]
            read = pts[pts["gflops_per_joule"].notna()]
            if not read.empty:
                name = _plot_file(f"work-per-joule-{r.run.id}-{d.backend}-{d.name}", taken)
                counter = read["energy_counter"].dropna().iloc[0]
                roof.blocks.append((name, plots.work_per_joule(d, read, counter)))
    if not roof.blocks:
        roof.blocks.append("No measured peaks in these runs: run `hal bench --suite peak`.")
    return [roof]


def energy_part(inputs: Inputs, baseline: str | None) -> list[Section]:
    """Speed against energy per device where its energy counter was read (numbered points
    with a table naming each), and why each other device has no energy figures."""
    frame = inputs.frame
    if frame.empty or "joules_per_call" not in frame:
        return []
    ok = frame[frame["status"] == "ok"]
    section = Section("Energy", [
        "Each measurement reads its device's energy counter around its samples (NVML's "
        "total energy on NVIDIA GPUs, RAPL package energy on the host CPU: the whole "
        "package, with whatever else ran on it): joules per call, mean watts, and work per "
        "joule."])
    taken: set[str] = set()
    for (run, device), group in ok.groupby(["run", "device"], sort=True):
        read = group[group["joules_per_call"].notna()]
        if read.empty:
            why = group["energy_why"].dropna()
            section.blocks.append(f"`{device}` (run {run}): "
                                  f"{why.iloc[0] if not why.empty else 'no energy recorded'}.")
            continue
        pts = tables.numbered_points(read)
        counter = pts["energy_counter"].dropna().iloc[0]
        name = _plot_file(f"energy-{run}-{device}", taken)
        section.blocks += [(name, plots.speed_energy(device, pts, counter)),
                           f"The points of `{device}` (run {run}; {counter}), by number:",
                           tables.energy_points_table(pts)]
    return [section]


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
    """Each measurement's samples relative to its median, a plot per series."""
    frame = inputs.frame
    sampled = frame[frame["samples"].map(len) > 0] if not frame.empty else frame
    if sampled.empty:
        return []
    section = Section(
        "Sample distributions", ["Each measurement's samples divided by its median."]
    )
    taken: set[str] = set()
    for series, group in sampled.groupby("series", sort=True):
        # the widest spreads first: a cut plot keeps the measurements worth a look
        shown = group.assign(spread=group["cv"].astype(float).fillna(0)).sort_values(
            "spread", ascending=False, kind="stable"
        )
        shown = shown.head(plots.MAX_ROWS)
        name = _plot_file(f"distributions-{series}", taken)
        section.blocks.append((name, plots.distributions(shown, series)))
        if len(shown) < len(group):
            section.blocks.append(
                f"`{series}`: the {len(shown)} of its {len(group)} measurements with the "
                "widest spread (highest CV) plotted; the suite tables give every CV."
            )
    return [section]


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
    energy_part,
    distributions_part,
]


def build_sections(inputs: Inputs, baseline: str | None) -> list[Section]:
    """The report's content, independent of the output format: the sections of each part
    in `PARTS`, in order. `baseline` is the series speedups compare against (default: cpu
    when present, else the first series)."""
    frame = inputs.frame
    base = baseline or (tables.default_baseline(frame) if not frame.empty else None)
    return [section for part in PARTS for section in part(inputs, base)] + history_sections(
        inputs.results)


def _header(inputs: Inputs) -> list[str]:
    """Lines under the report's title: each run (at most MAX_HEADER_RUNS), a partial run
    said to be one, and the conformance files."""
    lines = []
    for r in inputs.results[:MAX_HEADER_RUNS]:
        run, host, git = r.run, r.run.host, r.run.git or {}
        where = host.get("hostname") or "an unnamed host"
        machine = ", ".join(str(x) for x in (host.get("cpu"), host.get("cores") and
                                             f"{host['cores']} cores") if x)
        end = run.end or "did not finish: the figures are partial"
        commit = str(git.get("commit") or "")[:10]
        load = f", load {run.loadavg[0]:.2f} at start" if run.loadavg else ""
        lines.append(f"Run `{run.id}` on {where}{f' ({machine})' if machine else ''}: "
                     f"{run.start} – {end}{f', git {commit}' if commit else ''}{load}.")
    if len(inputs.results) > MAX_HEADER_RUNS:
        lines.append(f"And {len(inputs.results) - MAX_HEADER_RUNS} more runs (see Runs).")
    files = sorted({c.path.name for c in inputs.conformance})
    if files:
        lines.append(f"Conformance: {', '.join(files)}.")
    return lines


MAX_HEADER_RUNS = 5


def csv_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """The measurements as flat CSV columns (samples and placement maps left out); files
    are named relative to the directory that holds them all (by name alone when one does)."""
    if frame.empty:
        return frame
    flat = frame.drop(columns=["samples", "ops", "params_json"])
    files = [Path(f) for f in frame["file"].unique()]
    common = Path(os.path.commonpath([f.parent for f in files]))
    names = {str(f): f.relative_to(common).as_posix() for f in files}
    return flat.assign(file=frame["file"].map(names),
                       fallback_ops=frame["fallback_ops"].map(";".join))


def build_report(paths: list[Path], out_dir: Path, baseline: str | None = None) -> list[Path]:
    """Read result and conformance files and write report.md (the summary), report.html,
    results.csv, the details beside report.md (`reports.render.DETAILS_FILE`) and PNG plots,
    in this order.

    Raises `benchmarks.schema.records.ResultsError` for an unreadable results or conformance file
    and `ReportError` when `out_dir` cannot be written. Returns the files written.
    """
    inputs = load_inputs(paths)
    frame = inputs.frame
    if baseline is not None and not frame.empty and baseline not in set(frame["series"]):
        valid = ", ".join(sorted(frame["series"].unique()))
        raise ReportError(f"baseline {baseline!r} is not in these results; choose one of {valid}")
    base = baseline or (tables.default_baseline(frame) if not frame.empty else None)
    long = tables.speedups(frame, base) if base is not None else pd.DataFrame()
    page = render.Page(
        "hal benchmark report",
        _header(inputs),
        summary.summary_sections(inputs, base, long),
        build_sections(inputs, baseline),
    )
    out_dir = Path(out_dir)
    written = [out_dir / "report.md", out_dir / "report.html", out_dir / "results.csv",
               out_dir / render.DETAILS_FILE]
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        written[0].write_text(render.markdown_summary(page), encoding="utf-8")
        written[1].write_text(render.html_page(page), encoding="utf-8")
        csv_frame(frame).to_csv(written[2], index=False)
        written[3].write_text(render.markdown_details(page), encoding="utf-8")
        for s in page.details:
            for b in s.blocks:
                if isinstance(b, tuple):
                    (out_dir / b[0]).write_bytes(b[1])
                    written.append(out_dir / b[0])
    except OSError as exc:
        raise ReportError(f"cannot write the report to {out_dir}: {exc.strerror or exc}") from exc
    return written
