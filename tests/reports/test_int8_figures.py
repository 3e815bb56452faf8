"""The "INT8" section, built from hand-made int8 suite records."""

from __future__ import annotations

import pytest

from benchmarks.schema.files import load_results
from reports.figures import int8
from reports.report import build_report

CLAIM = "BERT INT8 780 -> 2300 samples/s (2.95x) at 99.2% of FP32 accuracy (V100)"
GOAL = {"goal_agreement": 0.992, "goal_cosine": 0.99, "sentences": 96, "topics": 8,
        "tokens": 17}


def _retained(variant, cos_min, agreement, met):
    return {f"{variant}/cosine_min": cos_min, f"{variant}/cosine_mean": 0.995,
            f"{variant}/neighbour_agreement": agreement, f"{variant}/topic_accuracy_fp32": 0.9,
            f"{variant}/topic_accuracy_int8": 0.85,
            f"{variant}/goal_met": "met" if met else "not met"}


@pytest.fixture
def int8_file(suite_measurement, results_file):
    def m(workload, backend, median, batch, *, peer=None, **kw):
        params = {"model": "all-MiniLM-L6-v2", "seq": 128, "batch": batch, "claim": CLAIM,
                  "precision": workload[7:-1].removeprefix("ort-")}
        if peer:
            params["peer"] = peer
        return suite_measurement("int8", workload, backend, median, params=params,
                                 dtype="float32", items=batch,
                                 metrics={"items_per_s": batch / median} if median else {},
                                 quality={"cosine_min": 0.999, "cosine_mean": 0.9995}, **kw)

    ms = [m("minilm[fp32]", "cpu", 0.080, 8,
            facts={"onnx_mb": 89.7, "checker": "passed", "ort_max_abs_diff": 1.2e-7,
                   "onnx_ops": "Add, MatMul",
                   "hal_load_max_abs_diff": "failed: TypeError: 'NoneType' is not callable"}),
          m("minilm[int8]", "cpu", 0.040, 8,
            facts={**GOAL, "fp32_cosine_min_to_reference": 1 - 2e-13,
                   "topic_accuracy_reference": 0.9166,
                   **_retained("per-channel", 0.9898, 0.84375, False),
                   **_retained("per-tensor", 0.9365, 0.7396, False)}),
          m("minilm[fp32]", "opencl", 0.400, 8, device="opencl:0"),
          m("minilm[int8]", "opencl", 0.500, 8, device="opencl:0"),
          m("minilm[ort-fp32]", "cpu", 0.050, 8, peer="onnxruntime 1.22"),
          m("minilm[ort-int8]", "cpu", 0.020, 8, peer="onnxruntime 1.22",
            facts={**GOAL, "fp32_cosine_min_to_reference": 1 - 3e-13,
                   **_retained("per-channel", 0.995, 0.995, True)}),
          m("minilm[int8]", "opencl", 0.0, 32, status="skipped", device="opencl:0",
            error="NotMeasuredHere: batch 32 on cpu, onnxruntime only")]
    return results_file("int8.jsonl", ms)


def test_throughput_ratios_and_the_best_hal_int8_against_the_peer(int8_file):
    ms = load_results(int8_file).measurements
    table = int8.throughput_table(ms)
    by = {(r["batch"], r["runtime"]): r for r in table.to_dict("records")}
    cpu = by[8, "hal cpu:0"]
    assert float(cpu["FP32 samples/s"]) == pytest.approx(100, rel=0.02)
    assert float(cpu["INT8 samples/s"]) == pytest.approx(200, rel=0.02)
    assert float(cpu["INT8/FP32"]) == pytest.approx(2.0, rel=0.02)
    assert float(by[8, "ONNX Runtime peer (onnxruntime 1.22)"]["INT8/FP32"]) == pytest.approx(
        2.5, rel=0.02)
    assert float(by[8, "hal opencl:0"]["INT8/FP32"]) == pytest.approx(0.8, rel=0.02)
    assert by[32, "hal opencl:0"]["INT8 samples/s"] == "skipped"
    (best,) = int8.best_against_peer(ms)
    assert best.startswith("Batch 8: hal's best INT8 (hal cpu:0) 2")
    assert best.endswith(": 0.50x.")


