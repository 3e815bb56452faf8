"""`hal report`, `hal compare`, `hal publish`, `hal history`, and `hal bench` ending in its
run's report: argparse subcommands registered through the `hal.commands` entry point group;
heavy imports happen only when run.

`bench` is the benchmark harness's command (benchmarks/cli.py); it is registered from
here, the layer above the harness, so that a run can end with its report without the
harness importing the reports."""

from __future__ import annotations

import argparse
import functools
import sys
import warnings
from pathlib import Path

from benchmarks import cli as bench_cli


def _warnings_one_line(handler):
    """`handler` with the warnings it raises (a results file's skipped line names its
    file:line) printed as one `warning: ...` line each, without Python's source echo."""

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        print(_printable(f"warning: {message}"), file=sys.stderr)

    @functools.wraps(handler)
    def run(*args, **kwargs):
        with warnings.catch_warnings():
            warnings.showwarning = show
            return handler(*args, **kwargs)

    return run


def register_bench(subparsers: argparse._SubParsersAction) -> None:
    """Add `bench`: the harness's command, writing the run's report when it ends."""
    bench_cli.register(subparsers)
    subparsers.choices["bench"].set_defaults(write_report=write_report, headlines=claim_headlines)


def claim_headlines(results) -> list[tuple[str, str]]:
    """The published claims the run measured, for `hal bench`'s closing table: the claim
    (its name alone where the whole text is long) and our ratio beside the published one."""
    from reports.claims import claims_table

    table = claims_table([results])
    return [
        (row["claim"] if len(row["claim"]) <= 40 else row["claim"].split(":")[0],
         f"{row['ratio']} measured, {row['published ratio']} published")
        for row in table.to_dict("records")
        if row.get("ratio", "").endswith("x")
    ]


@_warnings_one_line
def write_report(files, out_dir) -> int:
    """Build the report of a finished `hal bench` run (its results file and any conformance
    files given with it); 2 if it cannot be written."""
    from benchmarks.schema.records import ResultsError
    from reports.report import ReportError, build_report

    try:
        written = build_report(list(files), out_dir)
    except (ResultsError, ReportError) as exc:
        return _error(str(exc))
    print(f"report: {written[0]} and {written[1].name}")
    return 0


def register_report(subparsers: argparse._SubParsersAction) -> None:
    """Add `report`; it sets `func(args) -> exit code`."""
    p = subparsers.add_parser(
        "report",
        help="build report.html, report.md and results.csv from result files",
        description="Build a self-contained report.html, report.md (its summary, the tables "
        "in report-details.md), results.csv and PNG plots "
        "from hal results (.jsonl), pytest-benchmark (.json) and conformance (.json, from "
        "`hal conformance --out`) files, of one run or of many machines, devices and runs.",
    )
    p.add_argument(
        "results", nargs="+", type=Path, help="result and conformance files or directories of them"
    )
    p.add_argument(
        "-o",
        "--out",
        type=Path,
        default=None,
        help="output directory (default: <first file without suffix>-report)",
    )
    p.add_argument(
        "--baseline",
        default=None,
        help="backend the speedup matrix compares against (default: cpu)",
    )
    p.set_defaults(func=run_report)


def register_compare(subparsers: argparse._SubParsersAction) -> None:
    """Add `compare`; it sets `func(args) -> exit code`."""
    from hal.cli import non_negative_float, probability  # the `hal` command has hal loaded
    c = subparsers.add_parser(
        "compare",
        help="compare two runs (or the backends of one run) with verdicts",
        description="Compare BASE and NEW measurement by measurement: speedup of medians "
        "with a bootstrap CI, Mann-Whitney p-value and a verdict. A change counts when it "
        "is significant and larger than the noise: --threshold, the workload's own "
        "repeat-to-repeat spread (IQR/median), and the run-to-run noise of the two runs "
        "over all their workloads. Exit codes: 0 ok, 1 regression or new failure, 2 not "
        "comparable.",
    )
    c.add_argument("base", type=Path, help="baseline result file")
    c.add_argument("new", type=Path, nargs="?", help="new result file (not with --across)")
    c.add_argument(
        "--across",
        choices=["backends"],
        default=None,
        help="compare the backends within BASE against --baseline",
    )
    c.add_argument("--baseline", default="cpu", help="baseline backend for --across")
    c.add_argument(
        "--threshold",
        type=non_negative_float,
        default=0.05,
        help="smallest relative change that counts (default 0.05 = 5%%); noisier "
        "workloads need more",
    )
    c.add_argument(
        "--alpha",
        type=probability,
        default=0.01,
        help="Mann-Whitney p-value below which a change is significant",
    )
    c.add_argument(
        "--force",
        action="store_true",
        help="compare runs with different fingerprints (flagged in the output)",
    )
    c.set_defaults(func=run_compare)


