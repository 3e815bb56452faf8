"""The "MLPerf-style inference" section: each inference measurement (a workload whose params
name a model, a batch and a precision, e.g. the int8 suite's MiniLM rows) as MLPerf tables
it: the scenario, latency percentiles, throughput, and accuracy against a stated target
with PASS or FAIL.

- Scenario: batch 1 is single-stream (one query per call; the samples are the latencies
  of single queries, so p50/p90/p99 are percentiles of query latency; MLPerf's metric is
  the p90); a larger batch is offline (throughput in samples/s; its per-call latencies
  are no MLPerf figure and are left out).
- Throughput: samples per call over the median call time.
- Accuracy: every output's cosine to the numpy FP32 reference (the lowest over the
  batch) must reach COSINE_TARGET (the int8 suite's own goal); an INT8 row must also
  keep FP32_SHARE_TARGET of FP32's accuracy (MLPerf's target for BERT: 99% of FP32),
  the accuracy being the topic neighbour accuracy on the shipped sentences that the same
  runtime's INT8 workload records in its facts (measured at one batch; weights and
  kernels are those of every batch). An INT8 row whose run holds no such facts is judged
  on the cosine alone and says so.
- A row of a trained classifier (params `top1_goal`, e.g. the cnn suite's digits CNN) is
  judged on its top-1 accuracy over labelled data instead (quality `accuracy`), and an
  INT8 one also on its retention (quality `retention`, INT8 over FP32; `retention_goal`).
"""

from __future__ import annotations

import pandas as pd

from benchmarks.schema.records import Measurement, Results
from benchmarks.stats import latency_percentiles
from reports.figures.lookup import case_and_label, number
from reports.frame import format_seconds
from reports.section import Block, Section

COSINE_TARGET = 0.99
FP32_SHARE_TARGET = 0.99
VARIANT = "per-channel"  # the INT8 weights the timed workloads use
TITLE = "MLPerf-style inference"


def is_inference(m: Measurement) -> bool:
    """True for an inference measurement: its params name a model, a batch and a precision."""
    return {"model", "batch", "precision"} <= set(m.params)


def sections(results: list[Results]) -> list[Section]:
    """The section: one table per run with inference measurements; none without."""
    runs = [(r.run.id, [m for m in r.measurements if is_inference(m)]) for r in results]
    runs = [(run, ms) for run, ms in runs if ms]
    if not runs:
        return []
    blocks: list[Block] = [
        "Inference rows as MLPerf reports them. Single-stream: batch 1, one query per call, "
        "latency percentiles over the queries timed (observed latencies, no interpolation; "
        "with fewer than 100 queries the p99 is the slowest). Offline: a larger batch, "
        "throughput in samples/s (samples per call over the median call). Accuracy: the "
        f"lowest cosine of an output to the numpy FP32 reference, target >= {COSINE_TARGET}; "
        f"an INT8 row also keeps >= {FP32_SHARE_TARGET:.0%} of FP32's accuracy (MLPerf's "
        "target for BERT), the topic neighbour accuracy on the shipped sentences that the "
        "same runtime's INT8 run records. The INT8 section's retention goal (nearest-"
        "neighbour agreement and every cosine over those sentences) is stricter and judged "
        "there."]
    for run, ms in runs:
        if len(runs) > 1:
            blocks.append(f"Run `{run}`:")
        blocks.append(mlperf_table(ms))
    return [Section(TITLE, blocks)]


def scenario(m: Measurement) -> str:
    """`single-stream` for batch 1, else `offline`."""
    return "single-stream" if int(m.params["batch"]) == 1 else "offline"


def runtime(m: Measurement) -> str:
    """hal with its device, or the peer with its version."""
    return f"{m.params['peer']} (peer)" if "peer" in m.params else f"hal {m.device}"


def fp32_share(m: Measurement, ms: list[Measurement]) -> tuple[float, float] | None:
    """(INT8, FP32) topic neighbour accuracy of `m`'s runtime from the facts an INT8
    workload of the same name and device recorded in the run; None without them."""
    int8_key, fp32_key = f"{VARIANT}/topic_accuracy_int8", f"{VARIANT}/topic_accuracy_fp32"
    for other in ms:
        if (other.workload, other.device) == (m.workload, m.device) and int8_key in other.facts:
            return float(other.facts[int8_key]), float(other.facts[fp32_key])
    return None


