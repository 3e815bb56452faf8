"""The "Claims vs measured" table: pairing, ratios, checks and whole reasons, from files."""

from __future__ import annotations

import dataclasses
import re

import pytest

from benchmarks.claims import CLAIMS, claim
from benchmarks.schema.files import load_results
from benchmarks.schema.records import Check
from reports.claims import claims_table
from reports.report import build_report


@pytest.fixture
def seed_measurement(measurement):
    """A synthetic seed measurement: `claim`, `role` and extra params, metrics, quality."""

    def make(workload, backend, median, claim_id, role, *, seed=0, status="ok", error=None,
             params=None, metrics=None, quality=None, items=None, fallbacks=()):
        m = measurement(workload, backend, median, seed, status=status, fallbacks=fallbacks)
        return dataclasses.replace(
            m, suite="seed", params={"claim": claim_id, "role": role, **(params or {})},
            error=error if status != "ok" else None, items=items,
            metrics={**m.metrics, **(metrics or {})},
            check=Check(status == "ok", 1e-7, 1e-4, quality or {}) if status == "ok" else None)

    return make


def _row(table, claim_id):
    return table[table["claim"] == claim(claim_id).text].iloc[0]


def test_best_hal_against_the_strongest_peer(seed_measurement, results_file):
    ms = [seed_measurement("fft2", "cpu", 0.010, "complex_fft", "candidate"),
          seed_measurement("fft2", "opencl", 0.004, "complex_fft", "candidate", seed=1),
          seed_measurement("fft2[numpy]", "cpu", 0.030, "complex_fft", "baseline",
                           params={"peer": "numpy 2.4"}),
          seed_measurement("fft2[scipy]", "cpu", 0.008, "complex_fft", "baseline",
                           params={"peer": "scipy 1.17"}),
          seed_measurement("fft2[torch]", "cpu", 0.0, "complex_fft", "baseline",
                           status="skipped", params={"peer": "torch unavailable"},
                           error="PeerUnavailable: " + "torch is not importable " * 12)]
    table = claims_table([load_results(results_file("seed.jsonl", ms))])
    assert list(table["claim"]) == [c.text for c in CLAIMS]
    row = _row(table, "complex_fft")
    assert row["baseline"] == "scipy 1.17" and row["candidate"] == "hal on opencl:0"
    assert re.fullmatch(r"(7\.9\d|8(\.0\d)?) ms -> (3\.9\d|4(\.0\d)?) ms", row["measured"])
    assert float(row["ratio"][:-1]) == pytest.approx(2.0, abs=0.03)
    assert row["published ratio"] == "2.27x"
    assert "torch is not importable " * 12 in row["notes"]  # the whole reason
    host = "PeerNotHere: peer scipy runs on cpu devices; opencl:0 is opencl"
    complex_ = "UnsupportedDType: no complex dtype"
    more = [seed_measurement("fft2[scipy]", "opencl", 0, "complex_fft", "baseline",
                             status="skipped", error=host, params={"peer": "scipy 1.17"}),
            *(seed_measurement("fft2", b, 0, "complex_fft", "candidate", status="skipped",
                               error=complex_) for b in ("tvm", "onnxruntime"))]
    notes = _row(claims_table([load_results(results_file("more.jsonl", [*ms, *more]))]),
                 "complex_fft")["notes"]
    assert f"fft2[scipy] on opencl:0 skipped: {host}" in notes  # every row says why
    assert f"fft2 on tvm:0, onnxruntime:0 skipped: {complex_}" in notes
    fallen = seed_measurement("fft2", "null", 0.001, "complex_fft", "candidate",
                              fallbacks=("fftn",))
    table = claims_table([load_results(results_file("fallen.jsonl", [*ms, fallen]))])
    assert _row(table, "complex_fft")["candidate"] == "hal on null:0 (CPU fallback calls: 1)"
    assert "passed" in row["check"]
    assert _row(table, "bert_int8")["measured"].startswith("not run")


