"""`hal compare`: verdicts on synthetic data, fingerprints, exit codes, --across backends."""

import json

import pytest

from benchmarks.schema.files import load_results
from benchmarks.schema.records import SCHEMA_VERSION
from reports.cli import main
from reports.compare import compare_backends, compare_runs, exit_code


@pytest.fixture
def base_and_new(measurement, results_file):
    """BASE and NEW runs: one faster, one slower, one the same, a new failure and a fix."""
    base = results_file(
        "base.jsonl",
        [
            measurement("faster", "cpu", 0.010, 1),
            measurement("slower", "cpu", 0.010, 2),
            measurement("same", "cpu", 0.010, 3),
            measurement("breaks", "cpu", 0.010, 4),
            measurement("mended", "cpu", 0.010, 5, status="failed"),
            measurement("dropped", "cpu", 0.010, 6),
        ],
        "base",
    )
    new = results_file(
        "new.jsonl",
        [
            measurement("faster", "cpu", 0.008, 11),
            measurement("slower", "cpu", 0.013, 12),
            measurement("same", "cpu", 0.010, 13),
            measurement("breaks", "cpu", 0.010, 14, status="timeout"),
            measurement("mended", "cpu", 0.010, 15),
            measurement("added", "cpu", 0.010, 16),
        ],
        "new",
    )
    return base, new


def test_verdicts(base_and_new):
    base, new = (load_results(p) for p in base_and_new)
    rows = {c.workload: c for c in compare_runs(base, new)}
    assert {w: c.verdict for w, c in rows.items()} == {
        "faster": "improved",
        "slower": "regressed",
        "same": "unchanged",
        "breaks": "new failure",
        "mended": "fixed",
        "dropped": "incomparable",
        "added": "incomparable",
    }
    faster = rows["faster"]
    assert faster.ci_low < 1.25 < faster.ci_high and faster.p_value < 1e-6
    assert rows["same"].p_value > 0.01
    assert rows["added"].note == "only in NEW"
    assert exit_code(list(rows.values())) == 1


def test_threshold_turns_a_small_change_into_unchanged(measurement, results_file):
    base = load_results(results_file("a.jsonl", [measurement("w", "cpu", 0.010, 1)]))
    new = load_results(results_file("b.jsonl", [measurement("w", "cpu", 0.0097, 2)]))
    assert compare_runs(base, new)[0].verdict == "unchanged"  # 3% < default 5%
    assert compare_runs(base, new, threshold=0.01)[0].verdict == "improved"


def test_cli_exit_codes_and_output(base_and_new, measurement, results_file, capsys):
    base, new = base_and_new
    assert main(["compare", str(base), str(new)]) == 1
    out = capsys.readouterr().out
    assert "regressed" in out and "new failure" in out and "1 improved" in out
    same = results_file("same.jsonl", [measurement("same", "cpu", 0.010, 21)])
    assert main(["compare", str(base), str(same)]) == 0


def _with_other_host(path, tmp_path):
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    lines[0]["host"]["cpu"] = "Another CPU"
    lines[0]["fingerprint"] = "0" * 64
    other = tmp_path / "other-host.jsonl"
    other.write_text("\n".join(json.dumps(r) for r in lines))
    return other


def test_mismatched_fingerprints_refused_or_flagged(base_and_new, tmp_path, capsys):
    base, new = base_and_new
    other = _with_other_host(new, tmp_path)
    assert main(["compare", str(base), str(other)]) == 2
    err = capsys.readouterr().err
    assert "different setups" in err and "Another CPU" in err and "--force" in err
    assert main(["compare", str(base), str(other), "--force"]) == 1
    assert "warning: different setups" in capsys.readouterr().out


def test_unreadable_file_and_bad_arguments(base_and_new, tmp_path, capsys):
    base, _ = base_and_new
    assert main(["compare", str(base), str(tmp_path / "gone.jsonl")]) == 2
    assert "gone.jsonl" in capsys.readouterr().err
    assert main(["compare", str(base)]) == 2
    assert "--across" in capsys.readouterr().err


def test_across_backends(two_backend_run, capsys):
    rows = compare_backends(load_results(two_backend_run), "cpu")
    assert {(c.workload, c.verdict) for c in rows} == {
        ("gemm", "improved"),
        ("add", "regressed"),
        ("fft", "new failure"),
    }
    gemm = next(c for c in rows if c.workload == "gemm")
    assert gemm.speedup == pytest.approx(2.0, rel=0.02) and gemm.new == "opencl:0"
    assert main(["compare", str(two_backend_run), "--across", "backends"]) == 0
    assert "opencl:0" in capsys.readouterr().out
    assert main(["compare", str(two_backend_run), "--across", "backends", "--baseline", "tpu"]) == 2
    assert "backends there: cpu, opencl" in capsys.readouterr().err


def test_a_run_of_another_major_schema_version_is_not_comparable(base_and_new, tmp_path, capsys):
    base, new = base_and_new
    future = tmp_path / "future.jsonl"
    future.write_text(new.read_text().replace(f'"schema": "{SCHEMA_VERSION}"', '"schema": "2.0"'))
    assert main(["compare", str(base), str(future)]) == 2
    err = capsys.readouterr().err
    assert "future.jsonl:1" in err and "schema version 2.0" in err


def test_a_run_on_a_busy_machine_is_flagged(base_and_new, tmp_path, capsys):
    base, new = base_and_new
    lines = [json.loads(line) for line in new.read_text().splitlines()]
    lines[0]["loadavg"] = [64.0, 64.0, 64.0]
    busy = tmp_path / "busy.jsonl"
    busy.write_text("\n".join(json.dumps(r) for r in lines))
    main(["compare", str(base), str(busy)])
    assert "busy.jsonl started at load average 64.00" in capsys.readouterr().out


def test_escape_sequences_in_a_results_file_do_not_reach_the_terminal(measurement, results_file,
                                                                      capsys):
    name = "add\x1b]0;owned\x07\x1b[2J"
    base = results_file("base.jsonl", [measurement(name, "cpu", 0.010, 1)], "base")
    new = results_file("new.jsonl", [measurement(name, "cpu", 0.010, 2)], "new")
    main(["compare", str(base), str(new)])
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "add\\x1b]0;owned\\x07\\x1b[2J" in out
