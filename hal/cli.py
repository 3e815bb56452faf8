"""The `hal` command: the composition root; it imports every layer, lazily, per subcommand.

    hal devices                      backends, why unavailable, devices, dtypes, op coverage
    hal conformance [--backend B]    certify backends against the op set's reference
    hal bench / report / compare     the benchmark harness and its reports
    hal tune ...                     and any command a plugin registers (`hal.commands`)
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    """Run the hal command line; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "func"):
        parser.print_help()
        return 2
    from .errors import HalError
    from .settings import settings

    try:
        settings.check()
        return int(args.func(args) or 0)
    except HalError as e:
        print(f"hal: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("hal: interrupted", file=sys.stderr)
        return 130


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand registered."""
    from benchmarks.cli import positive_int  # the argument types all subcommands share

    parser = argparse.ArgumentParser(
        prog="hal", description="Hardware abstraction layer and benchmarking harness.")
    sub = parser.add_subparsers(metavar="command")
    d = sub.add_parser("devices", help="list backends, their devices, dtypes and op coverage")
    d.add_argument("--json", action="store_true", help="print JSON instead of a table")
    d.set_defaults(func=devices)
    c = sub.add_parser("conformance", help="certify backends against the op set's reference")
    c.add_argument("--backend", action="append", metavar="NAME[:INDEX]",
                   help="backend (device 0) or device to certify (repeatable; default: "
                        "device 0 of every available backend)")
    c.add_argument("--ops", nargs="+", metavar="OP", help="only these ops")
    c.add_argument("--dtypes", nargs="+", metavar="DTYPE", help="only these dtypes")
    c.add_argument("--examples", type=positive_int, default=20,
                   help="hypothesis examples per cell (at least 1)")
    c.add_argument("--json", action="store_true", help="print the reports as JSON")
    c.add_argument("--out", type=Path, metavar="FILE",
                   help="also write the JSON to FILE (`hal report` reads it), still printing "
                        "the matrix")
    c.set_defaults(func=conformance)
    for module in ("benchmarks.cli", "reports.cli"):
        try:
            __import__(module, fromlist=["register"]).register(sub)
        except ImportError as e:  # an install without the harness still has the core commands
            print(f"hal: {module} unavailable ({e})", file=sys.stderr)
    _plugin_commands(sub)
    if "bench" in sub.choices:
        sub.choices["bench"].set_defaults(write_report=write_report)
    return parser


def _plugin_commands(sub) -> None:
    """Subcommands that packages add under the `hal.commands` entry point group (a backend's
    own tools, e.g. `hal tune`): each entry point is a `register(subparsers)` function."""
    from importlib.metadata import entry_points

    for point in entry_points(group="hal.commands"):
        try:
            point.load()(sub)
        except Exception as e:  # a broken plugin must not take the core commands down
            print(f"hal: command {point.name!r} ({point.value}) unavailable: "
                  f"{type(e).__name__}: {e}", file=sys.stderr)


def write_report(files, out_dir) -> int:
    """Build the report of a finished `hal bench` run (its results file and any conformance
    files given with it); 2 if it cannot be written."""
    from benchmarks.schema import ResultsError
    from reports.report import ReportError, build_report

    try:
        written = build_report(list(files), out_dir)
    except (ResultsError, ReportError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"report: {written[0]} and {written[1].name}")
    return 0


def devices(args) -> int:
    """`hal devices`: every registered backend, available or why not, with its devices."""
    from . import dtypes as dt
    from . import ops
    from .errors import HalError
    from .registry import registry

    rows = []
    all_ops = ops.names()
    for name in registry.names():
        row = {"backend": name, "available": False, "reason": "", "devices": []}
        try:
            backend = registry.get(name)  # a plugin's failures come back as reasons
            row["reason"] = backend.why_unavailable() or ""
            row["available"] = not row["reason"]
            table = backend.kernels  # filled once the backend says it is available
            covered = sorted(table.ops()) if table else []
            row["ops_with_kernels"] = f"{len(covered)}/{len(all_ops)}"
            row["missing_ops"] = [o for o in all_ops if o not in covered]
            for device_name in backend.devices():
                caps = backend.open(int(device_name.split(":")[1])).capabilities
                row["devices"].append({"device": device_name, "name": caps.name,
                                       "memory_bytes": caps.memory_bytes,
                                       "dtypes": list(caps.dtypes),
                                       "unsupported": dict(caps.unsupported)})
        except HalError as e:
            row["available"], row["reason"] = False, str(e)
        rows.append(row)
    for name, why in registry.broken().items():
        if not any(r["backend"] == name for r in rows):
            rows.append({"backend": name, "available": False, "reason": why, "devices": []})
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    table = Table(title="hal backends")
    for column in ("backend", "status", "device", "dtypes", "ops with kernels"):
        table.add_column(column)
    for r in rows:  # reasons are text, not markup: "pip install -e '.[cuda]'" keeps [cuda]
        status = ("[green]available[/]" if r["available"] else
                  f"[red]unavailable[/]: {escape(r['reason'])}")
        devs = r["devices"] or [None]
        for i, dev in enumerate(devs):
            missing = [] if dev is None else [n for n in dt.names(dt.ALL)
                                                if n not in dev["dtypes"]]
            dtypes = "" if dev is None else (
                f"all {len(dev['dtypes'])}" if not missing else f"all but {', '.join(missing)}")
            label = "" if dev is None else escape(f"{dev['device']}: {dev['name']}")
            table.add_row(r["backend"] if i == 0 else "", status if i == 0 else "", label,
                          dtypes, r.get("ops_with_kernels", "") if i == 0 else "")
    Console().print(table)
    return 0


def conformance(args) -> int:
    """`hal conformance`: run the kit on backends; exit 1 if any cell or layer fails."""
    from rich.console import Console
    from rich.markup import escape
    from rich.progress import Progress

    from . import conformance as kit
    from .errors import HalError
    from .registry import registry

    targets = []
    for spec in args.backend or registry.available():
        name, _, index = spec.partition(":")
        if index and not index.isdigit():
            raise HalError(f"--backend {spec!r}: give NAME or NAME:INDEX, e.g. opencl:1")
        registry.get(name)  # unknown or broken: a HalError naming the registered ones
        targets.append((name, int(index or 0)))
    # a log file or pipe gets a wide matrix rather than rich's 80 columns
    console = Console(stderr=args.json, width=None if sys.stdout.isatty() else 160)
    reports = []
    for name, index in targets:
        with Progress(console=console, transient=True) as bar:
            task = bar.add_task(f"{name}", total=None)

            def progress(i, n, label, task=task, bar=bar, name=name):
                bar.update(task, total=n, completed=i, description=f"{name}: {label}")

            reports.append(kit.run(name, ops_=args.ops, dtypes=args.dtypes, index=index,
                                   examples=args.examples, progress=progress))
    results = json.dumps([{**r.to_dict(), "host": platform.node()} for r in reports], indent=2)
    if args.out is not None:
        try:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(results + "\n", encoding="utf-8")
        except OSError as e:
            raise HalError(f"conformance: cannot write --out {args.out}: {e.strerror or e}; "
                           "give a path in a writable directory") from e
    if args.json:
        print(results)
    else:
        for r in reports:
            console.print(kit.layers(r))
            if r.cells:
                console.print(kit.matrix(r))
            for cell in r.cells:
                if cell.status == kit.FAIL:
                    console.print(f"[bold red]FAIL[/] {r.backend} {cell.op} {cell.dtype}: "
                                  f"{escape(cell.error)}")
                    if cell.repro:
                        console.print(cell.repro, markup=False, highlight=False)
    if args.out is not None:
        console.print(f"conformance results in {escape(str(args.out))}")
    return 0 if all(r.ok for r in reports) else 1


if __name__ == "__main__":
    sys.exit(main())
