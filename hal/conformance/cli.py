"""`hal conformance`: run the kit on backends and print the backend x op x dtype matrix.

Registered through the `hal.commands` entry point group, like every command but `devices`.
"""

from __future__ import annotations

import argparse
import json
import platform
from pathlib import Path

from ..cli import positive_int


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `conformance` subcommand; it sets `func(args) -> exit code`."""
    c = subparsers.add_parser("conformance",
                              help="certify backends against the op set's reference")
    c.add_argument("--backend", action="append", metavar="NAME[:INDEX]",
                   help="backend (device 0) or device to certify (repeatable; default: "
                        "device 0 of every available backend)")
    c.add_argument("--ops", nargs="+", metavar="OP",
                   help="only these ops (and no jit cells unless --graphs names some)")
    c.add_argument("--dtypes", nargs="+", metavar="DTYPE", help="only these dtypes")
    c.add_argument("--graphs", nargs="*", metavar="GRAPH",
                   help="only these jit cells (kdv_step, transformer_block, resnet_block, "
                        "llama_block, taylor_exp_sin, "
                        "random-0..3); with no name, none (default: all, none with --ops)")
    c.add_argument("--examples", type=positive_int, default=20,
                   help="hypothesis examples per cell (at least 1)")
    c.add_argument("--json", action="store_true", help="print the reports as JSON")
    c.add_argument("--out", type=Path, metavar="FILE",
                   help="also write the JSON to FILE (`hal report` reads it), still printing "
                        "the matrix")
    c.set_defaults(func=conformance)


def conformance(args) -> int:
    """`hal conformance`: run the kit on backends; exit 1 if any cell or layer fails."""
    from rich.console import Console
    from rich.markup import escape
    from rich.progress import Progress

    from ..runtime.errors import HalError
    from ..runtime.registry import registry
    from .graph_workloads import workload
    from .kit import run
    from .matrix import graph_table, layers, matrices
    from .records import FAIL

    targets = []
    for spec in args.backend or registry.available():
        name, _, index = spec.partition(":")
        if index and not index.isdigit():
            raise HalError(f"--backend {spec!r}: give NAME or NAME:INDEX, e.g. opencl:1")
        registry.get(name)  # unknown or broken: a HalError naming the registered ones
        targets.append((name, int(index or 0)))
    for name in args.graphs or ():
        workload(name)  # unknown: a HalError naming the graphs, before anything runs
    # the terminal's width, else $COLUMNS or 80: every table fits 80 columns
    console = Console(stderr=args.json)
    reports = []
    for name, index in targets:
        with Progress(console=console, transient=True) as bar:
            task = bar.add_task(f"{name}", total=None)

            def progress(i, n, label, task=task, bar=bar, name=name):
                bar.update(task, total=n, completed=i, description=f"{name}: {label}")

            reports.append(run(name, ops_=args.ops, dtypes=args.dtypes, graphs=args.graphs,
                               index=index, examples=args.examples, progress=progress))
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
            console.print(layers(r))
            for table in matrices(r, console.width) if r.cells else ():
                console.print(table)
            if r.graphs:
                console.print(graph_table(r))
            failed = [(f"{c.op} {c.dtype}", c) for c in r.cells if c.status == FAIL] + \
                [(f"jit {g.graph} {g.dtype}", g) for g in r.graphs if g.status == FAIL]
            for what, cell in failed:
                console.print(f"[bold red]FAIL[/] {r.backend} {escape(what)}: "
                              f"{escape(cell.error)}", soft_wrap=True)
                if cell.repro:  # code: its lines whole, never wrapped at the width
                    console.print(cell.repro, markup=False, highlight=False, soft_wrap=True)
    if args.out is not None:
        console.print(f"conformance results in {escape(str(args.out))}")
    return 0 if all(r.ok for r in reports) else 1
