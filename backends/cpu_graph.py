"""The cpu backend's jitted convolution graphs as ONE ONNX Runtime session.

A jitted float32 graph that has a convolution or a pool and whose every node is in
`WHOLE` is exported with `hal.onnx.to_onnx` (weights as initializers) and run as one
InferenceSession on the CPU execution provider, built once per graph and input shapes (per
`hal.jit` cache entry), with HAL_THREADS intra-op threads that do not spin between runs
(`session.intra_op.allow_spinning=0`: on shared cores a spinning pool takes the time of
the numpy work around the call). ONNX Runtime then prepacks the weights, folds each batch
norm into its convolution and fuses the activations, where the per-node path hands each
convolution its weight as a fresh session input. The sessions are the onnxruntime
backend's (`backends.onnxruntime.session`) run on the cpu device's numpy arrays.
ResNet-50 on a 2-core Xeon (AVX-512, AMX), images/s before -> after (ONNX Runtime on the
exported model): batch 1, 1 thread 11.1 -> 22.1 (22.2); batch 32 at 112x112, 2 threads
14.8 -> 63.1 (54.4); the digits CNN (cnn suite) 153k -> 316k-617k. Building the session
makes the first call dearer: 0.22 -> 0.69 s at batch 1 (0.5 -> 1.7 s under load).

Any other graph, a graph whose session cannot be built, or a process without onnxruntime,
keeps hal's own executable: the graph lowered (batch norms folded into their convolutions),
fused and replayed node by node with the kernels of backends.cpu. There its constants are
read-only views (`freeze`), so each convolution with a constant weight runs a session with
the weight prepacked, cached by the array's identity (backends.cpu_conv).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

import hal
from hal.compile import passes
from hal.compile.executable import Executable
from hal.compile.graph import Graph

from . import cpu_conv

ANCHORS = frozenset({"conv", "conv_transpose", "max_pool", "avg_pool"})
"""A graph runs whole only when it has one of these (where the session pays for itself)."""
WHOLE = ANCHORS | {
    "batch_norm", "matmul", "linear", "add", "subtract", "multiply", "divide", "maximum",
    "minimum", "negative", "abs", "exp", "sqrt", "tanh", "sigmoid", "relu", "gelu", "clip",
    "softmax", "log_softmax", "mean", "sum", "max", "reshape", "permute_dims", "concat",
}
"""The ops ONNX Runtime's CPU EP runs in float32 as the references do, exported one to one."""
PROVIDERS = ["CPUExecutionProvider"]


def runs_whole(graph: Graph) -> bool:
    """Whether the graph is one for a session: float32 throughout, every node in WHOLE, at
    least one in ANCHORS."""
    metas = [*graph.inputs, *((tuple(c.shape), c.dtype) for c in graph.constants),
             *((n.shape, n.dtype) for n in graph.nodes)]
    return any(n.op in ANCHORS for n in graph.nodes) \
        and all(n.op in WHOLE for n in graph.nodes) \
        and all(dtype == np.float32 for _, dtype in metas)


def has_onnxruntime() -> bool:
    """Whether onnxruntime and onnx import."""
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


def compile(graph: Graph, device: hal.Device):
    """The graph's session executable on the cpu device; else, for a graph with a
    convolution, hal's executable of it with frozen constants; else None (hal's own)."""
    if runs_whole(graph) and has_onnxruntime():
        from .onnxruntime.session import session_executable

        made = session_executable(graph, device, PROVIDERS)
        if not isinstance(made, str):
            return made
    if not any(n.op in cpu_conv.WEIGHTED for n in graph.nodes):
        return None
    return Executable(freeze(passes.optimize(graph, device)), device)


def freeze(graph: Graph) -> Graph:
    """The graph with its constants as read-only views of their arrays."""
    return replace(graph, constants=[hal.Tensor.wrap(_read_only(c.native), c.device)
                                     for c in graph.constants])


def _read_only(array: np.ndarray) -> np.ndarray:
    view = array.view()
    view.flags.writeable = False
    return view
