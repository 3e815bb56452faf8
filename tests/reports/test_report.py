"""`hal report`: files produced, tables and plots in them, bad input."""

import csv
import dataclasses
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from benchmarks.schema.files import load_results
from benchmarks.schema.records import ResultsError
from reports.cli import main
from reports.report import ReportError, build_report

PACKAGE_ROOT = Path(__file__).resolve().parents[2]


def test_report_files_tables_and_plots(two_backend_run, tmp_path):
    out = tmp_path / "out"
    written = build_report([two_backend_run], out)
    names = {p.name for p in written}
    assert {"report.md", "report-details.md", "report.html", "results.csv", "speedup-opencl.png",
            "distributions-cpu.png", "distributions-opencl.png"} <= names
    assert any(n.startswith("roofline-") for n in names)
    md = (out / "report-details.md").read_text()
    assert "## Suite `ops`" in md and "## Speedup vs `cpu`" in md
    gemm = next(line for line in md.splitlines() if line.startswith("| ops/gemm"))
    assert re.search(r"\| 2\.0\dx \[", gemm)  # opencl is 2x faster on gemm, with a CI
    assert "geometric mean" in md
    assert "| opencl" in md and "cast" in md  # coverage table names the fallen-back op
    assert "failed: kernel crashed" in md
    html = (out / "report.html").read_text()
    assert html.count("data:image/png;base64,") == len(written) - 4
    assert "http://" not in html and "https://" not in html and "<style>" in html
    rows = list(csv.DictReader((out / "results.csv").open()))
    assert len(rows) == 6
    assert {r["status"] for r in rows} == {"ok", "failed"}


def test_speedup_geomean_and_pct_of_peak(two_backend_run, tmp_path):
    md = build_report([two_backend_run], tmp_path / "o")[3].read_text()
    geo = next(line for line in md.splitlines() if line.startswith("| geometric mean"))
    assert "1.00x" in geo  # sqrt(2.0 * 0.5)
    gemm_cpu = next(
        line for line in md.splitlines() if line.startswith("| gemm") and "| cpu " in line
    )
    assert re.search(r"\| +200(\.0)? +\| +10 +\|", gemm_cpu)  # 2e9 FLOP, 1e8 B in 10 ms
    assert re.search(r"\| +100(\.0)? +\|", gemm_cpu)  # of the 200 GFLOP/s peak


def test_several_runs_in_one_report(two_backend_run, tmp_path, measurement, results_file):
    other = results_file("other.jsonl", [measurement("gemm", "cpu", 0.011, 9)], "other")
    md = build_report([two_backend_run, other], tmp_path / "o", baseline="cpu@run")[3].read_text()
    assert "cpu@other" in md and "opencl@run" in md


def test_unknown_baseline_lists_valid_ones(two_backend_run, tmp_path):
    with pytest.raises(ReportError, match=r"'tpu'.*cpu, opencl"):
        build_report([two_backend_run], tmp_path / "o", baseline="tpu")


