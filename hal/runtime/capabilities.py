"""Capabilities: what a device is and can do, built when it opens, peaks filled in later."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Capabilities:
    """What a device is and can do; built when the device opens, peaks filled in by the harness."""

    backend: str
    device: str
    name: str
    vendor: str = "unknown"
    driver_version: str | None = None
    runtime_version: str | None = None
    memory_bytes: int | None = None
    # "host" where the tensors live in host memory (devices on it share one bandwidth
    # peak); None for memory of the device's own
    memory: str | None = None
    compute_units: int | None = None
    dtypes: tuple[str, ...] = ()
    ops: tuple[str, ...] = ()  # ops with a kernel of this backend
    unsupported: Mapping[str, str] = field(default_factory=dict)  # op or dtype -> why
    timer: str = "host perf_counter after synchronize()"
    peaks: Mapping[str, Any] = field(default_factory=dict)  # measured: gflops per dtype, gbps
    extra: Mapping[str, Any] = field(default_factory=dict)  # backend-specific facts

    def to_dict(self) -> dict:
        """A JSON-ready dict of every field."""
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}

    def with_peaks(self, peaks: Mapping[str, Any]) -> Capabilities:
        """A copy with measured peaks merged in."""
        return dataclasses.replace(self, peaks={**self.peaks, **peaks})


def _plain(value):
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value

