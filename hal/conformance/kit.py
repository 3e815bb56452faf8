"""The conformance kit: layered checks of a backend, every op x dtype against the reference,
then its graph hooks through `hal.jit`.

Layers: discover (the plugin loads, says whether it is available), open (a device and
its capabilities), then the checks of `DEVICE_LAYERS` on that device: memory (host round
trips of every dtype at every kind of shape, strided views downloaded, allocator
accounting) and timing (events bracket work and agree with the host clock). Then the op
cells (`cells.py`): a few large inputs, edge values and hypothesis-drawn ones of each op x
dtype on the device vs the numpy reference, each ending as pass, fail (with a repro
snippet), fallback or unsupported. Then the jit cells (`graphs.py`): the graph workloads
jitted on the device against eager and the reference, each saying which path the graph
took.
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
from .graph_workloads import WORKLOADS, workload
from .graphs import check_graph
from .records import Layer, Report

# The layers that check an opened device, in the order they run after discover and open:
# name -> check(device) -> (ok, detail). A new layer is a module with its check and a line here.
DEVICE_LAYERS: dict[str, Callable[[Device], tuple[bool, str]]] = {
    "memory": memory.check_memory,
    "timing": timing.check_timing,
}


def run(backend: str, *, ops_: list[str] | None = None, dtypes: list[str] | None = None,
        graphs: list[str] | None = None, examples: int = 20, index: int = 0,
        progress=None) -> Report:
    """Certify device `index` of one backend: the runtime layers, each op x dtype against the
    reference, the jit cells (see `check`)."""
    start = time.perf_counter()
    report = Report(backend)
    found, device = open_device(backend, index)
    report.layers += found
    if device is not None:
        report = check(device, ops_=ops_, dtypes=dtypes, graphs=graphs, examples=examples,
                       progress=progress, report=report)
    report.seconds = time.perf_counter() - start
    return report


def check(device: Device, *, ops_: list[str] | None = None, dtypes: list[str] | None = None,
          graphs: list[str] | None = None, examples: int = 20, progress=None,
          report: Report | None = None) -> Report:
    """Certify an opened device: `DEVICE_LAYERS`, the op cells of `ops_` x `dtypes` (None:
    all), then the jit cells of `graphs` in those dtypes (None: all, or none when `ops_`
    names ops)."""
    start = time.perf_counter()
    report = report or Report(device.backend.name)
    report.device = device.name
    _device_layers(report, device)
    selected = ops.specs() if ops_ is None else [ops.spec(n) for n in ops_]
    wanted = {dt.dtype(d) for d in dtypes} if dtypes else None
    todo = [(s, d) for s in selected for d in s.dtypes if wanted is None or d in wanted]
    for i, (s, d) in enumerate(todo):
        if progress:
            progress(i, len(todo), f"{s.name} {d.name}")
        report.cells.append(check_cell(device, s, d, examples))
    if graphs is None:
        graphs = [w.name for w in WORKLOADS] if ops_ is None else []
    chosen = [w for w in map(workload, graphs) if wanted is None or w.dtype in wanted]
    for i, w in enumerate(chosen):
        if progress:
            progress(i, len(chosen), f"jit {w.name}")
        report.graphs.append(check_graph(device, w))
    report.seconds = time.perf_counter() - start
    return report


def _device_layers(report: Report, device: Device) -> None:
    """Run the layers of `DEVICE_LAYERS` on the device into the report."""
    for layer, check_layer in DEVICE_LAYERS.items():
        try:
            ok, detail = check_layer(device)
        except Exception as e:  # a broken layer is a finding, not a crash of the kit
            ok, detail = False, f"{type(e).__name__}: {e}"
        report.layers.append(Layer(layer, ok, detail))
