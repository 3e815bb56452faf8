"""The "CNN" section, built from hand-made cnn suite records."""

from __future__ import annotations

import pytest

from benchmarks.schema.files import load_results
from reports.figures import cnn
from reports.report import build_report

WEIGHTS = "random (seed 0), not trained"


@pytest.fixture
def cnn_file(suite_measurement, results_file):
    def resnet(label, backend, median, batch, side, **kw):
        params = {"model": "ResNet-50", "weights": WEIGHTS, "batch": batch,
                  "image": f"3x{side}x{side}", "precision": "fp32"}
        return suite_measurement("cnn", f"resnet50[{label}]", backend, median, params=params,
                                 dtype="float32", items=batch,
                                 metrics={"items_per_s": batch / median} if median else {},
                                 quality={"cosine_min": 0.9999995}, **kw)

    def digits(precision, median, quality):
        params = {"model": "digits CNN", "batch": 359, "precision": precision,
                  "accuracy_target": "top-1 >= 95%; INT8 >= 99% of FP32", "top1_goal": 0.95,
                  "retention_goal": 0.99}
        return suite_measurement("cnn", f"digits_cnn[{precision}]", "cpu", median,
                                 params=params, dtype="float32", items=359,
                                 metrics={"items_per_s": 359 / median}, quality=quality)

    ms = [resnet("fp32", "cpu", 1.0, 1, 224), resnet("ort", "cpu", 0.25, 1, 224),
          resnet("torch", "cpu", 0.0, 1, 224, status="skipped", error="PeerUnavailable"),
          resnet("fp32", "cpu", 8.0, 32, 112), resnet("ort", "cpu", 2.0, 32, 112),
          digits("fp32", 0.04, {"accuracy": 0.9777}),
          digits("int8", 0.05, {"accuracy": 0.9749, "fp32_accuracy": 0.9777,
                                "retention": 0.9749 / 0.9777})]
    return results_file("cnn.jsonl", ms)


def test_resnet_rates_per_batch_against_onnx_runtime(cnn_file):
    table = cnn.resnet_table(load_results(cnn_file).measurements)
    rows = {r["batch"]: r for r in table.to_dict("records")}
    assert rows[1]["image"] == "3x224x224" and rows[32]["image"] == "3x112x112"
    assert float(rows[1]["hal images/s"]) == pytest.approx(1.0, rel=0.02)
    assert float(rows[1]["ONNX Runtime"]) == pytest.approx(4.0, rel=0.02)
    assert float(rows[1]["x ORT"]) == pytest.approx(0.25, rel=0.02)
    assert rows[1]["torch"] == "skipped" and rows[32]["torch"] == ""
    assert float(rows[32]["x ORT"]) == pytest.approx(0.25, rel=0.02)


def test_digits_accuracy_retention_and_the_report(cnn_file, tmp_path):
    table = cnn.digits_table(load_results(cnn_file).measurements)
    fp32, int8 = table.to_dict("records")
    assert (fp32["precision"], fp32["top-1"], fp32["retention"]) == ("FP32", "97.77%", "")
    assert (int8["precision"], int8["top-1"], int8["retention"]) == ("INT8", "97.49%", "99.71%")
    md = build_report([cnn_file], tmp_path / "out")[3].read_text()
    assert "## CNN" in md and WEIGHTS in md and "top-1 >= 95%; INT8 >= 99% of FP32" in md
    assert "## MLPerf-style inference" in md and "top-1 97.77%" in md
