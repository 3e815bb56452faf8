"""reports.figures.gpu: the GPU figures of a gpu suite run against their goals."""

from __future__ import annotations

from benchmarks.schema.records import Measurement
from reports.figures import gpu


def _m(workload, seconds=None, dtype="float32", status="ok", **fields):
    return Measurement(suite="gpu", workload=workload, backend="cuda", device="cuda:0",
                       dtype=dtype, status=status, stats=None if seconds is None else
                       {"median": seconds}, **fields)


def test_figures_against_their_goals():
    shape = {"M": 4096, "N": 4096, "K": 4096}
    ms = [_m("add", 1.0, metrics={"pct_of_peak": 91.0}),
          _m("add", 1.0, "float16", metrics={"pct_of_peak": 60.0}),
          _m("softmax", 1.2), _m("softmax[torch]", 1.0),
          _m("layer_norm", 0.9), _m("layer_norm[torch]", 1.0),
          _m("qmatmul", 1.0, "int8", params=shape),
          _m("qmatmul[torch]", 0.9, "int8", params={**shape, "peer": "torch 2.11"}),
          _m("bert-base[fp32]", 3.0), _m("bert-base[int8]", 1.0), _m("bert-base[fp16]", 1.5),
          _m("bert-base[bf16]", status="failed", error="bf16 broke\nat line 3")]
    rows = {r["figure"]: r for r in gpu.figures_table(ms).to_dict("records")}
    assert (rows["add float32: % of bandwidth peak"]["met"],
            rows["add float16: % of bandwidth peak"]["met"]) == ("yes", "no")
    assert rows["add bfloat16: % of bandwidth peak"]["note"] == "not measured"
    assert (rows["softmax: hal time / torch"]["value"],
            rows["softmax: hal time / torch"]["met"]) == ("1.2", "no")
    assert rows["layer_norm: hal time / torch"]["met"] == "yes"
    gemm = rows["int8 GEMM 4096x4096x4096: hal rate / torch._int_mm"]
    assert (gemm["value"], gemm["met"]) == ("0.9", "yes")
    assert rows["BERT-base INT8 / FP32 throughput"]["value"] == "3"
    assert rows["BERT-base INT8 / FP32 throughput"]["met"] == "yes"
    assert rows["BERT-base FP16 / FP32 throughput"]["goal"] == ""
    assert rows["BERT-base BF16 / FP32 throughput"]["note"].startswith(
        "bert-base[bf16] failed: bf16 broke")
    assert rows["fft: hal time / torch"]["value"] == ""


def test_no_gpu_measurements_no_section():
    assert gpu.figures_table([]).empty
