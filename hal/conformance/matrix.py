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


def short_dtype(name: str) -> str:
    """A dtype's column header: int -> i, uint -> u, float -> f, complex -> c (bfloat16 ->
    bf16, complex128 -> c128), so that eleven columns and the longest op name fit 80."""
    for word, letter in (("complex", "c"), ("float", "f"), ("uint", "u"), ("int", "i")):
        name = name.replace(word, letter)
    return name


def matrix(report: Report, dtypes: list[str] | None = None):
    """A rich Table: one row per op (its whole name), one column per dtype (those of
    `dtypes` only, when given), a symbol per cell; columns one space apart, so that every
    dtype fits 80 columns (73)."""
    from rich import box
    from rich.table import Table

    cells = {(c.op, c.dtype): c for c in report.cells}
    used = [d.name for d in dt.ALL if any(k[1] == d.name for k in cells)
            and (dtypes is None or d.name in dtypes)]
    counts = report.counts()
    decomposed = sum(c.status == PASS and c.ran == "decomposed" for c in report.cells)
    table = Table(
        title=f"{report.backend} ({report.device or 'no device'}): {counts[PASS]} pass"
              f"{f' ({decomposed} decomposed)' if decomposed else ''}, {counts[FAIL]} fail, "
              f"{counts[FALLBACK]} fallback, {counts[UNSUPPORTED]} unsupported in "
              f"{report.seconds:.1f} s",
        caption="✓ pass (the device's kernel)  ✓d pass (decomposed)  ✗ fail  F fallback (ran "
                "on the CPU)  · dtype unsupported by the device; i int, u uint, f float, "
                "c complex",
        box=box.SIMPLE_HEAD, show_edge=False, padding=0,  # the box's divider: a space
    )
    names = [spec.name for spec in ops.specs() if any((spec.name, d) in cells for d in used)]
    table.add_column("op", no_wrap=True, min_width=max(map(len, names), default=2))
    for d in used:
        table.add_column(short_dtype(d), justify="center", no_wrap=True, min_width=2)
    for name in names:
        row = [cells.get((name, d)) for d in used]
        table.add_row(name, *["" if c is None else cell_symbol(c) for c in row])
    return table


def matrices(report: Report, width: int) -> list:
    """The matrix as tables at most `width` columns wide: all dtypes in one where they fit
    (80 columns do), else the dtype columns split over several, every op name whole."""
    used = [d.name for d in dt.ALL if any(c.dtype == d.name for c in report.cells)]
    names = [c.op for c in report.cells]
    room = width - max(map(len, names), default=2)
    groups: list[list[str]] = [[]]
    for d in used:
        # a column takes its header's width (at least a symbol's 2) and a space before it
        need = 1 + max(2, len(short_dtype(d)))
        if groups[-1] and sum(1 + max(2, len(short_dtype(x))) for x in groups[-1]) + need > room:
            groups.append([])
        groups[-1].append(d)
    return [matrix(report, group) for group in groups]


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