def test_int8_pairs_on_one_backend_and_reports_the_peer(seed_measurement, results_file):
    rate = {"cpu": (100.0, 150.0), "onnxruntime": (200.0, 250.0)}
    ms = []
    for i, (backend, (fp32, int8)) in enumerate(rate.items()):
        ms += [seed_measurement("minilm[fp32]", backend, 32 / fp32, "bert_int8", "baseline",
                                seed=i, metrics={"items_per_s": fp32}),
               seed_measurement("minilm[int8]", backend, 32 / int8, "bert_int8", "candidate",
                                seed=i, metrics={"items_per_s": int8},
                                quality={"cosine_min": 0.991, "cosine_mean": 0.996})]
    ms += [seed_measurement("minilm[ort-fp32]", "cpu", 0.1, "bert_int8", "peer baseline",
                            params={"peer": "onnxruntime 1.32"}, metrics={"items_per_s": 220.0}),
           seed_measurement("minilm[ort-int8]", "cpu", 0.1, "bert_int8", "peer candidate",
                            params={"peer": "onnxruntime 1.32"}, metrics={"items_per_s": 330.0})]
    row = _row(claims_table([load_results(results_file("int8.jsonl", ms))]), "bert_int8")
    # the best INT8 (onnxruntime, 250/s) against FP32 on the same backend, not cpu's 100/s
    assert (row["baseline"], row["candidate"]) == ("hal on onnxruntime:0",
                                                   "hal on onnxruntime:0")
    assert row["ratio"] == "1.25x"
    assert "cosine to FP32 >= 0.9910" in row["check"]
    assert "peer onnxruntime 1.32: 220 samples/s -> 330 samples/s (1.50x)" in row["notes"]


def test_unmeasurable_claims_say_why(seed_measurement, results_file):
    reason = "NotMeasuredHere: training a 175B-parameter model takes weeks; projection 31.3 days"
    lines = {"single_device_lines": 14, "parallel_lines": 17, "lines_differing": 6,
             "model_annotation_lines": 6, "manual_lines": 55, "manual_lines_differing": 45}
    ms = [seed_measurement("gpt3_175b_training", "cpu", 0.0, "days_175b", "candidate",
                           status="skipped", error=reason),
          seed_measurement("lm_step", "cpu", 0.05, "parallel_code", "candidate",
                           params={"layout": "tp=2"}, quality=lines)]
    table = claims_table([load_results(results_file("s.jsonl", ms))])
    assert _row(table, "days_175b")["measured"] == f"not measurable here: {reason}"
    code = _row(table, "parallel_code")
    assert code["measured"] == ("45 lines by hand -> 12 (14-line single-device script: 6 "
                                "lines changed + 6 annotations in the model = 12; 73% fewer)")
    assert code["ratio"] == "3.75x" and "by hand" in code["baseline"]


def test_utilisation_and_footprint(seed_measurement, results_file):
    ms = [seed_measurement("lm_step", "cpu", 0.08, "utilisation", "single",
                           params={"layout": "1 rank", "dp": 1}, metrics={"items_per_s": 1000.0}),
          seed_measurement("lm_step", "cpu", 0.07, "utilisation", "baseline",
                           params={"layout": "dp=2 buckets off", "dp": 2},
                           metrics={"items_per_s": 1200.0}),
          seed_measurement("lm_step", "cpu", 0.06, "utilisation", "candidate",
                           params={"layout": "dp=2 zero=2", "dp": 2},
                           metrics={"items_per_s": 1500.0}),
          seed_measurement("ns[jit]", "cpu", 1.0, "pde_memory", "candidate",
                           params={"mode": "jit"},
                           metrics={"footprint_mib": 60.0, "call_peak_mib": 20.0}),
          seed_measurement("ns[numpy]", "cpu", 1.0, "pde_memory", "baseline",
                           params={"peer": "numpy 2.4"},
                           metrics={"footprint_mib": 90.0, "call_peak_mib": 80.0})]
    table = claims_table([load_results(results_file("u.jsonl", ms))])
    use = _row(table, "utilisation")
    assert use["candidate"] == "hal dp=2 zero=2 on cpu:0" and use["ratio"] == "1.25x"
    assert "scaling efficiency of hal dp=2 zero=2 on cpu:0: 75% of 2 x" in use["notes"]
    memory = _row(table, "pde_memory")
    assert memory["measured"] == "90 MiB -> 60 MiB" and memory["ratio"] == "1.50x"
    assert "steady call peak 20 MiB" in memory["notes"]


