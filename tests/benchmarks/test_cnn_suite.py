"""The cnn suite on cpu: ResNet-50 at batch 1 in hal and ONNX Runtime (checked against the
numpy forward, timed), its skips, torchvision's names for hal's weights, and the digits CNN's
accuracy in FP32 and INT8 (values, not timings)."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from benchmarks.suites import cnn
from benchmarks.timing import TimingOptions, measure
from benchmarks.workload import suite_workloads
from frontends.nn import digits, resnet

TINY = TimingOptions(warmup=0, min_samples=1, max_samples=1, sample_time=0.0, budget=0.0,
                     queries=1, query_budget=0.0)


def _workload(name: str, batch: int):
    (found,) = [w for w in suite_workloads("cnn")
                if w.name == name and w.params["batch"] == batch]
    return found


def test_every_resnet_row_states_its_size_and_random_weights():
    rows = [w for w in suite_workloads("cnn") if w.name.startswith("resnet50")]
    assert {(w.name, w.params["batch"]) for w in rows} == {
        (f"resnet50[{r}]", b) for r in ("fp32", "ort", "torch") for b, _, _ in cnn.SIZES}
    assert all("random" in w.params["weights"] and w.params["image"].startswith("3x")
               for w in rows)
    assert all(w.single_stream == (w.params["batch"] == 1) for w in rows)


@pytest.mark.parametrize("name", ["resnet50[fp32]", "resnet50[ort]"])
def test_resnet50_batch_1_on_cpu_is_checked_and_timed(cpu, name):
    record = measure(_workload(name, 1), "cnn", "float32", cpu, TINY)
    assert record.status == "ok", record.error
    assert record.check.passed and record.items == 1 and record.metrics["items_per_s"] > 0
    assert record.check.quality["cosine_min"] > 0.9999


def test_batch_256_is_skipped_on_cpu_with_the_reason(cpu):
    record = measure(_workload("resnet50[fp32]", 256), "cnn", "float32", cpu, TINY)
    assert record.status == "skipped"
    assert "cuda only" in record.error and "minutes a call" in record.error


@pytest.mark.skipif(importlib.util.find_spec("torchvision") is not None,
                    reason="torchvision is installed: the row is measured")
def test_the_torch_row_says_how_to_install_it(cpu):
    record = measure(_workload("resnet50[torch]", 1), "cnn", "float32", cpu, TINY)
    assert record.status == "skipped" and "pip install torch torchvision" in record.error


def test_hal_weights_get_torchvisions_names():
    model = resnet.ResNet(resnet.ResNetConfig(blocks=(1, 1), width=4, classes=10), seed=0)
    state = cnn.torch_state(model)
    assert {"conv1.weight", "bn1.running_var", "layer1.0.conv2.weight", "layer2.0.bn3.bias",
            "layer2.0.downsample.0.weight", "layer2.0.downsample.1.running_mean",
            "fc.weight", "fc.bias"} <= set(state)
    assert len(state) == len(model.state_dict())
    assert np.array_equal(state["fc.weight"], model.fc.weight.numpy().T)
    assert np.array_equal(state["layer1.0.conv2.weight"],
                          model.stages[0][0].spatial.conv.weight.numpy())


@pytest.mark.skipif(importlib.util.find_spec("sklearn") is None, reason="needs scikit-learn")
@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_the_digits_cnn_reaches_its_accuracy_targets_on_cpu(cpu, precision):
    workload = _workload(f"digits_cnn[{precision}]", len(digits.test_split()[1]))
    record = measure(workload, "cnn", "float32", cpu, TINY)
    assert record.status == "ok", record.error
    quality = record.check.quality
    assert quality["accuracy"] >= digits.ACCURACY_TARGET
    if precision == "int8":
        assert quality["retention"] >= digits.RETENTION_TARGET
        assert quality["retention"] == quality["accuracy"] / quality["fp32_accuracy"]
