"""ONNX Runtime sessions: options, the LRU caches, single ops and whole graphs as sessions.

A session's intra-op pool has `hal.settings.threads` threads (HAL_THREADS) when its largest
tensor has at least PARALLEL_ELEMENTS elements, else none (the calling thread runs it): on 2
cores a pool made a one-op session 2-7x dearer to create (0.9-7 against 0.5-0.6 ms) and a
small graph 2-3x slower to run (75-130 against 30-45 us for a 6x8 transformer block), and
every cached one-op session would hold one. (A process-wide pool is no way out: once made,
onnxruntime refuses every session with a pool of its own, other code's ones included.)
On a host-memory EP a program runs with `InferenceSession.run` on the numpy arrays
themselves: for small graphs it measured faster than IO binding (10-16 against 23-30 us
for a 1k-element add; binding each input and output is a Python call of its own), and no
slower for a 32x512x2048 MLP. A device-memory EP (device.py) runs with IO binding.
"""
from __future__ import annotations

import functools
import math
import warnings
from collections import Counter, OrderedDict
from collections.abc import Callable, Hashable

import onnxruntime as ort
from onnxruntime.capi import onnxruntime_pybind11_state as ort_errors

import hal
from hal import dispatch
from hal import dtypes as dt
from hal.compile import passes
from hal.compile.executable import Executable, label
from hal.compile.graph import Graph, Node
from hal.tensor import Tensor

from . import rounding

OP_SESSIONS = 256  # one-op sessions a device keeps
GRAPH_SESSIONS = 32  # whole-graph sessions a device keeps (they hold the weights)
PARALLEL_ELEMENTS = 1 << 16  # a session gets a thread pool from a tensor of this size up


class LRU:
    """A bounded cache that forgets the least recently used entry; counts hits and misses."""

    def __init__(self, size: int):
        self.size = size
        self.hits = self.misses = 0
        self._entries: OrderedDict[Hashable, object] = OrderedDict()

    def get(self, key: Hashable, make: Callable[[], object]):
        """The entry for key, made (and counted as a miss) when absent."""
        entries = self._entries
        value = entries.get(key)
        if value is not None:
            self.hits += 1
            entries.move_to_end(key)
            return value
        self.misses += 1
        value = entries[key] = make()
        if len(entries) > self.size:
            entries.popitem(last=False)
        return value

    def __len__(self) -> int:
        return len(self._entries)


def session_options(threads: int) -> ort.SessionOptions:
    """Options of a hal session: `threads` intra-op threads (1: no pool) that, like the
    inter-op ones, do not spin between runs (on shared cores a spinning pool takes the time
    of the work around the call), all graph optimisations, only fatal errors logged (the
    others are raised)."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 4
    options.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
    return options


def threads_for(graph: Graph) -> int:
    """Intra-op threads for a graph's session: every core when it has a large tensor."""
    shapes = [shape for shape, _ in graph.inputs] + [c.shape for c in graph.constants] + \
        [node.shape for node in graph.nodes]
    largest = max((math.prod(shape) for shape in shapes), default=0)
    return hal.settings.threads if largest >= PARALLEL_ELEMENTS else 1


class Program:
    """One InferenceSession of an exported hal graph, run on device-native arrays: `run`
    is `run_session(program, natives)` (a device's), else a plain run on host arrays."""

    def __init__(self, graph: Graph, providers: list[str], run_session=None):
        self.model = rounding.export(graph)  # UnsupportedOp for what ONNX lacks
        self.threads = threads_for(graph)
        self.session = ort.InferenceSession(self.model.SerializeToString(),
                                            session_options(self.threads),
                                            providers=providers)
        self.inputs = [i.name for i in self.session.get_inputs()]
        self.outputs = [o.name for o in self.session.get_outputs()]
        self.out_meta = [graph.meta(r) for r in graph.outputs]
        self.bfloat16 = any(d == dt.bfloat16 for _, d in [*graph.inputs, *self.out_meta])
        self.run = functools.partial(run_session or run_on_host, self)

    def run_bound(self, inputs: list[ort.OrtValue], outputs: list[ort.OrtValue]) -> None:
        """Run with IO binding: inputs read from, outputs written into the OrtValues."""
        binding = self.session.io_binding()
        for name, value in zip(self.inputs, inputs):
            binding.bind_ortvalue_input(name, value)
        for name, value in zip(self.outputs, outputs):
            binding.bind_ortvalue_output(name, value)
        self.session.run_with_iobinding(binding)

    def nodes(self) -> Counter:
        """'EP:OpType' -> nodes as ONNX Runtime assigns them to its EPs: after its basic
        optimisations (constants folded, batch norms into convolutions), before the extended
        and layout ones (on the CPU EP, activations and residual adds fused into the
        convolutions), which the session also runs."""
        return Counter(f"{sub.ep_name}:{node.op_type}"
                       for sub in self.session.get_provider_graph_assignment_info()
                       for node in sub.get_nodes())


def run_on_host(program: Program, natives: list) -> list:
    """The program's outputs (numpy arrays) for host numpy arrays, by `InferenceSession.run`."""
    return program.session.run(program.outputs, dict(zip(program.inputs, natives)))


