"""What a bench run measures: its configuration, the devices, and the task list.

Unknown suites, backends and dtypes are refused here with the valid names listed.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import hal
from benchmarks.schema.records import MeasurementKey, measurement_key
from benchmarks.timing import TimingOptions
from benchmarks.workload import Workload, suite_names, suite_workloads
from hal.runtime.settings import FALLBACK_POLICIES

DEFAULT_SUITES = ("peak", "quick")


class BenchError(hal.HalError, ValueError):
    """A bench request that cannot run (unknown suite, backend or dtype; bad resume)."""


@dataclass(frozen=True)
class Task:
    """One measurement to take: a suite's workload (by index) on a device for a dtype."""

    suite: str
    index: int
    workload: Workload
    dtype: str
    backend: str
    device: str

    @property
    def key(self) -> MeasurementKey:
        """The key its measurement record will have."""
        return measurement_key(
            self.suite,
            self.workload.name,
            self.workload.params,
            self.backend,
            self.device,
            self.dtype,
        )


@dataclass
class Config:
    """What a run measures; stored in the run record so a resume follows the same plan.

    `fallback` is the CPU-fallback policy of every measurement: `error` skips a workload
    that needs the fallback; `warn` and `allow` measure it and count the fallback calls.
    """

    suites: list[str] = field(default_factory=lambda: list(DEFAULT_SUITES))
    backends: list[str] = field(default_factory=list)
    dtypes: list[str] = field(default_factory=list)
    quick: bool = False
    timeout: float = 300.0
    rounds: int = 1
    fallback: str = "error"

    def timing(self) -> TimingOptions:
        """Timing options of one round of this run (with its CPU-fallback policy)."""
        options = TimingOptions.quick() if self.quick else TimingOptions()
        return replace(options, fallback=self.fallback).per_round(self.rounds)


def resolve_devices(backends: list[str]) -> list[str]:
    """Device names for the requested backends (`name` or `name:index`).

    With none requested: device 0 of every available backend that has kernels. Raises
    BenchError listing the valid names for an unknown or unavailable backend.
    """
    if not backends:
        return [
            f"{n}:0"
            for n in hal.available_backends()
            if hal.backend(n).kernels and hal.backend(n).kernels.ops()
        ]
    devices = []
    for spec in backends:
        name, _, index = spec.partition(":")
        if name not in hal.backends():
            raise BenchError(f"unknown backend {name!r}; registered: {', '.join(hal.backends())}")
        backend = hal.backend(name)
        if not backend.is_available():
            raise BenchError(
                f"backend {name!r} is unavailable: {backend.why_unavailable()}; "
                f"available: {', '.join(hal.available_backends())}"
            )
        if index and not (index.isdigit() and int(index) < backend.device_count()):
            raise BenchError(
                f"device {spec!r} does not exist; devices: {', '.join(backend.devices())}"
            )
        devices.append(f"{name}:{index or 0}")
    return devices


def plan(config: Config, devices: list[str]) -> list[Task]:
    """Tasks for every suite x workload x dtype x device; BenchError for unknown names."""
    if config.rounds < 1 or config.timeout <= 0:
        raise BenchError(
            f"rounds must be at least 1 and the timeout positive "
            f"(got rounds={config.rounds}, timeout={config.timeout:g})"
        )
    if config.fallback not in FALLBACK_POLICIES:
        raise BenchError(
            f"fallback policy {config.fallback!r} is not one of {', '.join(FALLBACK_POLICIES)}"
        )
    unknown = [s for s in config.suites if s not in suite_names()]
    if unknown:
        raise BenchError(f"unknown suite {', '.join(unknown)}; suites: {', '.join(suite_names())}")
    loaded = {s: suite_workloads(s) for s in config.suites}
    offered = sorted({d for ws in loaded.values() for w in ws for d in w.dtypes})
    bad = [d for d in config.dtypes if d not in offered]
    if bad:
        raise BenchError(
            f"unknown dtype {', '.join(bad)} for suites {', '.join(config.suites)}; "
            f"dtypes: {', '.join(offered)}"
        )
    return [
        Task(suite, i, w, dtype, device.partition(":")[0], device)
        for device in devices
        for suite, ws in loaded.items()
        for i, w in enumerate(ws)
        for dtype in w.dtypes
        if not config.dtypes or dtype in config.dtypes
    ]