def register_publish(subparsers: argparse._SubParsersAction) -> None:
    """Add `publish`; it sets `func(args) -> exit code`."""
    u = subparsers.add_parser(
        "publish",
        help="keep a run, its conformance results and its report as its device's reference",
        description="Copy a run's results file, its conformance results and the report built "
        "over them into reports/reference/<device-name>/ (the run's non-cpu device, or its "
        "only one). A run that did not complete or has failed measurements is refused: a "
        "reference gives later runs no verdict on a workload it lacks.",
    )
    u.add_argument("results", nargs="+", type=Path, help="the run's results file(s) (.jsonl)")
    u.add_argument(
        "--conformance",
        action="append",
        type=Path,
        default=[],
        metavar="FILE",
        help="conformance results to keep with it (`hal conformance --out FILE`; repeatable)",
    )
    u.add_argument("--to", type=Path, default=None, metavar="DIR", help="publish here instead")
    u.add_argument(
        "--force",
        action="store_true",
        help="publish a run that did not complete or has failed measurements",
    )
    u.set_defaults(func=run_publish)


def register_history(subparsers: argparse._SubParsersAction) -> None:
    """Add `history`; it sets `func(args) -> exit code`."""
    from hal.cli import non_negative_float  # the `hal` command has hal loaded
    h = subparsers.add_parser(
        "history",
        help="time series of results across commits per machine, with their steps; bisect",
        description="Read results files of many commits, group them by machine (setup "
        "fingerprint), order them by commit date and find the steps of each workload's "
        "median (regressions and improvements) with the commit range of each. With "
        "--bisect, run `hal bench` at the commits between --good and --bad (each in a "
        "temporary git worktree) to find the first one at the bad level.",
    )
    h.add_argument("results", nargs="*", type=Path, help="result files or directories")
    h.add_argument("--repo", type=Path, default=Path.cwd(),
                   help="git repository the commits belong to (default: here)")
    h.add_argument("--min-effect", type=non_negative_float, default=0.05,
                   help="smallest step that counts, relative (default 0.05 = 5%%)")
    h.add_argument("--bisect", metavar="WORKLOAD", default=None,
                   help="find the commit where WORKLOAD's time changed")
    h.add_argument("--good", metavar="COMMIT", help="a commit at the old level (--bisect)")
    h.add_argument("--bad", metavar="COMMIT", help="a commit at the new level (--bisect)")
    h.add_argument("--suite", default="quick", help="suite of the workload (default quick)")
    h.add_argument("--backend", default="cpu", help="backend to measure on (default cpu)")
    h.add_argument("--dtype", default=None, help="dtype, where the workload has several")
    h.set_defaults(func=run_history)


def _error(message: str) -> int:
    """Print an error for the user and return the 'not comparable / cannot run' code."""
    print(_printable(f"error: {message}"), file=sys.stderr)
    return 2


@_warnings_one_line
def run_report(args: argparse.Namespace) -> int:
    """Handler of `hal report`."""
    from benchmarks.schema.records import ResultsError
    from reports.report import ReportError, build_report

    first = args.results[0]
    out = args.out or first.parent / f"{first.stem}-report"
    try:
        written = build_report(args.results, out, baseline=args.baseline)
    except (ResultsError, ReportError) as exc:
        return _error(str(exc))
    print(
        f"wrote {written[0]}, {written[1].name}, {written[2].name}, {written[3].name} "
        f"and {len(written) - 4} plot(s) in {out}"
    )
    return 0


@_warnings_one_line
def run_publish(args: argparse.Namespace) -> int:
    """Handler of `hal publish`."""
    from benchmarks.schema.records import ResultsError
    from reports.publish import publish
    from reports.report import ReportError

    try:
        done = publish(args.results, args.conformance, to=args.to, force=args.force)
    except (ResultsError, ReportError) as exc:
        return _error(str(exc))
    for warning in done.warnings:
        print(_printable(f"warning: {warning}"), file=sys.stderr)
    names = ", ".join(p.name for p in done.copied)
    print(f"published {names} and {done.report[1].relative_to(done.directory)} to {done.directory}")
    if done.replaced:
        print(f"it replaces the reference run {', '.join(done.replaced)} there")
    return 0


