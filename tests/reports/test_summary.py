"""The report's first screen (report.md and the top of report.html): is it correct, how
fast against the alternatives, what is missing; plots that leave out no series; the
files' layout."""

from __future__ import annotations

import csv
import dataclasses
import json
import re

import pytest

from benchmarks.schema.records import Check
from reports.report import build_report
from tests.reports.conftest import synthetic_measurement, write_results

BACKENDS = ("cpu", "opencl", "tvm")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """The report of 50 workloads on three backends (opencl 2x faster than cpu, tvm 4x
    slower; one wrong output), one reason naming its device on opencl and tvm, a failure,
    and a conformance file where opencl fails a cell and falls back on one: its directory
    and files."""
    tmp = tmp_path_factory.mktemp("summary")
    ms = []
    for i in range(50):
        for backend, factor in zip(BACKENDS, (1.0, 0.5, 4.0), strict=True):
            m = synthetic_measurement(f"w{i:02d}", backend, 0.001 * factor,
                                      i * 10 + len(backend))
            ms.append(dataclasses.replace(m, params={"n": i, "note": "y" * 60}))
    for backend in BACKENDS[1:]:
        m = synthetic_measurement("fft", backend, 0.0, 7, status="skipped")
        ms.append(dataclasses.replace(m, error=f"UnsupportedDType: no complex64 on {backend}:0; "
                                               + "the device declares none " * 8))
    ms.append(synthetic_measurement("broken", "tvm", 0.0, 8, status="failed"))
    ms[1] = dataclasses.replace(ms[1], check=Check(False, 0.5, 1e-5))  # opencl w00: wrong
    results = write_results(tmp / "big.jsonl", ms)
    cells = [{"op": "add", "dtype": "float32", "status": "pass", "ran": "kernel"},
             {"op": "exp", "dtype": "float32", "status": "fallback", "ran": "fallback"},
             {"op": "matmul", "dtype": "float16", "status": "fail", "error": "mismatch"}]
    conformance = tmp / "conformance-1.json"
    conformance.write_text(json.dumps([
        {"backend": "cpu", "device": "cpu:0", "ok": True, "cells": cells[:1]},
        {"backend": "opencl", "device": "opencl:0", "ok": False, "cells": cells}]))
    out = tmp / "o"
    return out, build_report([results, conformance], out)


def _section(md: str, title: str) -> str:
    start = md.index(f"## {title}")
    end = md.find("\n## ", start + 1)
    return md[start : end if end > 0 else None]


def _row(text: str, start: str) -> list[str]:
    line = next(line for line in text.splitlines() if line.startswith(f"| {start}"))
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_the_summary_answers_the_three_questions(report):
    out, _ = report
    md = (out / "report.md").read_text()
    correct = _section(md, "Is it correct?")
    assert _row(correct, "cpu")[:3] == ["cpu", "cpu:0", "certified"]
    assert _row(correct, "opencl")[:4] == ["opencl", "opencl:0", "1 cell failed", "3"]
    assert "Benchmark output checks: 1 of 150 FAILED: opencl w00." in correct
    fast = _section(md, "How fast, against the alternatives?")
    opencl, tvm = _row(fast, "opencl"), _row(fast, "tvm")
    assert opencl[1] == "50" and re.fullmatch(r"(1\.9\d|2\.0\d)x", opencl[2])
    assert re.fullmatch(r"0\.2\dx", tvm[2]) and tvm[5:7] == ["0", "50"]  # slower beyond the CI
    missing = _section(md, "What is missing?")
    assert _row(missing, "tvm")[1:6] == ["52", "50", "1", "1", "0"]
    reason = _row(missing, "skipped")
    assert reason[1].startswith("UnsupportedDType: no complex64 on <device>;")
    assert reason[2:] == ["2", "opencl, tvm"]  # one line for both devices
    assert "| opencl:0 |" in missing and "exp" in missing  # the op that falls back
    assert "[Speedup vs `cpu`](report-details.md#speedup-vs-cpu)" in md
    assert len(md.splitlines()) < 100 and max(map(len, md.splitlines())) < 250
    details = (out / "report-details.md").read_text()
    assert max(map(len, details.splitlines())) < 1000
    html = (out / "report.html").read_text()
    top, folded = html.index('<section id="summary">'), html.index("<details")
    assert top < folded and "certified" in html[top:folded]
    assert html.count('<details class="part"') == md.count("](report-details.md#")


def test_a_skip_reason_naming_each_device_is_one_row(report):
    details = report[0].joinpath("report-details.md").read_text()
    skipped = _section(details, "Skipped and failed")
    assert _row(skipped, "opencl, tvm")[1:3] == ["skipped", "ops/fft n=1024 float32"]
    assert "no complex64 on <device>" in skipped and "on tvm:0" not in skipped


def test_plots_leave_out_no_series_and_say_what_they_cut(report):
    out, written = report
    names = {p.name for p in written}
    assert {"speedup-opencl.png", "speedup-tvm.png", "distributions-cpu.png",
            "distributions-opencl.png", "distributions-tvm.png"} <= names
    details = (out / "report-details.md").read_text()
    assert "`tvm`: 40 of its 50 speedups plotted, the 20 lowest and the 20 highest" in details
    assert "`cpu`: the 40 of its 50 measurements with the widest spread" in details


def test_results_csv_names_files_without_absolute_paths(report):
    rows = list(csv.DictReader((report[0] / "results.csv").open()))
    assert {r["file"] for r in rows} == {"big.jsonl"}
