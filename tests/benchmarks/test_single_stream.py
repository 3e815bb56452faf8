"""Single-stream workloads: one call per sample, many queries, latency percentiles."""

import dataclasses

import numpy as np

import hal
from benchmarks.suites import int8, peak
from benchmarks.timing import TimingOptions, measure

QUERIES = TimingOptions(warmup=1, min_samples=5, max_samples=8, sample_time=0.01, budget=0.1,
                        queries=60, query_budget=30.0)


def test_a_single_stream_workload_times_each_query_alone():
    w = dataclasses.replace(peak.stream("scale", 256), single_stream=True)
    m = measure(w, "peak", "float64", hal.device("cpu"), QUERIES)
    assert m.status == "ok", m.error
    assert m.inner_loops == 1 and len(m.samples) == m.stats["n"] == 60
    latencies = np.sort(m.samples)
    assert m.stats["p90"] == latencies[53] and m.stats["p99"] == latencies[59]  # 54/60, 60/60


def test_other_workloads_keep_the_calibrated_inner_loop():
    m = measure(peak.stream("scale", 256), "peak", "float64", hal.device("cpu"), QUERIES)
    assert m.status == "ok" and m.inner_loops > 1 and len(m.samples) <= 8


def test_minilm_batch_1_is_single_stream_and_larger_batches_are_not():
    minilm = [w for w in int8.workloads() if w.name.startswith("minilm")]
    assert {w.params["batch"] for w in minilm if w.single_stream} == {1}
    assert {w.params["batch"] for w in minilm if not w.single_stream} == {8, 32}


def test_rounds_share_the_queries():
    assert QUERIES.per_round(3).queries == 20 and QUERIES.per_round(3).query_budget == 10.0
