"""The printed conformance matrix fits 80 columns with every op name whole."""

import io

from rich.console import Console

from hal import ops
from hal.cli import main
from hal.conformance import FAIL, FALLBACK, PASS, UNSUPPORTED, Cell, Report, matrices, matrix
from hal.runtime import dtypes as dt


def _full_report() -> Report:
    """Every op x every dtype, the statuses in turn (a decomposed pass among them)."""
    statuses = [(PASS, "kernel"), (PASS, "decomposed"), (FAIL, ""), (FALLBACK, "fallback"),
                (UNSUPPORTED, "")]
    cells = [Cell(spec.name, d.name, status=statuses[(i + j) % len(statuses)][0],
                  ran=statuses[(i + j) % len(statuses)][1])
             for i, spec in enumerate(ops.specs()) for j, d in enumerate(dt.ALL)]
    return Report("somechip", "somechip:0", cells=cells, seconds=12.5)


def _render(tables, width: int) -> list[str]:
    console = Console(file=io.StringIO(), width=width, record=True)
    for table in tables:
        console.print(table)
    return console.export_text().splitlines()


def test_the_whole_matrix_fits_80_columns_in_one_table():
    report = _full_report()
    (table,) = matrices(report, 80)
    lines = _render([table], 80)
    assert max(map(len, lines)) <= 80
    names = [line.split()[0] for line in lines if line.split()]
    for spec in ops.specs():
        assert spec.name in names, spec.name  # whole, never `re…`
    header = next(line for line in lines if line.startswith("op "))
    assert header.split() == ["op", "bool", "i8", "u8", "i32", "i64", "f16", "bf16", "f32",
                              "f64", "c64", "c128"]
    row = next(line for line in lines if line.startswith("abs "))
    assert row.split()[1:] == ["✓d", "✗", "F", "·", "✓", "✓d", "✗", "F", "·", "✓", "✓d"]


def test_a_narrow_terminal_gets_the_dtype_columns_split_with_names_whole():
    report = _full_report()
    tables = matrices(report, 50)
    assert len(tables) > 1
    assert sum(len(t.columns) - 1 for t in tables) == len(dt.ALL)
    lines = _render(tables, 50)
    assert max(map(len, lines)) <= 50
    assert sum(line.startswith("scaled_dot_product_attention ") for line in lines) == len(tables)


def test_matrix_of_some_dtypes_keeps_only_their_columns():
    table = matrix(_full_report(), ["float32", "int8"])
    assert [c.header for c in table.columns] == ["op", "i8", "f32"]
    assert table.row_count == len(ops.specs())


def test_hal_conformance_prints_at_80_columns(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["conformance", "--backend", "null", "--ops", "scaled_dot_product_attention",
                 "remainder", "--examples", "1", "--graphs"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(map(len, lines)) <= 80
    names = {line.split()[0] for line in lines if line.split()}
    assert {"scaled_dot_product_attention", "remainder"} <= names