# -- single ops ----------------------------------------------------------------------------------
def run_op(device, op: str, operands: tuple, params: dict, out_shape: tuple, out_dtype):
    """op on native operands (None for an absent option) through its one-node session."""
    present = [a for a in operands if a is not None]
    metas = tuple(None if a is None else (a.shape, a.dtype) for a in operands)
    key = (op, tuple(params.items()), metas)
    try:
        hash(key)
    except TypeError:  # a list among the params (pad_width, say)
        key = (op, repr(params), metas)
    program = device.op_sessions.get(
        key, lambda: Program(_one_node(op, metas, params, out_shape, out_dtype),
                             device.session_providers, device.run_session))
    return program.run(present)[0]


def _one_node(op: str, metas: tuple, params: dict, shape: tuple, dtype) -> Graph:
    """A graph of one node of op whose present operands are the graph's inputs."""
    inputs, refs = [], []
    for meta in metas:
        refs.append(None if meta is None else ("input", len(inputs)))
        if meta is not None:
            inputs.append(meta)
    return Graph(inputs, [Node(op, tuple(refs), dict(params), tuple(shape), dtype)], [],
                 [("node", 0)])


# -- whole graphs --------------------------------------------------------------------------------
def compile_graph(graph: Graph, device):
    """The executable of a hal graph on an ONNX Runtime device: its session, cached by the
    graph's key, or a replay.

    The graph is simplified (constants folded, common and dead nodes removed) but not
    lowered or fused, so composites export as ONNX's own ops (LayerNormalization, Gelu,
    Softmax) and ONNX Runtime fuses them itself. Where ONNX cannot express a node or ONNX
    Runtime has no kernel for one, the graph is replayed node by node (`Replayed`), as
    expected, with no warning; any other failure to build the session replays it with a
    PluginWarning naming the error.
    """
    graph = passes.optimize(graph)
    session = device.graph_sessions.get(
        graph.key(), lambda: session_executable(graph, device, device.session_providers,
                                                device.run_session))
    if isinstance(session, str):  # replays bind anew, under the fallback policy of the day
        return Replayed(graph, device, session)
    return session


def session_executable(graph: Graph, device, providers: list[str],
                       run_session=None) -> SessionExecutable | str:
    """The graph's session executable on device (a `Program` of these arguments), or why it
    has none: a string when ONNX cannot express a node or ONNX Runtime lacks a kernel, a
    PluginWarning beside it for any other failure to build the session."""
    try:
        program = Program(graph, providers, run_session)
        return SessionExecutable(graph, device, program)
    except hal.UnsupportedOp as e:
        return str(e)
    except ort_errors.NotImplemented as e:
        return f"ONNX Runtime has no kernel: {_first_line(e)}"
    except Exception as e:  # an exported model ONNX Runtime refuses: a fault to report
        warnings.warn(f"{device.name}: a {len(graph.nodes)}-node graph did not become an ONNX "
                      f"Runtime session ({type(e).__name__}: {_first_line(e)}); it is replayed "
                      "node by node (a fault of hal.onnx's export or of the onnxruntime "
                      "backend)", hal.PluginWarning, stacklevel=4)
        return f"{type(e).__name__}: {_first_line(e)}"


def _first_line(e: Exception) -> str:
    return str(e).strip().splitlines()[0][:300] if str(e).strip() else type(e).__name__


class SessionExecutable:
    """A hal graph run as one ONNX Runtime session: called with the graph's input Tensors it
    returns its output Tensors. `counts()` gives the nodes as assigned to the session's EPs,
    per EP and ONNX op type (before ONNX Runtime's extended fusions: `Program.nodes`);
    `hal.placement()` records each hal node as run by the session's EPs (e.g.
    `onnxruntime:0:CPUExecutionProvider`); `source` is the ONNX model as text."""

    def __init__(self, graph: Graph, device, program: Program):
        self.graph, self.device, self.program = graph, device, program
        self._nodes = program.nodes()
        self.how = "+".join(sorted({key.split(":")[0] for key in self._nodes})) or \
            device.provider
        self._labels = [(label(n), n.dtype.name) for n in graph.nodes]

    @property
    def source(self) -> str:
        """The ONNX model the session runs, in ONNX's text syntax."""
        import onnx

        return onnx.printer.to_text(self.program.model)

    def __call__(self, *inputs: Tensor) -> list[Tensor]:
        """Output Tensors for input Tensors of the graph's input shapes and dtypes."""
        try:
            natives = self.program.run([t.native for t in inputs])
        except Exception as e:
            raise hal.KernelError(
                f"{self.device.name}: the ONNX Runtime session of a {len(self.graph.nodes)}-"
                f"node graph raised {type(e).__name__}: {_first_line(e)}") from e
        if dispatch.recording():
            for name, dtype in self._labels:
                dispatch.record(name, self.device.name, dtype, self.how)
        wrap, device = Tensor.wrap, self.device
        return [wrap(native, device) for native in natives]

    def counts(self) -> Counter:
        """'EP:OpType' -> nodes as assigned to the session's EPs (`Program.nodes`)."""
        return Counter(self._nodes)


class Replayed(Executable):
    """A graph the session cannot run, replayed node by node with the single-op kernels (and
    the CPU fallback where they lack a dtype); `reason` says why, `counts()` says 'replayed'."""

    def __init__(self, graph: Graph, device, reason: str):
        super().__init__(passes.optimize(graph, device), device)
        self.reason = reason

    def counts(self) -> Counter:
        """Nodes per way of running, each marked as replayed: 'replayed kernel', ..."""
        return Counter({f"replayed {how}": n for how, n in super().counts().items()})
