"""Energy per measurement: RAPL under a fake powercap tree (wraparound included), NVML
through a fake nvidia-ml-py, the figures a measurement carries, and why none where none."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from benchmarks import energy
from benchmarks.timing import TimingOptions, measure, merge_rounds
from benchmarks.workload import Case, Workload
from frontends.science import peers

TINY = TimingOptions(warmup=1, min_samples=3, max_samples=3, sample_time=0.0, budget=0.0)


def _domain(root, index: int, uj: int, top: int, name: str = "package-0"):
    d = root / f"intel-rapl:{index}"
    d.mkdir(parents=True, exist_ok=True)
    (d / "energy_uj").write_text(f"{uj}\n")
    (d / "max_energy_range_uj").write_text(f"{top}\n")
    (d / "name").write_text(f"{name}\n")
    return d


def test_rapl_sums_the_packages_and_undoes_the_wraparound(tmp_path):
    a = _domain(tmp_path, 0, 999_000, 1_000_000)
    b = _domain(tmp_path, 1, 10, 1_000_000, "package-1")
    _domain(tmp_path / "intel-rapl:0", 0, 5, 1_000_000, "core")  # a subdomain: not counted
    (tmp_path / "intel-rapl:0:0").mkdir()  # a subdomain's link at the top: not a package
    counter = energy.rapl(tmp_path)
    assert counter.name == "RAPL powercap (intel-rapl:0:package-0, intel-rapl:1:package-1)"
    (a / "energy_uj").write_text("500\n")  # wrapped: 1000 uJ to the top, then 500
    (b / "energy_uj").write_text("2010\n")
    assert counter.joules() == pytest.approx((1_000 + 500 + 2_000) / 1e6)
    (a / "energy_uj").write_text("1500\n")
    assert counter.joules() == pytest.approx((1_000 + 1_500 + 2_000) / 1e6)


def test_rapl_says_why_it_cannot_be_read(tmp_path, monkeypatch):
    assert energy.rapl(tmp_path / "absent").why.endswith("is absent (no powercap driver, "
                                                         "or a container without it)")
    assert "no RAPL package domain" in energy.rapl(tmp_path).why
    _domain(tmp_path, 0, 1, 10)

    def denied(self, *args, **kwargs):
        if self.name == "energy_uj":
            raise PermissionError(13, "Permission denied")
        return original(self, *args, **kwargs)

    original = type(tmp_path).read_text
    monkeypatch.setattr(type(tmp_path), "read_text", denied)
    assert "readable by root only" in energy.rapl(tmp_path).why


def _fake_pynvml(mj: list[int]) -> types.ModuleType:
    nvml = types.ModuleType("pynvml")

    class NVMLError(Exception):
        pass

    nvml.NVMLError = NVMLError
    nvml.nvmlInit = lambda: None
    nvml.nvmlDeviceGetHandleByIndex = lambda i: ("gpu", i) if i == 0 else (
        _ for _ in ()).throw(NVMLError("Invalid Argument"))
    nvml.nvmlDeviceGetName = lambda handle: b"NVIDIA H200"
    nvml.nvmlDeviceGetTotalEnergyConsumption = lambda handle: mj.pop(0)
    return nvml


def test_nvml_reads_the_gpus_total_energy_in_millijoules(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", _fake_pynvml([1_000, 1_000, 3_500]))
    counter = energy.nvml(0)
    assert counter.name == "NVML total energy, GPU 0 (NVIDIA H200)"
    assert counter.joules() == 1.0 and counter.joules() == 3.5
    assert "NVML cannot read GPU 1's energy: Invalid Argument" in energy.nvml(1).why
    monkeypatch.setitem(sys.modules, "pynvml", None)
    assert energy.nvml(0).why == "nvidia-ml-py is not installed (pip install nvidia-ml-py)"


def test_the_counter_follows_the_kind_of_device(cpu, tmp_path, monkeypatch):
    _domain(tmp_path, 0, 1, 10)
    assert isinstance(energy.counter_for(cpu, tmp_path), energy.RaplCounter)
    monkeypatch.setitem(sys.modules, "pynvml", _fake_pynvml([0]))
    monkeypatch.setattr(peers, "device_kinds", lambda device: ("cuda",))
    assert isinstance(energy.counter_for(cpu, tmp_path), energy.NvmlCounter)
    monkeypatch.setattr(peers, "device_kinds", lambda device: ("opencl",))
    assert energy.counter_for(cpu, tmp_path).why == "no energy counter is known for opencl " \
                                                    "devices"


class StepCounter:
    """A fake counter that advances 6 J between reads."""

    name = "fake 6 J a read"

    def __init__(self):
        self.reads = 0

    def joules(self) -> float:
        self.reads += 1
        return 6.0 * self.reads


def _add_workload() -> Workload:
    return Workload("add", {"n": 1000}, ("float64",),
                    lambda dtype: Case([np.ones(1000, dtype)] * 2, flops=1000, items=1000),
                    lambda a, b: a + b, lambda a, b: a + b)


def test_a_measurement_carries_joules_per_call_watts_and_work_per_joule(cpu, monkeypatch):
    monkeypatch.setattr(energy, "counter_for", lambda device: StepCounter())
    record = measure(_add_workload(), "t", "float64", cpu, TINY)
    e, m = record.energy, record.metrics
    calls = len(record.samples) * record.inner_loops
    assert e["available"] and e["counter"] == "fake 6 J a read" and e["calls"] == calls
    assert e["joules"] == 6.0 and e["joules_per_call"] == 6.0 / calls
    assert e["watts"] == 6.0 / e["seconds"] and e["seconds"] > 0
    assert m["joules_per_call"] == 6.0 / calls and m["watts"] == e["watts"]
    assert m["items_per_joule"] == pytest.approx(1000 / (6.0 / calls))
    assert m["gflops_per_joule"] == pytest.approx(1000 / (6.0 / calls) / 1e9)
    pooled = merge_rounds(record, record, {})
    assert pooled.energy["joules"] == 12.0 and pooled.energy["calls"] == 2 * calls
    assert pooled.metrics["joules_per_call"] == pytest.approx(6.0 / calls)


def test_without_a_counter_the_record_says_why(cpu, monkeypatch):
    monkeypatch.setattr(energy, "counter_for",
                        lambda device: energy.Unavailable("no counter in this test"))
    record = measure(_add_workload(), "t", "float64", cpu, TINY)
    assert record.energy == {"available": False,
                             "why": "not available here: no counter in this test"}
    assert "joules_per_call" not in record.metrics and "items_per_s" in record.metrics


def test_a_counter_that_does_not_advance_is_no_figure():
    class Still:
        name = "still"

        def joules(self) -> float:
            return 1.0

    meter = energy.EnergyMeter(Still())
    out = meter.stop(meter.start(), 10)
    assert not out["available"] and "did not advance" in out["why"]



def test_a_backends_own_counter_comes_first(null, tmp_path, monkeypatch):
    assert null.energy_joules() is None  # the template reads none: the host's RAPL then
    _domain(tmp_path, 0, 1, 10)
    assert isinstance(energy.counter_for(null, tmp_path), energy.RaplCounter)
    readings = iter([2.0, 2.5])
    monkeypatch.setattr(type(null), "energy_joules", lambda self: next(readings, 7.0))
    counter = energy.counter_for(null, tmp_path)
    assert counter.name == "null:0.energy_joules() (null backend)"
    assert counter.joules() == 2.5 and counter.joules() == 7.0
