"""Conformance results in reports: `hal conformance --out`, the Conformance section, the
coverage table's counts, malformed files."""

import json
import re

import pytest

from benchmarks.schema.records import ResultsError
from hal.cli import main as hal_main
from reports.cli import main
from reports.conformance import ConformanceError, read_conformance
from reports.report import build_report


@pytest.fixture(scope="module")
def conformance_file(tmp_path_factory):
    """Real conformance results of cpu and null on add and softmax (float32), via the CLI."""
    path = tmp_path_factory.mktemp("conformance") / "conformance-1.json"
    args = [
        "conformance",
        "--backend",
        "cpu",
        "--backend",
        "null",
        "--ops",
        "add",
        "softmax",
        "--dtypes",
        "float32",
        "--examples",
        "2",
        "--out",
        str(path),
    ]
    assert hal_main(args) == 0
    return path


def _section(md: str, title: str) -> str:
    """The text of one section of report-details.md."""
    start = md.index(f"## {title}")
    end = md.find("\n## ", start + 1)
    return md[start : end if end > 0 else None]


def _row(section: str, start: str) -> list[str]:
    """The cells of the first table row of `section` starting with `start`."""
    line = next(line for line in section.splitlines() if line.startswith(f"| {start}"))
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_out_writes_the_json_and_still_prints_the_matrix(conformance_file, tmp_path, capsys):
    data = json.loads(conformance_file.read_text())
    assert [(r["backend"], r["device"], r["counts"]) for r in data] == [
        ("cpu", "cpu:0", {"pass": 2, "fail": 0, "fallback": 0, "unsupported": 0}),
        ("null", "null:0", {"pass": 0, "fail": 0, "fallback": 2, "unsupported": 0}),
    ]
    assert all(r["host"] for r in data)
    out = tmp_path / "c.json"
    assert (
        hal_main(
            [
                "conformance",
                "--backend",
                "cpu",
                "--ops",
                "add",
                "--dtypes",
                "float32",
                "--examples",
                "1",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "add" in printed and str(out) in printed  # the matrix, then where the JSON went
    assert json.loads(out.read_text())[0]["cells"][0]["op"] == "add"
    assert json.loads(out.read_text())[0]["graphs"] == []  # --ops: no jit cells unless named


def test_jit_cells_in_the_json_the_printout_and_the_section(tmp_path, capsys):
    out = tmp_path / "jit.json"
    args = ["conformance", "--backend", "cpu", "--ops", "add", "--dtypes", "float32",
            "--examples", "1", "--graphs", "random-3", "--out", str(out)]
    assert hal_main(args) == 0
    (graph,) = json.loads(out.read_text())[0]["graphs"]
    assert (graph["graph"], graph["dtype"], graph["status"], graph["path"]) == (
        "random-3", "float32", "pass", "fused")
    assert graph["counts"]["compiled"] >= 1
    printed = capsys.readouterr().out
    assert "jit cells" in printed and "random-3" in printed and "fused" in printed
    md = build_report([out], tmp_path / "o")[3].read_text()
    section = _section(md, "Conformance")
    summary = dict(zip(_row(section, "file"), _row(section, "jit.json"), strict=True))
    assert summary["jit cells (path)"] == "random-3 fused"


def test_conformance_section_counts(conformance_file, two_backend_run, tmp_path):
    md = build_report([two_backend_run, conformance_file], tmp_path / "o")[3].read_text()
    section = _section(md, "Conformance")
    header = _row(section, "file")
    cpu = dict(zip(header, _row(section, "conformance-1.json"), strict=True))
    assert cpu["backend"] == "cpu" and cpu["cells"] == "2" and cpu["pass by kernel"] == "2"
    null = dict(zip(header, _row(section.split("| cpu")[-1], "conformance-1.json"), strict=True))
    assert null["backend"] == "null" and null["fallback"] == "2" and null["fail"] == "0"
    assert _row(section, "conformance-1.json")[-1] == "" and "No cell failed." in section
    assert "add, softmax" in section  # the ops that fall back on null
    coverage = _section(md, "Op coverage and fallbacks")
    header = _row(coverage, "backend")
    cpu = dict(zip(header, _row(coverage, "cpu"), strict=True))
    assert cpu["ops by kernel"] == "2"
    assert cpu["ops counted from"] == "conformance (conformance-1.json)"
    opencl = dict(zip(header, _row(coverage, "opencl"), strict=True))
    assert opencl["ops counted from"] == "bench placements" and opencl["fallback ops"] == "cast"
    null = dict(zip(header, _row(coverage, "null:0"), strict=True))  # conformance only
    # softmax decomposes into ops that fall back: it counts as falling back, as add does
    assert null["measurements"] == "0" and null["ops on CPU fallback"] == "2"
    assert null["ops decomposed"] == "0" and null["fallback ops"] == "add, softmax"


def test_failures_show_their_whole_error(tmp_path):
    error = "add float32: mismatch at (3,) " + "x" * 300 + " | end of the error"
    path = tmp_path / "failing.json"
    path.write_text(
        json.dumps(
            [
                {
                    "backend": "mychip",
                    "device": "mychip:0",
                    "ok": False,
                    "host": "lab1.example",
                    "layers": [{"name": "timing", "ok": False, "detail": "events ran backwards"}],
                    "cells": [
                        {
                            "op": "add",
                            "dtype": "float32",
                            "status": "fail",
                            "ran": "kernel",
                            "error": error,
                        },
                        {"op": "fft", "dtype": "float32", "status": "unsupported"},
                    ],
                    "graphs": [
                        {"graph": "kdv_step", "dtype": "complex64", "status": "fail",
                         "path": "graph", "error": "jit (graph) vs eager: at (0,): -1.0"},
                        {"graph": "random-0", "dtype": "float32", "status": "pass",
                         "path": "fused"},
                    ],
                }
            ]
        )
    )
    md = build_report([path], tmp_path / "o")[3].read_text()
    section = _section(md, "Conformance")
    assert error in " ".join(section.split())  # whole, in the note below the table
    summary = _row(section, "failing.json")
    assert summary[1:6] == ["lab1", "mychip", "mychip:0", "False", "2"]
    assert summary[-4:] == ["1", "1", "kdv_step graph (fail); random-0 fused",
                            "timing: events ran backwards"]  # unsupported, fail, jit, layers
    failure = next(line for line in section.splitlines() if "jit kdv_step" in line)
    assert [cell.strip() for cell in failure.strip("|").split("|")][-3:] == [
        "jit kdv_step", "complex64", "graph: jit (graph) vs eager: at (0,): -1.0"]
    assert "No measurements in these files." in md
    html = (tmp_path / "o" / "report.html").read_text()
    assert "x" * 300 + " | end of the error" in html


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ('[{"backend": "cpu", "device": "cpu:0", "ok": tru', "not valid JSON"),
        ('[{"backend": "cpu", "device": "cpu:0", "ok": true}]', "item 0 has no 'cells'"),
        (
            '[{"backend": "cpu", "device": "cpu:0", "ok": "yes", "cells": []}]',
            'item 0.ok is "yes", not true or false',
        ),
        (
            '[{"backend": "cpu", "device": "cpu:0", "ok": true, "cells": '
            '[{"op": "add", "dtype": "float32", "status": "maybe"}]}]',
            "cells[0].status is 'maybe', not one of pass, fail, fallback, unsupported",
        ),
        ("[1, 2]", "item 0 is not an object"),
        (
            '[{"backend": "cpu", "device": "cpu:0", "ok": true, "cells": [], "graphs": '
            '[{"graph": "kdv_step", "dtype": "complex64"}]}]',
            "item 0 graphs[0] has no 'status'",
        ),
    ],
)
def test_a_malformed_conformance_file_is_a_clear_error(tmp_path, capsys, content, problem):
    path = tmp_path / "conformance-bad.json"
    path.write_text(content)
    with pytest.raises(ConformanceError, match=re.escape(problem)) as caught:
        read_conformance(path)
    assert isinstance(caught.value, ResultsError) and str(path) in str(caught.value)
    assert main(["report", str(path), "-o", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and problem in err and "hal conformance --out" in err


def test_a_conformance_file_larger_than_any_record_is_refused_unread(tmp_path, monkeypatch):
    path = tmp_path / "conformance-huge.json"
    path.write_text('[{"backend": "cpu", "device": "cpu:0", "ok": true, "cells": []}]' + " " * 200)
    monkeypatch.setenv("HAL_MAX_RECORD_BYTES", "100")
    with pytest.raises(ResultsError, match=r"conformance-huge.json: .* more than the 100 .*"
                                           "HAL_MAX_RECORD_BYTES"):
        read_conformance(path)
    monkeypatch.delenv("HAL_MAX_RECORD_BYTES")
    assert read_conformance(path)[0].backend == "cpu"
