"""The way from a traced graph to what runs it on a device: the backend is asked first.

`compile(graph, device)` hands the graph to the device's backend (`Backend.compile`): a
backend whose runtime takes whole graphs (ONNX Runtime's sessions) returns its own
executable. A backend that returns None gets hal's: the graph lowered for the device,
its elementwise groups fused (each offered to `Backend.compile_fused`) and replayed by
an `Executable` without per-op dispatch.
"""

from __future__ import annotations

from .executable import Executable
from .graph import Graph
from .passes import optimize


def compile(graph: Graph, device):
    """An executable of `graph` for `device`: called with the graph's input Tensors it
    returns the output Tensors (a list); `counts()` says how its nodes run."""
    executable = device.backend.compile(graph, device)
    if executable is None:
        executable = Executable(optimize(graph, device), device)
    return executable
