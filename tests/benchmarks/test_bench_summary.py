"""The closing lines of `hal bench`: suite times, headline speedups, counts by outcome and
skip reason, the report's path, all within 80 columns."""

from pathlib import Path

import pytest

from benchmarks.schema.records import Measurement, Results, RunRecord
from benchmarks.summary import counts, duration, reason, speedups, suite_seconds, summary_lines

NO_KERNEL = ("FallbackRefused: {op} on {device} for float32: the backend has no kernel and "
             "HAL_FALLBACK=error forbids the CPU fallback; set HAL_FALLBACK=warn or allow")


def _m(suite, workload, device, median=None, status="ok", error=None, time="", n=1):
    return Measurement(suite=suite, workload=workload, backend=device.split(":")[0],
                       device=device, dtype="float32", params={"n": n}, status=status,
                       error=error, stats={"median": median} if median else None,
                       time=f"2026-01-01T00:{time}+00:00")


@pytest.fixture
def results():
    ms = [
        _m("peak", "gemm", "cpu:0", 4.0, time="00:00"),
        _m("peak", "gemm", "opencl:0", 1.0, time="00:30"),
        _m("quick", "add", "cpu:0", 2.0, time="01:00"),
        _m("quick", "add", "opencl:0", 4.0, time="01:10"),
        _m("quick", "fft", "opencl:0", status="skipped", time="01:20",
           error=NO_KERNEL.format(op="fftn", device="opencl:0")),
        _m("quick", "max", "tvm:0", status="skipped", time="01:25",
           error=NO_KERNEL.format(op="max", device="tvm:0")),
        _m("quick", "bert", "tvm:0", status="skipped", time="01:30",
           error="UnsupportedDType: 'bfloat16' is not supported by tvm:0"),
        _m("quick", "sum", "tvm:0", status="failed", error="boom", time="01:40"),
    ]
    run = RunRecord(id="20260101T000000Z-1", start="2026-01-01T00:00:00+00:00",
                    end="2026-01-01T00:02:00+00:00")
    return Results(Path("/r/run.jsonl"), run, ms, completed=True)


def test_skip_reasons_group_across_ops_and_devices(results):
    assert reason(NO_KERNEL.format(op="add", device="null:0")) == (
        "FallbackRefused: the backend has no kernel and HAL_FALLBACK=error forbids the CPU "
        "fallback")
    assert reason("UnsupportedOp: peers run on the host; measured under cpu, not tvm:0") == (
        "UnsupportedOp: peers run on the host")
    assert reason(None) == "no reason given"
    found = counts(results.measurements)
    assert (found.ok, found.skipped, found.failed) == (4, 3, 1)
    assert [(n, devices) for n, _, devices in found.reasons] == [
        (2, ["opencl:0", "tvm:0"]), (1, ["tvm:0"])]
    assert found.reasons[1][1] == "UnsupportedDType: '…' is not supported by DEVICE"


def test_suite_times_run_until_the_next_measurement(results):
    assert suite_seconds(results) == {"peak": 60.0, "quick": 60.0}


def test_speedups_are_geometric_means_over_shared_workloads(results):
    # opencl: gemm 4x faster, add 2x slower -> geomean sqrt(4 * 0.5)
    (row,) = speedups(results)
    assert row == ("opencl:0 vs cpu:0", "1.41x geomean (0.5x-4x, 2 workloads)")
    assert speedups(results, baseline="tvm") == []


def test_the_summary_ends_with_counts_and_the_report_path(results):
    lines = summary_lines(results, Path("/r/run-report/report.html"), 3.0,
                          headlines=[("Complex FFT", "2.10x measured, 2.27x published")])
    text = "\n".join(lines)
    assert lines[0] == "bench: 8 measurement(s) in 2 min 00 s"
    assert "  suite peak" in text and "  report                 3.0 s" in lines
    assert "  Complex FFT        2.10x measured, 2.27x published" in lines
    assert "4 ok, 3 skipped, 1 failed or timed out" in lines
    assert "failed: 1 on tvm:0" in lines
    assert lines[-2:] == ["results: /r/run.jsonl", "report: /r/run-report/report.html"]
    assert max(map(len, lines)) <= 80


def test_many_reasons_are_cut_to_a_few_lines(results):
    many = [_m("quick", f"w{i}", "cpu:0", status="skipped", error=f"UnsupportedOp: why {i}",
               time=f"00:{i:02d}") for i in range(10)]
    lines = summary_lines(Results(results.path, results.run, many))
    assert "      4  in 4 more reasons: see the report's skipped section" in lines
    assert "(run not finished)" in lines[lines.index("skipped, by reason:") - 1]


def test_durations_in_words():
    assert [duration(s) for s in (4.25, 42, 185, 3725)] == [
        "4.2 s", "42 s", "3 min 05 s", "1 h 02 min"]
