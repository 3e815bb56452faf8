"""`hal publish`: a run, its conformance results and its report kept as a device's reference."""

import pytest

from reports import publish
from reports.cli import main

CONFORMANCE = (
    '[{"backend": "opencl", "device": "opencl:0", "ok": true, "cells": '
    '[{"op": "add", "dtype": "float32", "status": "pass", "ran": "kernel"}]}]'
)


@pytest.fixture
def clean_run(measurement, results_file):
    """A finished run of cpu and opencl without failures."""
    ms = [measurement("gemm", "cpu", 0.010, 1), measurement("gemm", "opencl", 0.005, 2)]
    return results_file("clean.jsonl", ms, "clean")


@pytest.fixture
def conformance(tmp_path):
    """A small conformance file of opencl:0."""
    path = tmp_path / "conformance-1.json"
    path.write_text(CONFORMANCE)
    return path


def test_publish_copies_run_conformance_and_report(clean_run, conformance, tmp_path, capsys):
    dest = tmp_path / "ref"
    assert (
        main(["publish", str(clean_run), "--conformance", str(conformance), "--to", str(dest)]) == 0
    )
    assert str(dest) in capsys.readouterr().out
    assert (dest / "clean.jsonl").read_bytes() == clean_run.read_bytes()
    assert (dest / "conformance-1.json").read_text() == CONFORMANCE
    md = (dest / "clean-report" / "report-details.md").read_text()
    assert "## Conformance" in md and "## Suite `ops`" in md


def test_the_directory_is_named_after_the_non_cpu_device(clean_run, tmp_path, monkeypatch):
    monkeypatch.setattr(publish, "REFERENCE_DIR", tmp_path / "reference")
    assert main(["publish", str(clean_run)]) == 0
    assert (tmp_path / "reference" / "opencl_chip" / "clean.jsonl").exists()  # "opencl chip"
    assert publish.directory_name("NVIDIA H200 (141 GB)") == "NVIDIA_H200__141_GB"


def test_an_incomplete_or_failing_run_is_refused_unless_forced(
    measurement, results_file, two_backend_run, tmp_path, capsys
):
    unfinished = results_file(
        "cut.jsonl", [measurement("gemm", "opencl", 0.01, 1)], "cut", completed=False
    )
    dest = tmp_path / "ref"
    assert main(["publish", str(unfinished), "--to", str(dest)]) == 2
    err = capsys.readouterr().err
    assert "run cut" in err and "did not complete" in err and "--resume" in err
    assert "--force" in err and not dest.exists()
    assert main(["publish", str(two_backend_run), "--to", str(dest)]) == 2
    err = capsys.readouterr().err
    assert "1 failed measurement(s): ops/fft on opencl:0 (failed)" in err
    assert main(["publish", str(unfinished), "--to", str(dest), "--force"]) == 0
    assert (dest / "cut.jsonl").exists() and (dest / "cut-report" / "report.html").exists()


def test_an_unknown_device_or_a_misplaced_file_is_refused(
    measurement, results_file, conformance, tmp_path, capsys
):
    two = results_file(
        "two.jsonl",
        [measurement("gemm", "opencl", 0.01, 1), measurement("gemm", "cuda", 0.01, 2)],
        "two",
    )
    assert main(["publish", str(two)]) == 2
    err = capsys.readouterr().err
    assert "cuda chip, opencl chip" in err and "--to DIR" in err
    assert main(["publish", str(conformance), "--to", str(tmp_path / "ref")]) == 2
    assert "give it with --conformance" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text("[{}]")
    dest = tmp_path / "ref"
    assert main(["publish", str(two), "--conformance", str(bad), "--to", str(dest)]) == 2
    assert "bad.json" in capsys.readouterr().err and not dest.exists()
