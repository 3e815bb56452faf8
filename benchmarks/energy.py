"""The energy of a measurement: the device's energy counter read around its samples.

Where the platform exposes one, the counter is read before and after the timed samples,
and the record carries joules per call, mean watts and work per joule
(`benchmarks.timing`); elsewhere it says "not available here: <why>".

- A backend's own counter, where its device defines `energy_joules()` (backends/null.py).
- NVIDIA GPUs: NVML's total-energy counter (millijoules since the driver loaded; Volta
  and later) through nvidia-ml-py (`pynvml`), by the device's CUDA index (NVML counts
  every GPU, CUDA_VISIBLE_DEVICES may renumber them: the record names the GPU read).
- The host CPU (the cpu backend and devices on host memory, such as PoCL): RAPL through
  powercap, the sum of the package domains' `energy_uj` (each package: its cores, caches
  and uncore, with whatever else runs on it), a counter that wraps at
  `max_energy_range_uj`. Linux makes `energy_uj` readable by root only (since 5.10).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import hal
from frontends.science import peers

POWERCAP = Path("/sys/class/powercap")


class EnergyCounter(Protocol):
    """A monotonic energy counter of a device."""

    name: str

    def joules(self) -> float:
        """The energy counted so far, in joules (wraparound undone)."""


@dataclass
class Unavailable:
    """Why a device's energy cannot be read here."""

    why: str


class RaplCounter:
    """The host's RAPL package energy (`intel-rapl:N` domains under powercap), in joules;
    each domain's wraparound at its max_energy_range_uj is undone between reads (reads
    must come more often than a wrap: minutes at a package's power)."""

    def __init__(self, domains: list[Path]):
        self.domains = domains
        self.ranges = [int((d / "max_energy_range_uj").read_text()) for d in domains]
        self.last = [self._read(d) for d in domains]
        self.total_uj = 0
        names = ", ".join(_domain_name(d) for d in domains)
        self.name = f"RAPL powercap ({names})"

    @staticmethod
    def _read(domain: Path) -> int:
        return int((domain / "energy_uj").read_text())

    def joules(self) -> float:
        """Package energy since this counter was made."""
        for i, domain in enumerate(self.domains):
            now = self._read(domain)
            step = now - self.last[i]
            self.total_uj += step if step >= 0 else step + self.ranges[i]
            self.last[i] = now
        return self.total_uj / 1e6


class NvmlCounter:
    """NVML's total-energy counter of one GPU (millijoules since the driver loaded)."""

    def __init__(self, pynvml: Any, index: int):
        self.pynvml = pynvml
        self.handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        name = pynvml.nvmlDeviceGetName(self.handle)
        name = name.decode() if isinstance(name, bytes) else name
        self.name = f"NVML total energy, GPU {index} ({name})"
        self.joules()  # an unsupported GPU raises here, not mid-measurement

    def joules(self) -> float:
        """The GPU's energy since the driver loaded."""
        return self.pynvml.nvmlDeviceGetTotalEnergyConsumption(self.handle) / 1e3


class DeviceCounter:
    """A backend's own energy counter: its device's optional `energy_joules()` (a vendor's
    driver; see backends/null.py)."""

    def __init__(self, device: hal.Device):
        self.device = device
        self.name = f"{device.name}.energy_joules() ({device.backend.name} backend)"

    def joules(self) -> float:
        """The device's energy counter."""
        return float(self.device.energy_joules())


def _domain_name(domain: Path) -> str:
    try:
        return domain.name + ":" + (domain / "name").read_text().strip()
    except OSError:
        return domain.name


def rapl(root: Path = POWERCAP) -> RaplCounter | Unavailable:
    """The host's RAPL package counter under `root`, or why it cannot be read."""
    if not root.is_dir():
        return Unavailable(f"{root} is absent (no powercap driver, or a container without "
                           "it)")
    domains = sorted(d for d in root.glob("intel-rapl:*") if d.name.count(":") == 1)
    if not domains:
        return Unavailable(f"{root} has no RAPL package domain (intel-rapl:N)")
    try:
        return RaplCounter(domains)
    except PermissionError:
        return Unavailable(f"{domains[0] / 'energy_uj'} is readable by root only (Linux "
                           "5.10 and later); run as root or `chmod o+r` it")
    except (OSError, ValueError) as exc:
        return Unavailable(f"RAPL under {root} cannot be read: {exc}")


def nvml(index: int) -> NvmlCounter | Unavailable:
    """NVML's energy counter of GPU `index`, or why it cannot be read."""
    try:
        import pynvml
    except ImportError:
        return Unavailable("nvidia-ml-py is not installed (pip install nvidia-ml-py)")
    try:
        pynvml.nvmlInit()
        return NvmlCounter(pynvml, index)
    except pynvml.NVMLError as exc:  # no driver, no such GPU, a GPU without the counter
        return Unavailable(f"NVML cannot read GPU {index}'s energy: {exc}")


def counter_for(device: hal.Device, root: Path = POWERCAP) -> EnergyCounter | Unavailable:
    """The energy counter of the hardware `device` computes on, or why there is none: the
    backend's own (`energy_joules()`) where it reads one, else NVML on a CUDA GPU, RAPL on
    the host CPU."""
    own = getattr(device, "energy_joules", None)
    if callable(own) and own() is not None:
        return DeviceCounter(device)
    kinds = peers.device_kinds(device)
    if "cuda" in kinds:
        return nvml(device.index)
    if "cpu" in kinds:
        return rapl(root)
    return Unavailable(f"no energy counter is known for {' and '.join(kinds)} devices")


class EnergyMeter:
    """Reads a counter around a stretch of calls: joules, seconds and the counter's name."""

    def __init__(self, counter: EnergyCounter | Unavailable):
        self.counter = counter

    def start(self) -> tuple[float, float] | None:
        """The counter and the clock now (None without a counter)."""
        if isinstance(self.counter, Unavailable):
            return None
        return self.counter.joules(), time.perf_counter()

    def stop(self, started: tuple[float, float] | None, calls: int) -> dict[str, Any]:
        """The record's energy since `started` over `calls` calls: the counter, joules,
        seconds, joules per call and mean watts; or why there is none."""
        if started is None:
            return {"available": False, "why": f"not available here: {self.counter.why}"}
        joules, seconds = self.counter.joules() - started[0], time.perf_counter() - started[1]
        if joules <= 0 or seconds <= 0:
            return {"available": False, "counter": self.counter.name,
                    "why": f"not available here: the counter did not advance in "
                           f"{seconds:.3g} s (coarser than the samples)"}
        return {"available": True, "counter": self.counter.name, "joules": joules,
                "seconds": seconds, "calls": calls, "joules_per_call": joules / calls,
                "watts": joules / seconds}
