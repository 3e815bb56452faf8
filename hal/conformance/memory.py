"""The memory layer: every dtype the device holds makes an exact host round trip, and the
allocator counts what a tensor takes and gives back."""

from __future__ import annotations

import numpy as np

from ..runtime import dtypes as dt
from ..runtime.device import Device
from ..tensor import Tensor


def check_memory(device: Device) -> tuple[bool, str]:
    """(ok, detail) of the round trip of every supported dtype and the allocator's accounting."""
    rng = np.random.default_rng(0)
    for d in dt.ALL:
        if not device.supports_dtype(d):
            continue
        host = (rng.standard_normal((3, 5)) * 10).astype(d)
        back = Tensor.from_host(host, device).numpy()
        if back.dtype != d or not np.array_equal(back.view(np.uint8), host.view(np.uint8)):
            return False, f"{d.name} round trip changed the bytes"
    stats = device.memory_stats()
    detail = f"round trip of {len(device.capabilities.dtypes)} dtypes exact"
    if stats.allocated is not None:
        before = stats.allocated
        t = Tensor.from_host(np.zeros(1 << 16, np.uint8), device)
        during = device.memory_stats().allocated
        del t
        after = device.memory_stats().allocated
        if not (during >= before + (1 << 16) and after <= during):
            return False, f"allocated {before} -> {during} -> {after} bytes"
        detail += f"; accounting {before} -> {during} -> {after} bytes"
    return True, detail
