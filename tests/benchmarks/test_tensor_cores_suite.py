"""The tensor_cores suite (int8 GEMMs beside torch._int_mm, BERT-base in four precisions):
its rows, what it leaves out on a CPU, and its BERT precisions against the numpy reference
on a small BERT of the same construction."""

from __future__ import annotations

import numpy as np
import pytest

import hal
from benchmarks.suites import tensor_cores
from benchmarks.workload import NotMeasuredHere

SMALL = {"vocab_size": 1500, "hidden_size": 32, "num_attention_heads": 4,
         "intermediate_size": 64, "num_hidden_layers": 2}


def test_rows():
    names = [w.name for w in tensor_cores.workloads()]
    assert names.count("qmatmul") == names.count("qmatmul[torch]") == 3
    assert [n for n in names if n.startswith("bert")] == [
        "bert-base[fp32]", "bert-base[int8]", "bert-base[fp16]", "bert-base[bf16]"]


def test_qmatmul_reference_is_exact():
    case = tensor_cores._qmatmul_case(64, 48, 256)(None)
    a, b = case.inputs
    expected = a.astype(np.int64) @ b.astype(np.int64)
    assert np.array_equal(tensor_cores.qmatmul_reference(a, b), expected)
    assert case.flops == 2.0 * 64 * 48 * 256


def test_gpu_rows_are_skipped_on_the_cpu_with_a_reason():
    ids = hal.asarray(np.zeros((2, 4), np.int64))
    for w in tensor_cores.workloads():
        if w.name.startswith("bert") or w.name == "qmatmul":
            with pytest.raises(NotMeasuredHere, match="measured on cuda only"):
                w.run(ids, ids)


@pytest.fixture
def small_bert(monkeypatch):
    monkeypatch.setattr(tensor_cores, "BERT_BASE", {**tensor_cores.BERT_BASE, **SMALL})
    monkeypatch.setattr(tensor_cores, "BATCH", 3)
    monkeypatch.setattr(tensor_cores, "SEQ", 16)
    for cached in (tensor_cores.bert_state, tensor_cores.bert_model,
                   tensor_cores._bert_reference):
        cached.cache_clear()
    yield
    for cached in (tensor_cores.bert_state, tensor_cores.bert_model,
                   tensor_cores._bert_reference):
        cached.cache_clear()


@pytest.mark.parametrize("precision", list(tensor_cores.PRECISIONS))
def test_each_precision_is_within_its_tolerance_of_the_reference(small_bert, precision):
    ids, mask = tensor_cores._bert_case(None).inputs
    expected = tensor_cores.bert_reference(ids, mask)
    out = tensor_cores.bert_model(hal.device("cpu"), precision)(
        hal.asarray(ids), hal.asarray(mask)).numpy()
    error = np.linalg.norm(out - expected) / np.linalg.norm(expected)
    workload = next(w for w in tensor_cores.workloads() if w.name == f"bert-base[{precision}]")
    assert error < workload.tolerance("float32"), error
    assert precision == "fp32" or error > 1e-6  # the reduced precision is in effect
