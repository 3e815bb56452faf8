"""The way from a traced graph to what runs it on a device: the backend is asked first.

`compile(graph, device)` hands the graph to the device's backend (`Backend.compile`): a
backend whose runtime takes whole graphs (ONNX Runtime's sessions) returns its own
executable, which hal wraps in a `BackendExecutable` so that `hal.placement()` sees its
nodes. A backend that returns None gets hal's: the graph lowered for the device, its
elementwise groups fused (each offered to `Backend.compile_fused`) and replayed by an
`Executable` without per-op dispatch; after a few calls the executable offers itself to
`Backend.capture`, and a backend that records it replays each call as one device graph
(`Backend.replay`, capture.py).
"""

from __future__ import annotations

from collections import Counter

from .. import dispatch
from ..runtime.settings import settings
from ..tensor import Tensor
from .executable import Executable, label
from .graph import Graph
from .passes import optimize


def compile(graph: Graph, device, *, capture: bool = True,
            donated: frozenset[int] = frozenset()):
    """An executable of `graph` for `device`: called with the graph's input Tensors it
    returns the output Tensors (a list); `counts()` says how its nodes run. hal's own
    executable offers itself to the backend's capture hook after a few calls (capture.py)
    unless `capture` is False or HAL_CAPTURE=0, and may write the inputs at `donated` in
    place (hal.jit's donate_argnums)."""
    executable = device.backend.compile(graph, device)
    if executable is None:
        return Executable(optimize(graph, device), device,
                          capture=capture and settings.capture, donated=donated)
    if isinstance(executable, Executable):  # hal's own machinery: it records itself
        return executable
    return BackendExecutable(executable, graph, device)


class BackendExecutable:
    """A backend's own executable of a graph (`Backend.compile`'s), called as it is.

    The counts contract: `counts()` maps each way the backend runs the graph's nodes
    ('compiled', an execution provider, or 'WAY:OP' for a breakdown by op) to a number of
    nodes. Inside `hal.placement()` every call records each node of the traced graph (its
    op and dtype) as run on the device by the ways of `counts()` (joined with '+'), so
    benchmark results list the graph's ops, unless the executable recorded its nodes itself
    (with `hal.dispatch.record`). Other attributes are the executable's own.
    """

    def __init__(self, executable, graph: Graph, device):
        self.executable, self.graph, self.device = executable, graph, device
        self._labels = [(label(n), n.dtype.name) for n in graph.nodes]

    def __call__(self, *inputs: Tensor) -> list[Tensor]:
        """Output Tensors for input Tensors, the nodes recorded in any open placement()."""
        if not dispatch.recording():
            return self.executable(*inputs)
        with dispatch.placement() as own:
            outputs = self.executable(*inputs)
        if not own.records:
            how = "+".join(dict.fromkeys(way.split(":")[0] for way in self.counts())) \
                or "compiled"
            for name, dtype in self._labels:
                dispatch.record(name, self.device.name, dtype, how)
        return outputs

    def counts(self) -> Counter:
        """The backend executable's counts: how many nodes run each way."""
        return Counter(self.executable.counts())

    def __getattr__(self, name: str):
        if name == "executable":  # not set yet (a copy being built): no recursion
            raise AttributeError(name)
        return getattr(self.executable, name)
