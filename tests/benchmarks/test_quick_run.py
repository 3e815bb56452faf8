"""--quick runs leave out the workloads marked full_only, recording why."""

import dataclasses

import hal
from benchmarks.suites import cnn, peak
from benchmarks.timing import TimingOptions, measure


def test_a_full_only_workload_is_skipped_in_a_quick_run_and_measured_otherwise():
    w = dataclasses.replace(peak.stream("scale", 256), full_only="it takes an hour")
    quick = measure(w, "peak", "float64", hal.device("cpu"), TimingOptions.quick())
    assert quick.status == "skipped" and "it takes an hour" in quick.error
    assert "without --quick" in quick.error and quick.samples == []
    few = TimingOptions(warmup=0, min_samples=2, max_samples=2, budget=0.01)
    assert measure(w, "peak", "float64", hal.device("cpu"), few).status == "ok"


def test_the_cnn_suite_leaves_only_its_offline_batch_out_of_quick_runs():
    left_out = {w.params["batch"] for w in cnn.workloads() if w.full_only}
    assert left_out == {32}
