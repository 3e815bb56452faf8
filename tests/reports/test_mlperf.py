"""The MLPerf-style section and the "% peak" column's honesty about caches and peaks."""

import numpy as np

from benchmarks.schema.environment import new_run
from benchmarks.schema.files import ResultWriter
from benchmarks.schema.records import Check, DeviceRecord, Measurement
from benchmarks.stats import summarize
from reports.figures import mlperf
from reports.frame import load_inputs
from reports.report import build_report
from reports.tables import suite_table

FACTS = {"per-channel/topic_accuracy_int8": 0.96, "per-channel/topic_accuracy_fp32": 0.96}


def minilm(precision, batch, cosine=0.999, facts=None, samples=None, status="ok", peer=False):
    """A MiniLM measurement as the int8 suite records it."""
    samples = samples if samples is not None else [0.01 * batch] * 20
    params = {"model": "all-MiniLM-L6-v2", "seq": 128, "batch": batch, "precision": precision}
    if peer:
        params["peer"] = "onnxruntime 1.20"
    ok = status == "ok"
    return Measurement(
        "int8", f"minilm[{'ort-' if peer else ''}{precision}]", "cpu", "cpu:0", "float32",
        params=params, status=status, error=None if ok else "not here",
        samples=samples if ok else [], stats=summarize(samples).to_dict() if ok else None,
        items=batch, metrics={"items_per_s": batch / float(np.median(samples))} if ok else {},
        check=Check(cosine >= 0.9, 0.01, 0.25, {"cosine_min": cosine}) if ok else None,
        facts=facts or {})


def test_single_stream_percentiles_offline_throughput_and_targets():
    latencies = [0.001 * i for i in range(1, 101)]
    ms = [minilm("fp32", 1, samples=latencies), minilm("int8", 8, facts=FACTS),
          minilm("int8", 32), minilm("int8", 8, cosine=0.95, peer=True),
          minilm("fp32", 32, status="skipped")]
    table = mlperf.mlperf_table(ms).set_index(["runtime", "precision", "batch"])
    single = table.loc[("hal cpu:0", "FP32", 1)]
    assert single["scenario"] == "single-stream" and single["queries"] == 100
    assert (single["p50"], single["p90"], single["p99"]) == ("50 ms", "90 ms", "99 ms")
    assert single["result"] == "PASS" and single["target"] == "cosine >= 0.99"
    offline = table.loc[("hal cpu:0", "INT8", 8)]
    assert offline["scenario"] == "offline" and offline["p90"] == ""
    assert offline["samples/s"] == "100.0"  # 8 samples in 80 ms
    assert "100.00% of FP32" in offline["accuracy"] and offline["result"] == "PASS"
    assert table.loc[("hal cpu:0", "INT8", 32)]["result"] == "PASS"  # the runtime's facts
    peer = table.loc[("onnxruntime 1.20 (peer)", "INT8", 8)]
    assert peer["result"] == "FAIL (cosine only)"  # 0.95 < 0.99, no facts of its own
    assert table.loc[("hal cpu:0", "FP32", 32)]["result"] == "skipped"


def test_an_int8_row_below_99_percent_of_fp32_fails():
    facts = {**FACTS, "per-channel/topic_accuracy_int8": 0.95}  # 98.96% of 0.96
    (row,) = mlperf.mlperf_table([minilm("int8", 8, facts=facts)]).to_dict("records")
    assert "98.96% of FP32" in row["accuracy"] and row["result"] == "FAIL"


def digits_cnn(precision, quality, passed=True):
    """A digits CNN measurement as the cnn suite records it (359 test images, offline)."""
    params = {"model": "digits CNN", "batch": 359, "precision": precision, "top1_goal": 0.95,
              "retention_goal": 0.99}
    samples = [0.01] * 10
    return Measurement("cnn", f"digits_cnn[{precision}]", "cpu", "cpu:0", "float32",
                       params=params, samples=samples, stats=summarize(samples).to_dict(),
                       items=359, metrics={"items_per_s": 35900.0},
                       check=Check(passed, 0.01, 0.05, quality))


def test_a_trained_classifier_is_judged_on_top1_and_int8_on_retention():
    ms = [digits_cnn("fp32", {"accuracy": 0.97}),
          digits_cnn("int8", {"accuracy": 0.96, "fp32_accuracy": 0.97,
                              "retention": 0.96 / 0.97})]
    fp32, int8 = mlperf.mlperf_table(ms).sort_values("precision").to_dict("records")
    assert fp32["target"] == "top-1 >= 95%" and fp32["result"] == "PASS"
    assert "top-1 97.00%" in fp32["accuracy"]
    assert int8["target"] == "top-1 >= 95%, >= 99% of FP32"
    assert "98.97% of FP32" in int8["accuracy"] and int8["result"] == "FAIL"
    (low,) = mlperf.mlperf_table([digits_cnn("fp32", {"accuracy": 0.94})]).to_dict("records")
    assert low["result"] == "FAIL"


def _write(path, measurements, peaks):
    run = new_run("run", devices=[DeviceRecord("cpu:0", "cpu", {"memory": "host"}, peaks)])
    with ResultWriter(path) as w:
        w.write_run(run)
        for m in measurements:
            w.write(m)
        w.write_end(run.id, True)
    return path


def test_the_report_has_the_section_and_marks_in_cache_rows(tmp_path):
    def stream(n_bytes, seconds):
        return Measurement("peak", "stream_scale", "cpu", "cpu:0", "float64",
                           params={"bytes": n_bytes}, samples=[seconds] * 10,
                           stats=summarize([seconds] * 10).to_dict(), bytes=n_bytes,
                           metrics={"gbps": n_bytes / seconds / 1e9})
    peaks = {"gbps": 10.0, "memory": {"name": "host", "cache_bytes": 2**25,
                                      "kernel": "numba copy, 2 threads", "load": 0.3}}
    path = _write(tmp_path / "r.jsonl", [stream(2**24, 2**24 / 40e9), stream(2**30, 2**30 / 5e9),
                                        stream(2**31, 2**31 / 12e9),
                                        minilm("fp32", 1)], peaks)
    table = suite_table(load_inputs([path]).frame.query("suite == 'peak'"))
    cells = dict(zip(table["params"], table["% peak"], strict=True))
    assert cells["bytes=16777216"] == "in cache"  # 40 GB/s from the cache, no % of DRAM
    assert cells["bytes=1073741824"] == "50.0"
    assert cells["bytes=2147483648"].startswith("120.0: above the host bandwidth peak (10 GB/s")
    md = build_report([path], tmp_path / "o")[3].read_text()  # report-details.md
    assert "## MLPerf-style inference" in md and "single-stream" in md
    assert "10 (host memory, numba copy, 2 threads; last-level cache 32 MiB; load 0.30)" in md
