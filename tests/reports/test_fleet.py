"""`hal report` over a fleet: result files of several hosts, devices and runs in one report."""

import re

import pytest

from benchmarks.schema.files import load_results
from reports.cli import main
from reports.frame import load_inputs
from reports.report import build_report
from reports.tables import across_table


@pytest.fixture
def fleet(measurement, results_file):
    """Three files from two hosts: alpha ran twice (the first with a cuda device), beta once.

    gemm: alpha/r1 cpu 10 ms, cuda 2 ms; alpha/r2 cpu 12 ms; beta cpu 5 ms.
    fft only on beta (one series: not across); add failed on cuda (not ok: not across).
    """
    r1 = results_file(
        "r1.jsonl",
        [
            measurement("gemm", "cpu", 0.010, 1),
            measurement("gemm", "cuda", 0.002, 2),
            measurement("add", "cpu", 0.004, 3),
            measurement("add", "cuda", 0.001, 4, status="failed"),
        ],
        "r1",
        hostname="alpha.lab.example",
    )
    r2 = results_file("r2.jsonl", [measurement("gemm", "cpu", 0.012, 5)], "r2", hostname="alpha")
    r3 = results_file(
        "r3.jsonl",
        [measurement("gemm", "cpu", 0.005, 6), measurement("fft", "cpu", 0.003, 7)],
        "r3",
        hostname="beta",
    )
    return [r1, r2, r3]


def test_series_name_what_differs(fleet, measurement, results_file):
    series = set(load_inputs(fleet).frame["series"])
    assert series == {"cpu@alpha/r1", "cuda@alpha/r1", "cpu@alpha/r2", "cpu@beta"}
    # one host: the run only; one host and one run: the backend only
    assert set(load_inputs(fleet[:2]).frame["series"]) == {"cpu@r1", "cuda@r1", "cpu@r2"}
    assert set(load_inputs(fleet[2:]).frame["series"]) == {"cpu"}
    # two hosts with one run each: the host only; a backend with two devices: the device too
    two = measurement("gemm", "cuda", 0.001, 8)
    two.device = "cuda:1"
    other = results_file("r4.jsonl", [two], "r4", hostname="beta")
    assert set(load_inputs([fleet[0], other]).frame["series"]) == {
        "cpu@alpha",
        "cuda:0@alpha",
        "cuda:1@beta",
    }


def test_across_table_times_ratios_and_geometric_mean(fleet):
    frame = load_inputs(fleet).frame
    table = across_table(frame, "cpu@beta")
    assert list(table.columns) == [
        "suite",
        "workload",
        "params",
        "dtype",
        "cpu@beta",
        "cpu@alpha/r1",
        "cpu@alpha/r2",
        "cuda@alpha/r1",
    ]
    assert list(table["workload"]) == ["gemm", ""]  # fft: one series; add: failed on cuda
    gemm, geo = table.iloc[0], table.iloc[1]
    assert re.fullmatch(r"[45](\.\d+)? ms", gemm["cpu@beta"])  # the baseline: its time only

    def ratio(text: str) -> float:
        return float(re.fullmatch(r"\S+ ms \((\d\.\d\d)x\)", text).group(1))

    assert ratio(gemm["cpu@alpha/r1"]) == pytest.approx(5 / 10, abs=0.02)
    assert ratio(gemm["cpu@alpha/r2"]) == pytest.approx(5 / 12, abs=0.02)
    assert ratio(gemm["cuda@alpha/r1"]) == pytest.approx(5 / 2, abs=0.04)
    assert geo["suite"] == "geometric mean" and geo["cpu@beta"] == ""
    assert geo["cuda@alpha/r1"] == gemm["cuda@alpha/r1"][-6:-1]  # one ratio: itself


def test_fleet_report_runs_and_across_sections(fleet, tmp_path):
    md = build_report(fleet, tmp_path / "o", baseline="cpu@beta")[3].read_text()
    runs = md[md.index("## Runs") : md.index("## Devices")]
    r1 = next(line for line in runs.splitlines() if line.startswith("| r1.jsonl"))
    assert "alpha.lab.example" in r1 and "cpu:0 (cpu chip); cuda:0 (cuda chip)" in r1
    assert "| beta " in next(line for line in runs.splitlines() if "r3.jsonl" in line)
    across = md[md.index("## Across devices and runs") :]
    header = next(line for line in across.splitlines() if line.startswith("| suite"))
    assert "| cuda@alpha/r1" in header  # the header names every series
    assert re.search(r"\(2\.[45]\dx\)", across) and "## Speedup vs `cpu@beta`" in md


def test_compare_across_hosts_of_one_setup(fleet, capsys):
    base, new = load_results(fleet[1]), load_results(fleet[2])
    assert base.run.host["hostname"] != new.run.host["hostname"]
    assert base.run.compute_fingerprint() == new.run.compute_fingerprint()  # names don't count
    assert main(["compare", str(fleet[1]), str(fleet[2])]) == 0
    assert "improved" in capsys.readouterr().out  # 12 ms -> 5 ms
