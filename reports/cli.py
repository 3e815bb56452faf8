"""`hal report`, `hal compare`, `hal publish`, and `hal bench` ending in its run's report:
argparse subcommands registered through the `hal.commands` entry point group; heavy
imports happen only when run.

`bench` is the benchmark harness's command (benchmarks/cli.py); it is registered from
here, the layer above the harness, so that a run can end with its report without the
harness importing the reports."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from benchmarks import cli as bench_cli


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
        help="build report.md, report.html and results.csv from result files",
        description="Build report.md, a self-contained report.html, results.csv and PNG plots "
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
        "with a bootstrap CI, Mann-Whitney p-value and a verdict. Exit codes: 0 ok, "
        "1 regression or new failure, 2 not comparable.",
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
        help="relative change that counts (default 0.05 = 5%%)",
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


def _error(message: str) -> int:
    """Print an error for the user and return the 'not comparable / cannot run' code."""
    print(_printable(f"error: {message}"), file=sys.stderr)
    return 2


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
        f"wrote {written[0]}, {written[1].name}, {written[2].name} "
        f"and {len(written) - 3} plot(s) in {out}"
    )
    return 0


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
        if base.run.fingerprint != new.run.fingerprint:
            diffs = "; ".join(compare.fingerprint_differences(base.run, new.run))
            if not args.force:
                return _error(
                    f"{args.base} and {args.new} ran on different setups ({diffs}); "
                    "pass --force to compare anyway"
                )
            print(_printable(f"warning: different setups, compared anyway (--force): {diffs}"))
        rows = compare.compare_runs(base, new, args.threshold, args.alpha)
        code = compare.exit_code(rows)
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


def _printable(text: str) -> str:
    """`text` for a terminal: control characters from a results file (an escape sequence in a
    workload's name) shown as Python escapes, never sent to the terminal; newlines kept."""
    return "".join(c if c == "\n" or c.isprintable() else ascii(c)[1:-1] for c in text)


def main(argv: list[str] | None = None) -> int:
    """Run `bench`/`report`/`compare`/`publish` without the `hal` command
    (`python -m reports.cli`)."""
    parser = argparse.ArgumentParser(prog="python -m reports.cli")
    sub = parser.add_subparsers(dest="command", required=True)
    for register in (register_bench, register_report, register_compare, register_publish):
        register(sub)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
