"""The ONNX Runtime backend: ONNX Runtime's execution providers as hal devices.

Devices are the execution providers (EPs) onnxruntime lists here: onnxruntime:0 is the
CPU EP, further indices the others in onnxruntime's order (CUDA, TensorRT, OpenVINO...).
A single op runs as a one-node hal graph exported with `hal.onnx.to_onnx` into an
InferenceSession cached by (op, params, operand shapes and dtypes); kernels.py registers
each op for the dtypes the CPU EP runs as the reference does (a table probe.py derives).
A `hal.jit` graph runs whole as ONE session (`compile`), so ONNX Runtime fuses and plans
it itself (session.py), its float16 values rounded between nodes as eager rounds them
(rounding.py). Tensors are host numpy arrays, or OrtValues in the EP's memory for
the CUDA and TensorRT EPs (device.py). Models are written in the IR version and opset the
installed onnxruntime loads (formats.py). onnxruntime is imported only when the backend is
asked about devices, so hal loads without it.
"""

from __future__ import annotations

import importlib

import hal

from .kernels import kernels

NO_COMPLEX = "ONNX Runtime has no complex tensors; use the cpu, opencl or cuda backend"
INSTALL = "pip install onnxruntime onnx (onnxruntime-gpu for the CUDA and TensorRT EPs)"
# EPs onnxruntime lists that run no graph nodes on this machine (Azure calls a remote endpoint)
_NOT_DEVICES = frozenset({"AzureExecutionProvider"})


def providers() -> list[str]:
    """The EPs that become devices, in index order: the CPU EP first, then onnxruntime's."""
    import onnxruntime

    found = [p for p in onnxruntime.get_available_providers() if p not in _NOT_DEVICES]
    return sorted(found, key=lambda p: p != "CPUExecutionProvider")  # stable: keeps the rest


class OnnxRuntimeBackend(hal.Backend):
    """ONNX Runtime: one device per execution provider; whole graphs run as one session."""

    name = "onnxruntime"
    kernels = kernels
    unsupported = {
        "complex64": NO_COMPLEX, "complex128": NO_COMPLEX,
        **{op: NO_COMPLEX for op in ("real", "imag", "conj", "complex", "fftn", "ifftn",
                                     "rfftn", "irfftn")},
    }

    def why_unavailable(self) -> str | None:
        """Why no EP can be opened (onnxruntime or onnx missing), or None; opens nothing."""
        for module in ("onnxruntime", "onnx"):
            try:
                importlib.import_module(module)
            except Exception as e:  # not installed, or a native library that fails to load
                return f"{module} does not import ({type(e).__name__}: {e}); {INSTALL}"
        return None if providers() else "onnxruntime lists no execution provider"

    def device_count(self) -> int:
        """How many EPs onnxruntime lists (the CPU EP at least)."""
        return len(providers())

    def _open_device(self, index: int):
        from .device import open_device

        return open_device(self, index, providers()[index])

    def compile(self, graph, device):
        """The graph as one ONNX Runtime session (cached by `graph.key()`); a graph ONNX or
        ONNX Runtime cannot run is replayed node by node instead (see session.py)."""
        from .session import compile_graph

        return compile_graph(graph, device)