def test_runs_are_not_mixed(seed_measurement, results_file):
    a = results_file("a.jsonl", [seed_measurement("fft", "cpu", 0.01, "parallel_fft",
                                                  "candidate", items=1024)], run_id="a")
    b = results_file("b.jsonl", [seed_measurement("fft", "cpu", 0.02, "parallel_fft",
                                                  "candidate", items=1024)], run_id="b")
    table = claims_table([load_results(a), load_results(b)])
    assert sorted(set(table["run"])) == ["a", "b"] and len(table) == 2 * len(CLAIMS)
    assert claims_table([]).empty


def test_the_report_has_the_section_only_with_seed_results(seed_measurement, results_file,
                                                          two_backend_run, tmp_path):
    seeded = results_file("seed.jsonl", [seed_measurement("fft", "cpu", 0.01, "parallel_fft",
                                                          "candidate", items=1024)])
    md = build_report([seeded], tmp_path / "a")[3].read_text()
    assert "## Claims vs measured" in md and "1024-point parallel FFT" in md
    plain = build_report([two_backend_run], tmp_path / "b")[3].read_text()
    assert "Claims vs measured" not in plain


def test_a_partial_run_says_what_is_missing(seed_measurement, results_file, tmp_path):
    ms = [seed_measurement("fft2", "cpu", 0.010, "complex_fft", "candidate")]
    partial = claims_table([load_results(results_file("p.jsonl", ms, completed=False))])
    assert _row(partial, "complex_fft")["measured"] == (
        "incomplete: no baseline measured before the run ended; measured: hal on cpu:0 "
        "(candidate)")
    assert _row(partial, "bert_int8")["measured"].startswith("not reached: the run ended")
    out = tmp_path / "o"
    build_report([results_file("p.jsonl", ms, completed=False)], out)
    assert "Run `run` did not finish" in (out / "report.md").read_text()
    complete = claims_table([load_results(results_file("c.jsonl", ms))])
    assert _row(complete, "complex_fft")["measured"] == (
        "incomplete: no baseline measured; measured: hal on cpu:0 (candidate)")


def test_devices_skipped_for_one_reason_share_a_note(seed_measurement, results_file):
    ms = [seed_measurement("fft2", "cpu", 0.010, "complex_fft", "candidate"),
          seed_measurement("fft2[scipy]", "cpu", 0.008, "complex_fft", "baseline",
                           params={"peer": "scipy 1.17"})]
    ms += [seed_measurement(w, b, 0, "complex_fft", "candidate", status="skipped",
                            error=f"UnsupportedDType: no complex64 on {b}:0")
           for w in ("fft2", "fft2b") for b in ("tvm", "onnxruntime")]
    ms.append(seed_measurement("fft2c", "tvm", 0, "complex_fft", "candidate",
                               status="skipped", error="UnsupportedDType: no complex64 on tvm:0"))
    notes = _row(claims_table([load_results(results_file("n.jsonl", ms))]),
                 "complex_fft")["notes"]
    assert notes == ("fft2, fft2b on tvm:0, onnxruntime:0; fft2c on tvm:0 skipped: "
                     "UnsupportedDType: no complex64 on <device>")
