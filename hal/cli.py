"""The `hal` command: `devices`, and the commands packages register (`hal.commands`).

    hal devices                      backends, why unavailable, devices, dtypes, op coverage
    hal conformance [--backend B]    certify backends (hal/conformance/cli.py)
    hal bench / report / compare     the benchmark harness and its reports (reports/cli.py)
    hal tune, hal train ...          a backend's or a frontend's own commands

Nothing here imports a layer above hal: every command but `devices` arrives through the
entry point group, and the argument types they share live here.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from importlib.metadata import entry_points

from . import ops
from .runtime import dtypes as dt
from .runtime import registry as plugins
from .runtime.errors import HalError
from .runtime.settings import settings


def main(argv: list[str] | None = None) -> int:
    """Run the hal command line; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "func"):
        parser.print_help()
        return 2

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
    """The argument parser: `devices`, and every command a package registers."""
    parser = argparse.ArgumentParser(
        prog="hal", description="Hardware abstraction layer and benchmarking harness.")
    sub = parser.add_subparsers(metavar="command")
    d = sub.add_parser("devices", help="list backends, their devices, dtypes and op coverage")
    d.add_argument("--json", action="store_true", help="print JSON instead of a table")
    d.set_defaults(func=devices)
    _plugin_commands(sub)
    return parser


def _plugin_commands(sub) -> None:
    """Subcommands that packages add under the `hal.commands` entry point group (hal's own
    `conformance`, the harness's `bench`, `report`, `compare`, `publish`, a backend's
    tools such as `hal tune`): each entry point is a `register(subparsers)` function."""
    for point in sorted(entry_points(group="hal.commands"), key=lambda p: p.name):
        try:
            point.load()(sub)
        except Exception as e:  # a broken plugin must not take the core commands down
            print(f"hal: command {point.name!r} ({point.value}) unavailable: "
                  f"{type(e).__name__}: {e}", file=sys.stderr)


# -- argument types every subcommand shares -------------------------------------------------
def _number(text: str, kind: type, accept, words: str) -> int | float:
    """`text` as a `kind` for which `accept` holds, else an argparse error in `words`."""
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number; give {words}") from None
    if not (math.isfinite(value) and accept(value)):
        raise argparse.ArgumentTypeError(f"{text} is out of range; give {words}")
    return value


def positive_int(text: str) -> int:
    """argparse type: a whole number of at least 1."""
    return _number(text, int, lambda v: v >= 1, "a whole number of at least 1")


def positive_float(text: str) -> float:
    """argparse type: a finite number above 0."""
    return _number(text, float, lambda v: v > 0, "a number above 0")


def non_negative_float(text: str) -> float:
    """argparse type: a finite number of at least 0."""
    return _number(text, float, lambda v: v >= 0, "a number of at least 0")


def probability(text: str) -> float:
    """argparse type: a number strictly between 0 and 1."""
    return _number(text, float, lambda v: 0 < v < 1, "a number between 0 and 1")


def devices(args) -> int:
    """`hal devices`: every registered backend, available or why not, with its devices."""

    rows = []
    all_ops = ops.names()
    for name in plugins.registry.names():
        row = {"backend": name, "available": False, "reason": "", "devices": []}
        try:
            backend = plugins.registry.get(name)  # a plugin's failures come back as reasons
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
    for name, why in plugins.registry.broken().items():
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


if __name__ == "__main__":
    sys.exit(main())