@_warnings_one_line
def run_compare(args: argparse.Namespace) -> int:
    """Handler of `hal compare`."""
    from benchmarks.schema.files import load_results
    from benchmarks.schema.records import ResultsError
    from reports import compare

    if (args.across is None) == (args.new is None):
        return _error("give BASE and NEW, or one file with --across backends")
    try:
        base = load_results(args.base)
        new = None if args.new is None else load_results(args.new)
    except ResultsError as exc:
        return _error(str(exc))
    if new is None:
        try:
            rows = compare.compare_backends(base, args.baseline, args.threshold, args.alpha)
        except ValueError as exc:
            return _error(str(exc))
        code = compare.EXIT_OK
    else:
        # Recomputed: files written before paths left the fingerprint still compare.
        if base.run.compute_fingerprint() != new.run.compute_fingerprint():
            diffs = "; ".join(compare.fingerprint_differences(base.run, new.run))
            if not args.force:
                return _error(
                    f"{args.base} and {args.new} ran on different setups ({diffs}); "
                    "pass --force to compare anyway"
                )
            print(_printable(f"warning: different setups, compared anyway (--force): {diffs}"))
        rows = compare.compare_runs(base, new, args.threshold, args.alpha)
        code = compare.exit_code(rows)
        for noise in compare.pair_noise(base, new).values():
            print(_printable(noise.describe()))
    for results in (base, new):
        warning = None if results is None else compare.busy_warning(results)
        if warning:
            print(_printable(warning))
    table = compare.comparison_table(rows)
    print(_printable(table.to_markdown(index=False)) if not table.empty
          else "no measurements to compare")
    counts = table["verdict"].value_counts().to_dict() if not table.empty else {}
    print(", ".join(f"{counts[v]} {v}" for v in compare.VERDICTS if v in counts))
    return code


@_warnings_one_line
def run_history(args: argparse.Namespace) -> int:
    """Handler of `hal history`: 0 done, 2 bad request or unreadable input."""
    from benchmarks.schema.records import ResultsError
    from reports import history
    from reports.frame import load_inputs

    if args.bisect:
        return _run_bisect(args)
    if not args.results:
        return _error("give result files (or directories), or --bisect WORKLOAD "
                      "--good C1 --bad C2")
    try:
        results = load_inputs(args.results).results
    except ResultsError as exc:
        return _error(str(exc))
    points = history.history_frame(results, args.repo)
    if points.empty:
        return _error("no ok measurements in the files given")
    for machine, mine in points.groupby("machine", sort=False):
        steps = history.steps_table(mine, args.min_effect)
        print(_printable(f"## {machine}: {mine['point'].nunique()} commit(s), "
                         f"{len(steps)} step(s)"))
        if not steps.empty:
            print(_printable(steps.drop(columns=["machine", "good", "bad"])
                             .to_markdown(index=False)))
        print(_printable(history.series_table(mine, steps).to_markdown(index=False)))
    return 0


def _run_bisect(args: argparse.Namespace) -> int:
    """`hal history --bisect`: the first commit at the bad level, with every median."""
    from reports.bisect import BenchRequest, BisectError, bench_at_commit, bisect

    if not (args.good and args.bad):
        return _error("--bisect needs --good COMMIT and --bad COMMIT")
    request = BenchRequest(args.bisect, args.suite, args.backend, args.dtype)

    def measure(commit: str) -> float:
        median = bench_at_commit(args.repo, commit, request)
        print(f"{commit[:10]}: {args.bisect} {median * 1e3:.4g} ms", flush=True)
        return median

    try:
        found = bisect(args.repo, args.good, args.bad, measure, args.min_effect)
    except BisectError as exc:
        return _error(str(exc))
    print(f"first commit at the bad level: {found.first_bad} "
          f"(last at the good level: {found.last_good})")
    return 0


def _printable(text: str) -> str:
    """`text` for a terminal: control characters from a results file (an escape sequence in a
    workload's name) shown as Python escapes, never sent to the terminal; newlines kept."""
    return "".join(c if c == "\n" or c.isprintable() else ascii(c)[1:-1] for c in text)


def main(argv: list[str] | None = None) -> int:
    """Run `bench`/`report`/`compare`/`publish`/`history` without the `hal` command
    (`python -m reports.cli`)."""
    parser = argparse.ArgumentParser(prog="python -m reports.cli")
    sub = parser.add_subparsers(dest="command", required=True)
    for register in (register_bench, register_report, register_compare, register_publish,
                     register_history):
        register(sub)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
