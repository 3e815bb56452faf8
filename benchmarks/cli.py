"""`hal bench`: argparse subcommand; hal and the suites load only when it runs.

The `hal` command registers it through reports/cli.py, which hands in `write_report` so a
run ends with its report without this layer importing the report layer above it.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `bench` subcommand; it sets `func(args) -> exit code`."""
    from hal.cli import positive_float, positive_int  # the `hal` command has hal loaded
    p = subparsers.add_parser(
        "bench",
        help="run benchmark suites on the available backends and write a report",
        description="Run benchmark suites (default: peak and quick) on every available "
        "backend or those named, record every measurement to <out>/<run-id>.jsonl as it is "
        "taken, and write a report beside it. Ctrl-C keeps what was measured; --resume "
        "finishes the run.",
    )
    p.add_argument(
        "--suite",
        action="append",
        default=None,
        metavar="NAME",
        help="suite to run (repeatable; default: peak and quick)",
    )
    p.add_argument(
        "--backend",
        action="append",
        default=None,
        metavar="NAME[:INDEX]",
        help="backend or device to measure (repeatable; default: every available)",
    )
    p.add_argument(
        "--dtype",
        action="append",
        default=None,
        metavar="DTYPE",
        help="only these dtypes (repeatable)",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="fewer and shorter samples (wider confidence intervals)",
    )
    p.add_argument(
        "--timeout",
        type=positive_float,
        default=300.0,
        help="seconds one measurement may take before it is a timeout (default 300)",
    )
    p.add_argument(
        "--rounds",
        type=positive_int,
        default=1,
        help="split each measurement into rounds and alternate the devices (default 1)",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="results directory (default: <HAL_CACHE_DIR>/results)",
    )
    p.add_argument(
        "--resume",
        metavar="RUN",
        default=None,
        help="finish an interrupted run: its id or its .jsonl file (refused while another "
        "process still writes it)",
    )
    p.add_argument(
        "--fallback",
        choices=("error", "warn", "allow"),
        default="error",
        help="ops without a kernel on the device: error (default) skips the workload with "
        "the reason; warn and allow run them on the CPU and count the fallback calls",
    )
    p.add_argument(
        "--conformance",
        action="append",
        type=Path,
        default=[],
        metavar="FILE",
        help="conformance results (`hal conformance --out FILE`) the report shows beside "
        "this run (repeatable)",
    )
    p.add_argument("--no-report", action="store_true", help="do not write the report")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Handler of `hal bench`: 0 done, 1 a measurement failed, 2 bad request, 130 Ctrl-C,
    143 SIGTERM (either keeps what was measured, ends the results file and writes the
    report of it)."""
    import hal
    from benchmarks.harness import run_bench
    from benchmarks.plan import BenchError, Config

    missing = [str(p) for p in args.conformance if not p.is_file()]
    if missing:
        print(f"error: no conformance file {', '.join(missing)}", file=sys.stderr)
        return 2
    out = args.out or hal.settings.cache_dir / "results"
    config = Config(
        suites=args.suite or Config().suites,
        backends=args.backend or [],
        dtypes=args.dtype or [],
        quick=args.quick,
        timeout=args.timeout,
        rounds=args.rounds,
        fallback=args.fallback,
    )
    with _terminated_as_interrupted() as stopped_by:
        try:
            outcome = run_bench(config, out, resume=args.resume)
        except BenchError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    if outcome.interrupted:
        print(
            f"\ninterrupted ({stopped_by[-1] if stopped_by else 'SIGINT'}): "
            f"{outcome.measured} measurement(s) kept in {outcome.path}; "
            f"finish with `hal bench --resume {outcome.run_id} --out {out}`",
            file=sys.stderr,
        )
    code = _report_and_summary(args, outcome)
    if outcome.interrupted:
        return 128 + (signal.SIGTERM if stopped_by == ["SIGTERM"] else signal.SIGINT)
    return code or (1 if outcome.failed else 0)


@contextlib.contextmanager
def _terminated_as_interrupted() -> Iterator[list[str]]:
    """SIGTERM handled as Ctrl-C while measuring: the run stops, keeps what it measured and
    ends its results file; the list yielded names the signal once one came."""
    came: list[str] = []

    def stop(signum, frame):
        came.append(signal.Signals(signum).name)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield came
    finally:
        signal.signal(signal.SIGTERM, previous)


def _report_and_summary(args: argparse.Namespace, outcome) -> int:
    """Write the run's report (unless --no-report) and print the closing summary: suite
    times, headline figures, counts by outcome and skip reason, the report's path. Returns
    the report's exit code (0 when written or not asked for)."""
    from benchmarks.schema.files import load_results
    from benchmarks.schema.records import ResultsError
    from benchmarks.summary import summary_lines

    code, report, took = 0, None, None
    write_report = getattr(args, "write_report", None)  # set by reports/cli.py
    if write_report is not None and not args.no_report:
        out_dir = outcome.path.with_name(f"{outcome.run_id}-report")
        started = time.perf_counter()
        code = write_report([outcome.path, *args.conformance], out_dir)
        took = time.perf_counter() - started
        report = None if code else out_dir / "report.html"
    try:
        results = load_results(outcome.path)
    except ResultsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return code or 2
    headlines = getattr(args, "headlines", None)  # set by reports/cli.py: the claims
    rows = headlines(results) if headlines is not None else []
    print("\n" + "\n".join(summary_lines(results, report, took, rows)))
    return code


def main(argv: list[str] | None = None) -> int:
    """Run `bench` without the `hal` command (`python -m benchmarks.cli bench ...`)."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.cli")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