def judge(m: Measurement, ms: list[Measurement]) -> tuple[str, str, str]:
    """(accuracy, target, result) of one measurement: PASS/FAIL against the targets, or the
    status of a measurement that was not taken."""
    if "top1_goal" in m.params:
        return judge_top1(m)
    int8 = m.params.get("precision") == "int8"
    target = f"cosine >= {COSINE_TARGET}" + (
        f", >= {FP32_SHARE_TARGET:.0%} of FP32" if int8 else "")
    if m.status != "ok" or m.check is None:
        return "", target, m.status
    cosine = m.check.quality.get("cosine_min")
    passed = m.check.passed and cosine is not None and cosine >= COSINE_TARGET
    accuracy = f"cosine {number(cosine, '.4f')}" if cosine is not None else "no cosine"
    if not int8:
        return accuracy, target, "PASS" if passed else "FAIL"
    share = fp32_share(m, ms)
    if share is None:
        return (accuracy + "; FP32 share not measured in this run", target,
                ("PASS" if passed else "FAIL") + " (cosine only)")
    kept = share[0] / share[1] if share[1] else 0.0
    accuracy += f"; {kept:.2%} of FP32 (topic accuracy {share[0]:.1%} vs {share[1]:.1%})"
    return accuracy, target, "PASS" if passed and kept >= FP32_SHARE_TARGET else "FAIL"


def judge_top1(m: Measurement) -> tuple[str, str, str]:
    """(accuracy, target, result) of a trained classifier's row: top-1 against `top1_goal`,
    and for INT8 the retention against `retention_goal`."""
    top1, retention = float(m.params["top1_goal"]), m.params.get("retention_goal")
    int8 = m.params.get("precision") == "int8" and retention is not None
    target = f"top-1 >= {top1:.0%}" + (f", >= {float(retention):.0%} of FP32" if int8 else "")
    if m.status != "ok" or m.check is None:
        return "", target, m.status
    quality = m.check.quality
    accuracy = quality.get("accuracy")
    if accuracy is None:
        return "no accuracy recorded", target, "FAIL"
    passed = m.check.passed and accuracy >= top1
    text = f"top-1 {accuracy:.2%}"
    if int8:
        kept = quality.get("retention")
        if kept is None:
            return text + "; no retention recorded", target, "FAIL"
        text += f"; {kept:.2%} of FP32 ({quality.get('fp32_accuracy', float('nan')):.2%})"
        passed = passed and kept >= float(retention)
    return text, target, "PASS" if passed else "FAIL"


def _latency(m: Measurement, q: str) -> str:
    """A latency percentile of a single-stream row ("p50", "p90", "p99"), else empty; marked
    where a sample is the mean of several calls rather than one query."""
    if m.status != "ok" or scenario(m) != "single-stream" or not m.stats:
        return ""
    value = dict(zip(("p50", "p90", "p99"), latency_percentiles(m.samples), strict=True))[q] \
        if m.samples else m.stats.get(q)
    text = format_seconds(value)
    return f"{text} (of {m.inner_loops}-call means)" if text and m.inner_loops > 1 else text


def mlperf_table(ms: list[Measurement]) -> pd.DataFrame:
    """Model x runtime x precision x batch: scenario, queries, p50/p90/p99 latency,
    samples/s, accuracy, its target and PASS/FAIL."""
    rows = []
    for m in sorted(ms, key=lambda m: (str(m.params["model"]), runtime(m),
                                       str(m.params["precision"]), int(m.params["batch"]),
                                       m.suite)):
        accuracy, target, result = judge(m, ms)
        ok = m.status == "ok"
        rows.append({
            "model": m.params["model"], "runtime": runtime(m),
            "precision": str(m.params["precision"]).upper(), "scenario": scenario(m),
            "batch": int(m.params["batch"]),
            "queries": len(m.samples) * m.inner_loops if ok else "",
            "p50": _latency(m, "p50"), "p90": _latency(m, "p90"), "p99": _latency(m, "p99"),
            "samples/s": number(m.metrics.get("items_per_s") if ok else None, ".1f"),
            "accuracy": accuracy, "target": target, "result": result,
            "suite": f"{m.suite}/{case_and_label(m)[0]}"})
    return pd.DataFrame(rows)
