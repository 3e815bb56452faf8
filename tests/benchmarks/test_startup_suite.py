"""The startup suite: fresh processes of hal and numpy, checked, with their facts."""

from __future__ import annotations

import hal
from benchmarks.suites import startup
from benchmarks.timing import TimingOptions, measure

ONCE = TimingOptions(warmup=0, min_samples=1, max_samples=1, sample_time=0.0, budget=0.0)


def test_hal_starts_on_cpu_alone_and_numpy_beside_it():
    hal_child, numpy_child = startup.start("hal"), startup.start("numpy")
    assert hal_child["values"] == numpy_child["values"] == [2.0, 3.0]
    assert hal_child["backends_loaded"] == ["cpu"]
    assert hal_child["libraries_imported"] == []
    assert hal_child["peak_kib"] > numpy_child["peak_kib"] > 0


def test_startup_is_measured_under_cpu_with_its_facts():
    m = measure(startup.startup("hal"), "startup", "float64", hal.device("cpu"), ONCE)
    assert m.status == "ok", m.error
    assert m.facts["backends_loaded"] == "cpu" and m.facts["peak_rss_mib"] > 0
    skipped = measure(startup.startup("numpy"), "startup", "float64", hal.device("null"), ONCE)
    assert skipped.status != "ok" and "cpu only" in skipped.error
