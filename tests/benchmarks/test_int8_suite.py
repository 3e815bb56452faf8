"""The int8 suite at batch 1 on cpu (checked, timed, cosine recorded), its skips, and its
retention metrics on small synthetic embeddings."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import hal
from benchmarks import ort_peer
from benchmarks.suites import int8
from benchmarks.timing import TimingOptions, measure
from benchmarks.workload import suite_workloads

TINY = TimingOptions(warmup=0, min_samples=1, max_samples=1, sample_time=0.0, budget=0.0,
                     queries=1, query_budget=0.0)


def _workload(name: str, batch: int):
    (found,) = [w for w in suite_workloads("int8")
                if w.name == name and w.params.get("batch") == batch]
    return found


def test_the_suite_has_fp32_and_int8_in_hal_and_the_peer_at_every_batch():
    minilm = [w for w in suite_workloads("int8") if w.name.startswith("minilm")]
    names = {(w.name, w.params["batch"]) for w in minilm}
    labels = ("fp32", "int8", "ort-fp32", "ort-int8")
    assert names == {(f"minilm[{p}]", b) for p in labels for b in int8.BATCHES}
    assert all(w.params["seq"] == 128 and "2300" in w.params["claim"] for w in minilm)
    assert all(w.params["int8_form"] == hal.ops.quant.int8_product_form()
               for w in minilm if w.params["precision"] == "int8")


@pytest.mark.parametrize("name", ["qmatmul", "qmatmul[ort]"])
def test_qmatmul_512_on_cpu_is_exact_and_names_the_product_form(cpu, name):
    workload = _workload(name, None)
    assert workload.params["int8_form"] in ("uint8 x int8", "uint8 x uint8")
    assert workload.params["threads"] == hal.settings.threads
    record = measure(workload, "int8", "uint8", cpu, TINY)
    assert record.status == "ok", record.error
    assert record.check.passed and record.check.max_error == 0
    assert record.metrics["items_per_s"] > 0


def test_a_wrong_qmatmul_answer_fails_the_check(cpu):
    workload = _workload("qmatmul[ort]", None)
    wrong = dataclasses.replace(workload, run=lambda a, b: workload.run(a, b) + 1)
    assert measure(wrong, "int8", "uint8", cpu, TINY).status == "failed"


@pytest.mark.parametrize("name", ["minilm[fp32]", "minilm[int8]", "minilm[ort-int8]"])
def test_batch_1_on_cpu_is_checked_timed_and_records_the_cosine(cpu, name):
    record = measure(_workload(name, 1), "int8", "float32", cpu, TINY)
    assert record.status == "ok", record.error
    assert record.check.passed and record.items == 1 and record.metrics["items_per_s"] > 0
    quality = record.check.quality
    assert quality["cosine_min"] <= quality["cosine_mean"]
    if name == "minilm[fp32]":
        assert quality["cosine_min"] > 1 - 1e-6 and record.check.max_error < 1e-5
    else:  # quantized: close to the FP32 reference, not equal to it
        assert 0.98 < quality["cosine_min"] < 1 - 1e-5


def test_a_wrong_int8_answer_fails_the_check(cpu):
    workload = _workload("minilm[int8]", 1)
    wrong = dataclasses.replace(workload, run=lambda ids, mask: -workload.run(ids, mask))
    record = measure(wrong, "int8", "float32", cpu, TINY)
    assert record.status == "failed" and "wrong answer" in record.error
    assert record.check.quality["cosine_min"] < -0.9


def test_batch_32_is_skipped_with_the_reason_outside_cpu_and_onnxruntime(null):
    record = measure(_workload("minilm[int8]", 32), "int8", "float32", null, TINY)
    assert record.status == "skipped"
    assert "NotMeasuredHere" in record.error and "cpu, onnxruntime, cuda only" in record.error


def test_the_onnxruntime_peer_is_skipped_off_the_cpu_and_without_its_gpu_provider(
        null, monkeypatch):
    from frontends.science import peers

    monkeypatch.setattr(peers, "device_kinds", lambda device: ("opencl",))
    record = measure(_workload("minilm[ort-fp32]", 1), "int8", "float32", null, TINY)
    assert record.status == "skipped"
    assert record.error == ("PeerNotHere: peer onnxruntime runs on cpu and cuda devices; "
                            "null:0 is opencl")
    monkeypatch.setattr(peers, "device_kinds", lambda device: ("cuda",))
    monkeypatch.setattr(ort_peer, "available_providers", lambda: [ort_peer.CPU])
    record = measure(_workload("minilm[ort-fp32]", 1), "int8", "float32", null, TINY)
    assert record.status == "skipped" and "pip install onnxruntime-gpu" in record.error
    record = measure(_workload("qmatmul[ort]", None), "int8", "uint8", null, TINY)
    assert record.status == "skipped" and "runs on the host CPU; null:0 is cuda" in record.error


def test_tokens_pad_the_shipped_sentences_to_the_sequence_length():
    t = int8.tokens(3, seq=16)
    assert t["input_ids"].shape == t["attention_mask"].shape == (3, 16)
    lengths = t["attention_mask"].sum(axis=1)
    assert 0 < lengths.min() and lengths.max() < 16
    for row, n in zip(t["input_ids"], lengths):
        assert row[0] == 101 and row[n - 1] == 102 and not row[n:].any()  # [CLS] .. [SEP] pad


# -- retention metrics --------------------------------------------------------------------------
def _at(degrees, scale=1.0) -> np.ndarray:
    """Points on a circle of radius `scale` at these angles."""
    radians = np.deg2rad(degrees)
    return scale * np.stack([np.cos(radians), np.sin(radians)], axis=-1)


BASE = _at([0, 10, 90, 100])  # two tight pairs: (0, 1) of topic a, (2, 3) of topic b
TOPICS = ["a", "a", "b", "b"]


def test_nearest_other_skips_the_row_itself_and_ignores_lengths():
    np.testing.assert_array_equal(int8.nearest_other(BASE), [1, 0, 3, 2])
    np.testing.assert_array_equal(int8.nearest_other(BASE * [[1], [3], [0.5], [2]]),
                                  [1, 0, 3, 2])


def test_agreement_and_topic_accuracy_count_the_rows_whose_neighbour_moved():
    moved = _at([0, 10, 90, 40])  # row 3's nearest becomes row 1; the others keep theirs
    np.testing.assert_array_equal(int8.nearest_other(moved), [1, 0, 3, 1])
    assert int8.neighbour_agreement(BASE, BASE) == 1.0
    assert int8.neighbour_agreement(BASE, moved) == 0.75
    assert int8.topic_accuracy(BASE, TOPICS) == 1.0
    assert int8.topic_accuracy(moved, TOPICS) == 0.75
    assert int8.topic_accuracy(BASE[[0, 2, 1, 3]], TOPICS) == 0.0


def test_retention_measures_cosines_and_the_goal():
    near = _at([1, 9, 91, 99])  # every row turned by 1 degree
    r = int8.retention(BASE, near, TOPICS)
    assert r["cosine_min"] == pytest.approx(np.cos(np.deg2rad(1)))
    assert r["cosine_mean"] == pytest.approx(np.cos(np.deg2rad(1)))
    assert r["neighbour_agreement"] == 1.0 and r["topic_accuracy_int8"] == 1.0
    assert r["goal_met"]
    far = _at([0, 10, 90, 40])
    r = int8.retention(BASE, far, TOPICS)
    assert r["cosine_min"] == pytest.approx(np.cos(np.deg2rad(60)))
    assert r["neighbour_agreement"] == 0.75 and not r["goal_met"]


def test_retention_and_the_round_trip_are_facts_of_the_batch_8_workloads():
    minilm = [w for w in suite_workloads("int8") if w.name.startswith("minilm")]
    hal_facts = {(w.name, w.params["batch"]) for w in minilm if w.facts and "peer" not in w.params}
    assert hal_facts == {("minilm[fp32]", 8), ("minilm[int8]", 8)}
    peers = [w for w in minilm if "peer" in w.params]
    assert len(peers) == 6 and all(w.facts for w in peers)  # the provider and its device
    retention = {(w.name, w.params["batch"]) for w in peers if w.facts.args[0]}
    assert retention == {("minilm[ort-int8]", 8)}


def test_retention_facts_name_each_variant_and_measure(monkeypatch):
    topics = ("a", "a", "b", "b")
    monkeypatch.setattr(int8, "sentences", lambda: (topics, {
        "input_ids": np.zeros((4, 2), np.int64), "attention_mask": np.ones((4, 2), np.int64)}))
    monkeypatch.setattr(int8, "embeddings_reference", lambda ids, mask: BASE)
    facts = int8.retention_facts(BASE, {"per-tensor": _at([1, 9, 91, 99])})
    assert facts["per-tensor/neighbour_agreement"] == 1.0
    assert facts["per-tensor/goal_met"] == "met" and facts["sentences"] == 4
    assert facts["fp32_cosine_min_to_reference"] == pytest.approx(1.0)
    assert facts["topic_accuracy_reference"] == 1.0


def test_retention_is_left_out_off_cpu_and_onnxruntime(null):
    ids = hal.asarray(np.ones((1, 4), np.int64), device=null)
    with pytest.raises(hal.UnsupportedOp, match="retention is measured on cpu, onnxruntime, cuda"):
        int8._hal_facts("int8")(ids, ids)
