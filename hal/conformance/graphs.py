"""The graph layer: the backend's graph hooks (`Backend.compile`, `compile_fused`) through
`hal.jit`, one jit cell per graph workload (`graph_workloads.py`).

A cell runs the workload eagerly on the device, then jitted there twice (the first call of
hal's executable runs node by node, later ones its generated code; the second offers the
graph to `Backend.capture`), then twice more, on the same inputs and on other ones (the
inputs moved: `_other`), so that a backend that captures replays its recording (inputs copied
in, the first result not overwritten by the second), and compares each jitted result with
the eager one and the eager one with the reference, the same function run eagerly on the
cpu backend. It records the path the graph took: `graph` (the backend's `compile`
returned its own executable), `fused` (hal's executable with groups compiled by
`compile_fused`) or `replay` (hal's executable, every node by its kernel), `+captured`
when the calls replayed a recording, and the executable's `counts()`, which must be a
mapping of how nodes run to how many (`capture_refused` there: the backend declined). A hook
that raised while hal recovered (a PluginWarning: the group then ran node by node) fails
the cell too.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Mapping

import numpy as np

from ..compile.executable import Executable
from ..compile.jit import jit
from ..dispatch import fallback_policy, placement
from ..runtime.device import Device
from ..runtime.errors import HalError, PluginWarning, UnsupportedDType, UnsupportedOp
from ..runtime.registry import resolve_device
from ..tensor import Tensor
from .compare import mismatch
from .graph_workloads import GraphWorkload
from .records import FAIL, FALLBACK, PASS, UNSUPPORTED, GraphCell

TOLERANCE = (1e-4, 1e-6)  # (rtol of the output's largest magnitude, atol): float32 graphs


def path_of(executable) -> str:
    """How a jitted graph runs: graph, fused or replay (see the module's docstring)."""
    if not isinstance(executable, Executable):
        return "graph"
    return "fused" if executable.counts().get("compiled") else "replay"


def check_graph(device: Device, workload: GraphWorkload) -> GraphCell:
    """One jit cell: the workload jitted on the device against eager there and the reference."""
    start = time.perf_counter()
    cell = GraphCell(workload.name, workload.dtype.name, PASS,
                     repro=_repro(device, workload))
    if not device.supports_dtype(workload.dtype):
        cell.status, cell.error = UNSUPPORTED, f"{device.name} lacks {workload.dtype.name}"
        return cell
    hosts, cpu = workload.inputs(), resolve_device("cpu")  # cpu has a kernel for every op
    with fallback_policy("allow"), np.errstate(all="ignore"), placement() as where:
        try:
            expected = workload.fn(*[Tensor.from_host(a, cpu) for a in hosts]).numpy()
            tensors = [Tensor.from_host(a, device) for a in hosts]
            eager = workload.fn(*tensors).numpy()
            others = [Tensor.from_host(_other(a), device) for a in hosts]
            eager_others = workload.fn(*others).numpy()
        except (UnsupportedOp, UnsupportedDType) as e:
            cell.status, cell.error = UNSUPPORTED, f"eager: {e}"
            return _timed(cell, start)
        except HalError as e:
            return _failed(cell, start, f"eager raised {type(e).__name__}: {e}")
        problem = _compare("eager on the device vs the cpu reference", eager, expected)
        try:
            with warnings.catch_warnings(record=True) as warned:
                warnings.simplefilter("always", PluginWarning)
                jitted = jit(workload.fn)
                first = jitted(*tensors).numpy()
                executable = jitted.compiled(*tensors)
                cell.path = path_of(executable)
                again = jitted(*tensors).numpy()
                held, replayed = jitted(*tensors), jitted(*others).numpy()
                counts = executable.counts()
                if _is_counts(counts) and counts.get("captured"):
                    cell.path += "+captured"
        except Exception as e:  # a graph hook that fails is a finding, not a crash of the kit
            return _failed(cell, start, f"jit ({cell.path or 'compiling'}) raised "
                                        f"{type(e).__name__}: {e}")
    faults = [w for w in warned if issubclass(w.category, PluginWarning)]
    if faults:  # hal recovered (ran the nodes one by one), but a hook of the backend failed
        return _failed(cell, start, f"jit ({cell.path}): {faults[0].message}")
    if not _is_counts(counts):
        return _failed(cell, start, f"the executable's counts() gave {counts!r}, not a "
                                    "mapping of how nodes run to how many")
    cell.counts = dict(counts)
    problem = problem or _compare(f"jit ({cell.path}) vs eager", first, eager) or \
        _compare(f"jit ({cell.path}) called again vs eager", again, eager) or \
        _compare(f"jit ({cell.path}) on other inputs vs eager", replayed, eager_others) or \
        _compare(f"jit ({cell.path}) result held over the next call vs eager", held.numpy(),
                 eager)
    if problem:
        return _failed(cell, start, problem)
    if device.backend.name != "cpu" and any(how == "fallback" for *_, how in where.records):
        cell.status = FALLBACK
    return _timed(cell, start)


def _other(a: np.ndarray) -> np.ndarray:
    """Other inputs of the same kind: floats halved and moved by a quarter (inside the
    range the workloads draw from), other kinds reversed."""
    if a.dtype.kind in "fc":
        return (a * 0.5 + 0.25).astype(a.dtype)
    return np.flip(a).copy()


def _compare(what: str, actual: np.ndarray, expected: np.ndarray) -> str:
    rtol, atol = TOLERANCE
    finite = np.abs(expected[np.isfinite(expected)])
    scale = float(finite.max()) if finite.size else 0.0
    problem = mismatch(actual, expected, (0.0, atol + rtol * scale))
    return f"{what}: {problem}" if problem else ""


def _is_counts(counts) -> bool:
    return isinstance(counts, Mapping) and all(
        isinstance(k, str) and isinstance(n, int) for k, n in counts.items())


def _failed(cell: GraphCell, start: float, error: str) -> GraphCell:
    cell.status, cell.error = FAIL, error.splitlines()[0][:500]
    return _timed(cell, start)


def _timed(cell: GraphCell, start: float) -> GraphCell:
    cell.seconds = time.perf_counter() - start
    return cell


def _repro(device: Device, workload: GraphWorkload) -> str:
    """A Python snippet that runs the workload jitted and eagerly on the device."""
    return "\n".join([
        "import hal",
        "from hal.conformance.graph_workloads import workload",
        f"w = workload({workload.name!r})",
        f"x = [hal.asarray(a, device={device.name!r}) for a in w.inputs()]",
        "print(hal.jit(w.fn)(*x).numpy())",
        "print(w.fn(*x).numpy())  # eager",
    ])
