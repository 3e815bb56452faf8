"""What the harness adds beside a workload's samples: its facts and its first call in fresh
processes, recorded and read back."""

from __future__ import annotations

import dataclasses

import pytest

import hal
from benchmarks.first_call import measure_first_call
from benchmarks.schema.files import ResultWriter, read_results
from benchmarks.schema.records import RunRecord
from benchmarks.suites import smoke
from benchmarks.timing import TimingOptions, measure

TINY = TimingOptions(warmup=0, min_samples=2, max_samples=2, sample_time=0.0, budget=0.0)


def _add():
    (w,) = [w for w in smoke.workloads() if w.name == "add"]
    return w


def test_facts_are_gathered_once_with_the_inputs_and_read_back(tmp_path):
    seen = []

    def facts(x, y):
        seen.append(x.shape)
        return {"elements": x.shape[0], "how": "one add"}

    record = measure(dataclasses.replace(_add(), facts=facts), "smoke", "float32",
                     hal.device("cpu"), TINY)
    assert record.status == "ok" and record.error is None
    assert record.facts == {"elements": 4096, "how": "one add"} and seen == [(4096,)]
    path = tmp_path / "r.jsonl"
    with ResultWriter(path) as writer:
        writer.write_run(RunRecord(id="r"))
        writer.write(record)
    (back,) = read_results(path).measurements
    assert back.facts == {"elements": 4096, "how": "one add"}


def test_failing_facts_leave_the_timing_and_say_why():
    def facts(x, y):
        raise hal.HalError("no counter here")

    record = measure(dataclasses.replace(_add(), facts=facts), "smoke", "float32",
                     hal.device("cpu"), TINY)
    assert record.status == "ok" and record.stats["median"] > 0 and record.facts == {}
    assert record.error == "facts not gathered: HalError: no counter here"


def test_facts_of_the_wrong_json_type_make_the_record_unreadable(tmp_path):
    path = tmp_path / "r.jsonl"
    record = measure(_add(), "smoke", "float32", hal.device("cpu"), TINY)
    with ResultWriter(path) as writer:
        writer.write_run(RunRecord(id="r"))
        writer.write(dataclasses.replace(record, facts={"nested": [1, 2]}))
    with pytest.warns(UserWarning, match="facts.nested is a list"):
        assert read_results(path).measurements == []


def test_the_first_call_is_timed_in_fresh_processes():
    figures = measure_first_call("smoke", _add(), "float32", "cpu:0")
    assert set(figures) == {"first_call_empty_cache_s", "first_call_disk_cache_s"}
    assert all(0 < s < 5 for s in figures.values())


def test_a_workload_asking_for_its_first_call_gets_it_in_its_metrics(null):
    record = measure(dataclasses.replace(_add(), first_call=True), "smoke", "float32",
                     hal.device("cpu"), TINY)
    assert record.metrics["first_call_empty_cache_s"] > 0
    assert record.metrics["first_call_disk_cache_s"] > 0 and record.error is None
    with pytest.raises(hal.HalError, match=r"(?s)first call of smoke/add on null:0 .*Refused"):
        measure_first_call("smoke", _add(), "float32", "null:0")
