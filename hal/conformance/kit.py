"""The conformance kit: layered checks of a backend, then every op x dtype against the reference.

Layers: discover (the plugin loads, says whether it is available), open (a device and
its capabilities), then the checks of `DEVICE_LAYERS` on that device: memory (host round
trip of every dtype, allocator accounting) and timing (events bracket work and agree with
the host clock). Then the op cells (`cells.py`): a few large inputs and hypothesis-drawn
ones of each op x dtype on the device vs the numpy reference, each ending as pass, fail
(with a repro snippet), fallback or unsupported.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from .. import ops
from ..runtime import dtypes as dt
from ..runtime.device import Device
from . import memory, timing
from .cells import check_cell
from .discovery import open_device
from .records import Layer, Report

# The layers that check an opened device, in the order they run after discover and open:
# name -> check(device) -> (ok, detail). A new layer is a module with its check and a line here.
DEVICE_LAYERS: dict[str, Callable[[Device], tuple[bool, str]]] = {
    "memory": memory.check_memory,
    "timing": timing.check_timing,
}


def run(backend: str, *, ops_: list[str] | None = None, dtypes: list[str] | None = None,
        examples: int = 20, index: int = 0, progress=None) -> Report:
    """Certify one backend: the runtime layers, then each op x dtype against the reference."""
    start = time.perf_counter()
    report = Report(backend)
    device = _runtime_layers(report, backend, index)
    if device is not None:
        selected = [ops.spec(n) for n in ops_] if ops_ else ops.specs()
        wanted = {dt.dtype(d) for d in dtypes} if dtypes else None
        todo = [(s, d) for s in selected for d in s.dtypes if wanted is None or d in wanted]
        for i, (s, d) in enumerate(todo):
            if progress:
                progress(i, len(todo), f"{s.name} {d.name}")
            report.cells.append(check_cell(device, s, d, examples))
    report.seconds = time.perf_counter() - start
    return report


def _runtime_layers(report: Report, name: str, index: int) -> Device | None:
    """Run the runtime layers into the report; the opened device, or None when none opened."""
    found, device = open_device(name, index)
    report.layers += found
    if device is None:
        return None
    report.device = device.name
    for layer, check in DEVICE_LAYERS.items():
        try:
            ok, detail = check(device)
        except Exception as e:  # a broken layer is a finding, not a crash of the kit
            ok, detail = False, f"{type(e).__name__}: {e}"
        report.layers.append(Layer(layer, ok, detail))
    return device