def test_retention_per_runtime_and_variant(int8_file):
    table = int8.retention_table(load_results(int8_file).measurements)
    rows = {(r["runtime"], r["INT8 variant"]): r for r in table.to_dict("records")}
    assert set(rows) == {("hal cpu:0", "per-channel"), ("hal cpu:0", "per-tensor"),
                         ("ONNX Runtime peer (onnxruntime 1.22)", "per-channel")}
    ours = rows["hal cpu:0", "per-channel"]
    assert ours["agreement"] == "84.4%" and ours["cosine min"] == "0.9898"
    assert ours["goal"] == "not met" and ours["reference topic accuracy"] == "91.7%"
    assert ours["its FP32 against the reference: 1 - cosine"] == "2.0e-13"
    assert rows["ONNX Runtime peer (onnxruntime 1.22)", "per-channel"]["goal"] == "met"


def test_the_round_trip_shows_its_figures_and_its_failure(int8_file, tmp_path):
    (row,) = int8.round_trip_table(load_results(int8_file).measurements).to_dict("records")
    assert row["precision"] == "fp32" and row["ONNX MB"] == "89.7"
    assert row["ONNX Runtime max abs diff"] == "1.2e-07"
    assert row["hal.onnx.load max abs diff"] == "failed: TypeError: 'NoneType' is not callable"
    md = build_report([int8_file], tmp_path / "out")[3].read_text()
    assert "## INT8" in md and CLAIM in md and "agreement >= 99.2% and every cosine >= 0.99" in md
    assert "96 sentences, 8 topics, 17 tokens" in md


def test_qmatmul_rows_against_the_matmulinteger_peer(suite_measurement, results_file, tmp_path):
    params = {"M": 512, "N": 512, "K": 512, "int8_form": "uint8 x int8",
              "int8_units": "amx_int8, avx512_vnni", "threads": 1}

    def m(backend, median, **extra):
        return suite_measurement("int8", "qmatmul" + ("[ort]" if extra else ""), backend,
                                 median, params={**params, **extra}, dtype="uint8",
                                 metrics={"gflops": 2 * 512 ** 3 / median / 1e9})

    path = results_file("int8.jsonl", [m("cpu", 2e-4), m("tvm", 8e-4),
                                       m("cpu", 1.6e-4, peer="onnxruntime 1.32.0")])
    table = int8.qmatmul_table(load_results(path).measurements)
    rows = {r["runtime"]: r for r in table.to_dict("records")}
    assert float(rows["hal cpu:0"]["x ONNX Runtime"]) == pytest.approx(0.8, rel=0.02)
    assert float(rows["hal tvm:0"]["x ONNX Runtime"]) == pytest.approx(0.2, rel=0.02)
    assert rows["hal cpu:0"]["GOP/s"] == "1342" and rows["hal cpu:0"]["threads"] == 1
    assert rows["hal cpu:0"]["product form"] == "uint8 x int8"
    md = build_report([path], tmp_path / "out")[3].read_text()
    assert "qmatmul (uint8 x int8 -> int32, exact)" in md and "amx_int8, avx512_vnni" in md


def test_the_peer_is_named_with_its_provider_and_device_where_recorded(int8_file):
    import dataclasses

    ms = load_results(int8_file).measurements
    placed = [dataclasses.replace(m, facts={
        **m.facts, "peer": "onnxruntime 1.22 (CUDAExecutionProvider)", "peer_device": "cuda:0"})
        for m in ms if "peer" in m.params]
    table = int8.throughput_table(placed)
    (row,) = table.to_dict("records")
    assert row["runtime"] == "ONNX Runtime peer (onnxruntime 1.22 (CUDAExecutionProvider) on " \
                             "cuda:0)"
    assert float(row["INT8/FP32"]) == pytest.approx(2.5, rel=0.02)
