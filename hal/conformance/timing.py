"""The timing layer: the device's events bracket work and agree with the host clock."""

from __future__ import annotations

import time

import numpy as np

from .. import ops
from ..dispatch import call, fallback_policy
from ..runtime.device import Device
from ..tensor import Tensor


def check_timing(device: Device) -> tuple[bool, str]:
    """(ok, detail): three matmuls timed by the device's events take no longer than by the
    host's clock."""
    n = 64  # small: simulators (Oclgrind) run it too
    a = Tensor.from_host(np.ones((n, n), np.float32), device)
    wall = time.perf_counter()
    start = device.record_event()
    with fallback_policy("allow"):
        for _ in range(3):
            call(ops.spec("matmul"), a, a)
    end = device.record_event()
    seconds = device.elapsed(start, end)
    wall = time.perf_counter() - wall
    ok = 0 <= seconds <= wall * 1.05 + 1e-4
    return ok, f"{seconds * 1e3:.3f} ms by {device.timer}; host {wall * 1e3:.3f} ms"
