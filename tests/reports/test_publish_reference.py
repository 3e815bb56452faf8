"""`hal publish`: a warning for a run measured on a busy machine or published without
conformance results, and one run per reference directory (a new one replaces the last)."""

import json

import pytest

from reports import publish
from reports.cli import main

CONFORMANCE = '[{"backend": "opencl", "device": "opencl:0", "ok": true, "cells": []}]'


def _with_load(path, load, cores=2):
    """The results file with its run record's load average and usable cores set."""
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for record in lines:
        if record["type"] == "run":
            record["loadavg"], record["host"]["usable_cores"] = [load, load, load], cores
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    return path


@pytest.fixture
def run_file(measurement, results_file):
    """Factory: a finished cpu + opencl run `run_id` started at load average `load`."""
    def make(run_id, load=0.1):
        ms = [measurement("gemm", "cpu", 0.010, 1), measurement("gemm", "opencl", 0.005, 2)]
        return _with_load(results_file(f"{run_id}.jsonl", ms, run_id), load)
    return make


@pytest.fixture
def conformance(tmp_path):
    path = tmp_path / "conformance-20260101T000000Z.json"
    path.write_text(CONFORMANCE)
    return path


def test_a_quiet_run_with_conformance_publishes_without_warnings(
    run_file, conformance, tmp_path, capsys
):
    dest = tmp_path / "ref"
    args = ["publish", str(run_file("quiet", load=0.5)), "--conformance", str(conformance)]
    assert main([*args, "--to", str(dest)]) == 0
    assert "warning" not in capsys.readouterr().err
    manifest = json.loads((dest / publish.MANIFEST).read_text())
    assert manifest == {"runs": ["quiet"], "files": sorted(
        ["quiet.jsonl", conformance.name, "quiet-report"])}


def test_a_busy_run_and_a_missing_conformance_file_are_warned_about(
    run_file, conformance, tmp_path, capsys
):
    dest = tmp_path / "ref"
    assert main(["publish", str(run_file("busy", load=1.5)), "--to", str(dest)]) == 0
    err = capsys.readouterr().err
    assert "warning: run busy started at load average 1.50 on 2 usable core(s)" in err
    assert "warning: no conformance results published with run busy" in err
    assert f"the newest beside the run: {conformance}" in err  # ci/main leaves it there
    assert (dest / "busy.jsonl").exists()  # published all the same


def test_a_new_run_replaces_the_last_one_in_the_reference(
    run_file, conformance, tmp_path, capsys
):
    dest = tmp_path / "ref"
    assert main(["publish", str(run_file("old")), "--conformance", str(conformance),
                 "--to", str(dest)]) == 0
    assert (dest / "old-report" / "report.html").exists()
    capsys.readouterr()
    assert main(["publish", str(run_file("new")), "--to", str(dest)]) == 0
    assert "it replaces the reference run old there" in capsys.readouterr().out
    assert sorted(p.name for p in dest.iterdir()) == [
        "new-report", "new.jsonl", publish.MANIFEST]
    # publishing the same run again keeps it, and a file put there by hand is named
    (dest / "by-hand.jsonl").write_text("")
    assert main(["publish", str(run_file("new")), "--to", str(dest)]) == 0
    captured = capsys.readouterr()
    assert "it replaces" not in captured.out and (dest / "new.jsonl").exists()
    assert "also holds by-hand.jsonl, not published by `hal publish`" in captured.err


def test_two_runs_are_not_one_reference(run_file, tmp_path, capsys):
    dest = tmp_path / "ref"
    assert main(["publish", str(run_file("a")), str(run_file("b")), "--to", str(dest)]) == 2
    assert "a reference is one run" in capsys.readouterr().err and not dest.exists()