def test_unwritable_output_dir_exits_2_naming_it(two_backend_run, tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    out = blocker / "report"
    assert main(["report", str(two_backend_run), "-o", str(out)]) == 2
    assert str(out) in capsys.readouterr().err


def test_unreadable_results_file_exits_2_naming_it(tmp_path, capsys):
    missing = tmp_path / "nope.jsonl"
    with pytest.raises(ResultsError):
        build_report([missing], tmp_path / "o")
    assert main(["report", str(missing), "-o", str(tmp_path / "o")]) == 2
    assert "nope.jsonl" in capsys.readouterr().err


def test_cli_default_output_dir(two_backend_run, capsys):
    assert main(["report", str(two_backend_run)]) == 0
    assert (two_backend_run.parent / "two-report" / "report.html").exists()
    assert "two-report" in capsys.readouterr().out


def test_reports_never_import_hal_and_register_is_light(two_backend_run, tmp_path):
    conformance = tmp_path / "conformance.json"
    conformance.write_text(
        '[{"backend": "opencl", "device": "opencl:0", "ok": true, "cells": '
        '[{"op": "add", "dtype": "float32", "status": "pass", "ran": "kernel"}]}]'
    )
    code = textwrap.dedent(f"""
        import sys
        import reports.cli
        light = [m for m in ("pandas", "matplotlib", "numpy", "hal") if m in sys.modules]
        assert not light, light
        from reports.report import build_report
        build_report([{str(two_backend_run)!r}, {str(conformance)!r}], {str(tmp_path / "o")!r})
        assert "hal" not in sys.modules
    """)
    subprocess.run([sys.executable, "-c", code], check=True, cwd=PACKAGE_ROOT, timeout=120)


def test_coverage_names_skipped_workloads(measurement, results_file, tmp_path):
    path = results_file(
        "skip.jsonl",
        [
            measurement("gemm", "cpu", 0.01, 1),
            measurement("fft", "opencl", 0.01, 2, status="skipped", fallbacks=("fftn",)),
        ],
    )
    md = build_report([path], tmp_path / "o")[3].read_text()
    coverage = md[md.index("## Op coverage") :]
    opencl = next(line for line in coverage.splitlines() if line.startswith("| opencl"))
    assert opencl.rstrip(" |").endswith("fft") and "fftn" in opencl


def test_a_directory_of_results_is_read_whole(two_backend_run, measurement, results_file, tmp_path):
    results_file("other.jsonl", [measurement("gemm", "cpu", 0.011, 9)], "other")
    md = build_report([two_backend_run.parent], tmp_path / "o")[3].read_text()
    assert "cpu@other" in md and "opencl@run" in md


def test_a_run_where_everything_failed_still_reports(measurement, results_file, tmp_path):
    path = results_file(
        "bad.jsonl",
        [
            measurement("gemm", "cpu", 0.01, 1, status="failed"),
            measurement("fft", "cpu", 0.01, 2, status="timeout"),
        ],
    )
    md = build_report([path], tmp_path / "o")[3].read_text()
    assert "failed: kernel crashed" in md and "timeout: kernel crashed" in md
    assert "No workload measured `ok` on both" in md


def test_a_run_without_measurements_says_so(results_file, tmp_path):
    md = build_report([results_file("empty.jsonl", [])], tmp_path / "o")[3].read_text()
    assert "No measurements in these files." in md


def test_a_long_skip_reason_appears_whole(measurement, results_file, tmp_path):
    reason = "FallbackRefused: matmul on tpu:0 for float32: " + "the backend has no kernel " * 11
    assert len(reason) > 300
    skipped = [measurement(w, "tpu", 0.01, i, status="skipped") for i, w in enumerate("abc")]
    for m in skipped:
        m.error = reason
    path = results_file("skip.jsonl", [measurement("a", "cpu", 0.01, 9), *skipped])
    out = tmp_path / "o"
    md = build_report([path], out)[3].read_text()
    suite = md[md.index("## Suite") : md.index("## Skipped and failed")]
    # each row cut, with the number of the note below the table that holds it whole, once
    assert len([line for line in suite.splitlines() if re.search(r"\[1\] +\|$", line)]) == 3
    assert " ".join(suite.split()).count(f"[1] skipped: {reason.strip()}") == 1
    grouped = md[md.index("## Skipped and failed") :].split("\n## ")[0]
    row = next(line for line in grouped.splitlines() if line.startswith("| tpu"))
    assert "ops/a n=1024 float32; ops/b n=1024 float32; ops/c n=1024 float32" in row
    assert f"[1] {reason.strip()}" in " ".join(grouped.split())
    assert (out / "report.html").read_text().count(reason.strip()) == 4


_HOSTILE = r"<script>alert(1)</script> $\frac{1}{$ ../../x"  # markup, mathtext, a path


def test_text_from_results_files_is_shown_as_written_and_stays_in_its_place(
        measurement, results_file, tmp_path):
    failed = measurement("fft", "cpu", 0.01, 3, status="failed")
    ms = [dataclasses.replace(measurement("gemm", "cpu", 0.01, 1), params={"n": _HOSTILE}),
          dataclasses.replace(measurement(_HOSTILE, _HOSTILE, 0.01, 2), params={_HOSTILE: 1}),
          dataclasses.replace(failed, error=_HOSTILE)]
    out = tmp_path / "sub" / "out"
    written = build_report([results_file("x.jsonl", ms, hostname=_HOSTILE)], out)
    assert all(path.parent == out for path in written)  # plots named after the device too
    assert sum(path.name.startswith("roofline-") for path in written) == 2
    html = (out / "report.html").read_text()
    assert not re.search("<script", html, re.IGNORECASE)
    assert "&lt;script&gt;alert(1)&lt;/script&gt; $\\frac{1}{$ ../../x" in html


@pytest.mark.parametrize("kind", ["symlink loop", "fifo", "long line"])
def test_a_results_directory_with_what_cannot_be_read_is_an_error_naming_it(
        two_backend_run, tmp_path, capsys, monkeypatch, kind):
    bad = two_backend_run.parent / "bad.jsonl"
    if kind == "symlink loop":
        bad.symlink_to(bad.name)
        reason = f"cannot read results file {bad}: .*symbolic link that leads back to itself"
    elif kind == "fifo":
        os.mkfifo(bad)  # reading it would wait forever
        reason = f"{bad} is not a regular file"
    else:
        bad.write_text(two_backend_run.read_text().splitlines()[0] + "\n" + "x" * 5000)
        monkeypatch.setenv("HAL_MAX_RECORD_BYTES", "4096")
        reason = f"{bad}:2: a line of more than 4096 bytes"
    assert main(["report", str(two_backend_run.parent), "-o", str(tmp_path / "o")]) == 2
    assert re.search(reason, capsys.readouterr().err)
    assert main(["compare", str(bad), str(two_backend_run)]) == 2
    assert re.search(reason, capsys.readouterr().err)


def test_plot_labels_are_short_and_unique():
    import pandas as pd

    from reports.plots import LABEL_CHARS, _labels

    params = ["a" * 50 + "x" + "b" * 50, "a" * 50 + "y" + "b" * 50, "n=1"]
    data = pd.DataFrame({"suite": "s", "workload": "w", "params": params, "dtype": "f32",
                         "series": "cpu"})
    labels = list(_labels(data))
    assert len(set(labels)) == 3 and labels[2] == "s/w n=1 f32"
    assert all(len(label) <= LABEL_CHARS + 3 for label in labels)


def test_a_peer_measured_under_two_devices_is_no_speedup_of_theirs(measurement, results_file,
                                                                  tmp_path):
    from reports.frame import measurements_frame
    from reports.tables import across_table, speedups

    peer = {"peer": "numpy 2.4"}
    ms = [measurement("gemm", "cpu", 0.010, 1), measurement("gemm", "opencl", 0.005, 2),
          *(dataclasses.replace(measurement("gemm[numpy]", b, 0.02, i), params=peer,
                                facts={"peer_device": "host CPU"})
            for i, b in enumerate(("cpu", "opencl"), 3))]
    frame = measurements_frame([load_results(results_file("peers.jsonl", ms))])
    assert set(frame["peer_device"].dropna()) == {"host CPU"}
    assert list(speedups(frame, "cpu")["workload"]) == ["gemm"]
    assert list(across_table(frame, "cpu")["workload"][:1]) == ["gemm"]
    assert "gemm[numpy]" not in set(across_table(frame, "cpu")["workload"])
