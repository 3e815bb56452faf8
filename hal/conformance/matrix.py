"""The printed tables of a conformance report (rich): the backend x op x dtype matrix, the
jit cells and the runtime layers."""

from __future__ import annotations

from collections import Counter

from .. import ops
from ..runtime import dtypes as dt
from .records import FAIL, FALLBACK, PASS, UNSUPPORTED, Cell, Report

SYMBOLS = {PASS: "[green]✓[/]", FAIL: "[bold red]✗[/]", FALLBACK: "[yellow]F[/]",
           UNSUPPORTED: "[dim]·[/]"}


def cell_symbol(cell: Cell) -> str:
    """The cell's mark: its status, and for a pass not by the device's kernel how it ran
    ('✓d' decomposed into other ops, '✓f' the CPU reference on the cpu backend)."""
    if cell.status == PASS and cell.ran not in ("", "kernel"):
        return f"[green]✓{cell.ran[0]}[/]"
    return SYMBOLS[cell.status]


def matrix(report: Report):
    """A rich Table: one row per op, one column per dtype, a symbol per cell."""
    from rich.table import Table

    cells = {(c.op, c.dtype): c for c in report.cells}
    used = [d.name for d in dt.ALL if any(k[1] == d.name for k in cells)]
    counts = report.counts()
    decomposed = sum(c.status == PASS and c.ran == "decomposed" for c in report.cells)
    table = Table(
        title=f"{report.backend} ({report.device or 'no device'}): {counts[PASS]} pass "
              f"({decomposed} decomposed), {counts[FAIL]} fail, {counts[FALLBACK]} fallback, "
              f"{counts[UNSUPPORTED]} unsupported in {report.seconds:.1f} s",
        caption="✓ pass (the device's kernel)  ✓d pass (decomposed)  ✗ fail  F fallback (ran "
                "on the CPU)  · dtype unsupported by the device",
    )
    table.add_column("op")
    table.add_column("kind")
    for d in used:
        table.add_column(d.replace("complex", "c").replace("float", "f"), justify="center")
    for spec in ops.specs():
        row = [cells.get((spec.name, d)) for d in used]
        if any(row):
            table.add_row(spec.name, spec.kind, *["" if c is None else cell_symbol(c) for c in row])
    return table


def graph_table(report: Report):
    """A rich Table of the jit cells: graph, dtype, status, the path it took, and its nodes
    by how they run (the executable's counts, 'WAY:OP' keys summed per way)."""
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=f"{report.backend}: jit cells (hal.jit vs eager vs the reference)",
                  caption="path: graph (Backend.compile's executable), fused (groups compiled "
                          "by compile_fused), replay (node by node); +captured: replayed "
                          "from Backend.capture's recording")
    for column in ("graph", "dtype", "", "path", "nodes", "s"):
        table.add_column(column)
    for g in report.graphs:
        ways = Counter()
        for how, n in g.counts.items():
            ways[how.split(":")[0]] += n
        nodes = ", ".join(f"{how} {n}" for how, n in ways.items())
        table.add_row(g.graph, g.dtype, SYMBOLS[g.status], g.path, escape(nodes),
                      f"{g.seconds:.2f}")
    return table


def layers(report: Report):
    """A rich Table of the runtime layers."""
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=f"{report.backend}: runtime layers")
    table.add_column("layer")
    table.add_column("ok")
    table.add_column("detail")
    for layer in report.layers:
        table.add_row(layer.name, "[green]✓[/]" if layer.ok else "[bold red]✗[/]",
                      escape(layer.detail))
    return table
