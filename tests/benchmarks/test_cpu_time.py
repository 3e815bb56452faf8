"""CPU time beside wall time: recorded where the device computes on the host, pooled over
rounds, kept through the results schema."""

import dataclasses
import math
import time

import numpy as np
import pytest

import hal
from benchmarks import timing
from benchmarks.schema.records import Measurement
from benchmarks.suites import peak
from benchmarks.timing import TimingOptions, measure, merge_rounds
from benchmarks.workload import Case, Workload

FEW = TimingOptions(warmup=1, min_samples=5, max_samples=5, sample_time=0.001, budget=0.05)


def _sleeping(seconds: float) -> Workload:
    """A workload whose call waits `seconds` without computing, then copies its input."""
    def run(x):
        time.sleep(seconds)
        return x + 0

    return Workload("sleep", {"s": seconds}, ("float64",),
                    lambda dtype: Case([np.ones(8, dtype)]), run, lambda x: x)


def test_cpu_seconds_leave_out_the_time_a_call_waits():
    m = measure(_sleeping(0.01), "t", "float64", hal.device("cpu"), FEW)
    assert m.status == "ok", m.error
    assert len(m.cpu_samples) == len(m.samples) == 5
    assert min(m.samples) >= 0.01
    assert np.median(m.cpu_samples) < 0.5 * np.median(m.samples)


def test_a_computing_call_counts_its_cpu_seconds():
    m = measure(peak.stream("triad", 1 << 18), "t", "float64", hal.device("cpu"), FEW)
    assert m.status == "ok" and all(c > 0 for c in m.cpu_samples)


def test_devices_off_the_host_record_no_cpu_seconds(monkeypatch):
    monkeypatch.setattr(timing, "computes_on_host", lambda device: False)
    m = measure(peak.stream("triad", 1 << 10), "t", "float64", hal.device("cpu"), FEW)
    assert m.status == "ok" and m.samples and m.cpu_samples == []


def test_rounds_pool_cpu_seconds_and_records_keep_them():
    m = measure(peak.stream("scale", 1 << 10), "t", "float64", hal.device("cpu"), FEW)
    later = dataclasses.replace(m, samples=[1.0], cpu_samples=[0.5])
    merged = merge_rounds(m, later, {})
    assert merged.cpu_samples == [*m.cpu_samples, 0.5] and merged.rounds == 2
    again = Measurement.from_dict(merged.to_dict())
    assert again.cpu_samples == merged.cpu_samples
    with pytest.raises(ValueError, match="NaN or infinity"):
        Measurement.from_dict({**merged.to_dict(), "cpu_samples": [math.nan]})
