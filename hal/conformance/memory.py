"""The memory layer: every dtype the device holds makes an exact host round trip at every
kind of shape, strided views download as they are, and the allocator counts what a tensor
takes and gives back."""

from __future__ import annotations

import numpy as np

from ..dispatch import fallback_policy
from ..runtime import dtypes as dt
from ..runtime.device import Device
from ..tensor import Tensor
from .compare import element_bytes

LARGE = 1 << 18  # elements of the large round trip: 1 to 4 MiB, past a staging buffer's size


def host_arrays(d: np.dtype) -> dict[str, np.ndarray]:
    """Host arrays of dtype d by what they test: 0-d, empty, 1-d, 3-d, strided views of a
    larger array (every other element, reversed, transposed) and a large one."""
    rng = np.random.default_rng(0)

    def values(*shape: int) -> np.ndarray:
        if dt.is_bool(d):
            return rng.random(shape) < 0.5
        x = rng.uniform(-20, 20, shape)
        if dt.is_complex(d):
            x = x + 1j * rng.uniform(-20, 20, shape)
        return x.astype(d)

    grid = values(6, 8)
    return {"0-d": values(), "empty": values(0), "empty 3-d": values(2, 0, 3),
            "1-d": values(7), "3-d": values(2, 3, 4), "every other": grid[:, ::2],
            "reversed": grid[::-1, ::-3], "transposed": grid.T, "large": values(LARGE)}


def round_trip_problem(device: Device, d: np.dtype) -> str:
    """'' when every array of `host_arrays(d)` comes back from the device with its shape,
    dtype and bytes, and slicing the device copy downloads the same view; else what differs."""
    arrays = host_arrays(d)
    for kind, host in arrays.items():
        problem = _differs(Tensor.from_host(host, device).numpy(), host)
        if problem:
            return f"{d.name} {kind} {host.shape} round trip: {problem}"
    host = arrays["3-d"]
    tensor = Tensor.from_host(host, device)
    with fallback_policy("allow"):  # the view is the slice op's; a device without it falls back
        views = {"[:, ::2]": (tensor[:, ::2], host[:, ::2]),
                 "[::-1, 1:, ::-2]": (tensor[::-1, 1:, ::-2], host[::-1, 1:, ::-2])}
        for key, (view, expected) in views.items():
            problem = _differs(view.numpy(), expected)
            if problem:
                return f"{d.name} tensor{key} of {host.shape} downloaded: {problem}"
    return ""


def _differs(back: np.ndarray, host: np.ndarray) -> str:
    """What differs between a downloaded array and the host one: shape, dtype or bytes."""
    if not isinstance(back, np.ndarray):
        return f"download gave a {type(back).__name__}, not a numpy array"
    if back.shape != host.shape or back.dtype != host.dtype:
        return f"came back {back.dtype.name}{back.shape}, sent {host.dtype.name}{host.shape}"
    if np.ascontiguousarray(host).tobytes() != np.ascontiguousarray(back).tobytes():
        differs = (element_bytes(host) != element_bytes(back)).any(axis=1)
        at = tuple(int(k) for k in np.unravel_index(int(np.argmax(differs)), host.shape))
        return f"changed the bytes (at {at}: sent {host[at]!r}, got {back[at]!r})"
    return ""


def check_memory(device: Device) -> tuple[bool, str]:
    """(ok, detail) of the round trips of every supported dtype and the allocator's accounting."""
    held = [d for d in dt.ALL if device.supports_dtype(d)]
    for d in held:
        problem = round_trip_problem(device, d)
        if problem:
            return False, problem
    detail = (f"round trips of {len(held)} dtypes exact (0-d, empty, 1-d, 3-d, strided, "
              f"{LARGE:,} elements)")
    stats = device.memory_stats()
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
