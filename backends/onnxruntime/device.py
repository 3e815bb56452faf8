"""ONNX Runtime devices: one per execution provider, with the memory that EP reads.

Most EPs (the CPU EP, OpenVINO, ...) take host arrays: tensors are numpy arrays and a
session runs on them directly (bfloat16 ones, which onnxruntime's numpy conversion lacks,
pass as OrtValues over the same memory). The CUDA and TensorRT EPs compute in GPU memory: tensors
are OrtValues there and sessions run through IO binding. That second path follows ONNX
Runtime's documented OrtValue and IOBinding API; no machine it was developed on has a GPU
EP, so it has not been run.
"""

from __future__ import annotations

import os

import numpy as np
import onnxruntime as ort
from onnx import TensorProto

import hal
from hal import dtypes as dt
from hal import host

from . import formats
from .session import (
    GRAPH_SESSIONS,
    LRU,
    OP_SESSIONS,
    PARALLEL_ELEMENTS,
    run_on_host,
    run_op,
    session_options,
)

# EPs whose tensors live in device memory: the OrtValue device type they allocate on
DEVICE_MEMORY = {"CUDAExecutionProvider": "cuda", "TensorrtExecutionProvider": "cuda"}


def open_device(backend: hal.Backend, index: int, provider: str) -> OnnxRuntimeDevice:
    """The device of one EP (index as the backend numbers the EPs)."""
    if provider in DEVICE_MEMORY:
        return OrtValueDevice(backend, index, provider, DEVICE_MEMORY[provider])
    return OnnxRuntimeDevice(backend, index, provider)


class OnnxRuntimeDevice(hal.Device):
    """An EP that reads host memory: tensors are numpy arrays, sessions run on them."""

    timer = "host perf_counter (ONNX Runtime runs return when the results are written)"
    run_op = run_op  # a single op through its one-node session (session.run_op)

    def __init__(self, backend: hal.Backend, index: int, provider: str):
        self.provider = provider
        # the EP first; the CPU EP runs the nodes it has no kernel for
        self.session_providers = list(dict.fromkeys([provider, "CPUExecutionProvider"]))
        self.op_sessions = LRU(OP_SESSIONS)  # one-op sessions by (op, params, operands)
        self.graph_sessions = LRU(GRAPH_SESSIONS)  # graph executables by graph.key()
        super().__init__(backend, index)

    # -- memory ------------------------------------------------------------------------------
    def _empty(self, shape: tuple, dtype: np.dtype) -> np.ndarray:
        return np.empty(shape, dtype)

    def _upload(self, array: np.ndarray) -> np.ndarray:
        return np.asarray(array, order="C")  # sessions read dense arrays; no copy when dense

    def _download(self, native: np.ndarray) -> np.ndarray:
        return np.asarray(native)  # the array itself: callers must not write to it

    def _pool_stats(self) -> None:
        return None  # numpy and ONNX Runtime's arena own host memory: only the total is known

    # -- running sessions --------------------------------------------------------------------
    def run_session(self, program, natives: list) -> list:
        """The program's outputs for its inputs' native arrays: `InferenceSession.run` on
        them, or IO binding where bfloat16 (which numpy lacks) passes in or out."""
        if not program.bfloat16:
            return run_on_host(program, natives)
        outputs = [np.empty(shape, dtype) for shape, dtype in program.out_meta]
        program.run_bound([_host_value(a) for a in natives], [_host_value(o) for o in outputs])
        return outputs

    def synchronize(self) -> None:
        """Nothing to wait for: a session run returns when its outputs are written."""

    def _describe(self) -> dict:
        probe = ort.InferenceSession(formats.identity_model(), session_options(1),
                                     providers=self.session_providers)
        on_host = self.provider == "CPUExecutionProvider"
        return {
            "name": self.provider,
            "vendor": "ONNX Runtime",
            "runtime_version": f"onnxruntime {ort.__version__}",
            "memory_bytes": host.memory_bytes() if on_host else None,
            "memory": "host" if on_host else None,
            "compute_units": os.cpu_count() if on_host else None,
            "extra": {
                "provider_options": probe.get_provider_options().get(self.provider, {}),
                "session_providers": self.session_providers,
                "intra_op_threads": f"{hal.settings.threads} from a tensor of "
                                    f"{PARALLEL_ELEMENTS} elements up, else 1",
                "graph_optimization": "ORT_ENABLE_ALL",
                "host_cpu": host.cpu_model(),
                "build": ort.get_build_info(),
                "onnx_formats": "IR version {}, opset {}".format(*formats.accepted()),
            },
        }


def _host_value(array: np.ndarray) -> ort.OrtValue:
    """An OrtValue over a host array's memory (bfloat16 as ONNX's own type)."""
    if array.dtype == dt.bfloat16:
        return ort.OrtValue.ortvalue_from_numpy_with_onnx_type(array.view(np.uint16),
                                                               TensorProto.BFLOAT16)
    return ort.OrtValue.ortvalue_from_numpy(array)


class OrtArray:
    """A tensor's storage in an EP's device memory: an OrtValue with its shape and dtype."""

    __slots__ = ("dtype", "shape", "value")

    def __init__(self, value: ort.OrtValue, shape: tuple, dtype: np.dtype):
        self.value, self.shape, self.dtype = value, tuple(shape), dtype


class OrtValueDevice(OnnxRuntimeDevice):
    """An EP with memory of its own (CUDA, TensorRT): tensors are OrtValues there."""

    def __init__(self, backend: hal.Backend, index: int, provider: str, memory: str):
        self.memory = memory  # the OrtValue device type: "cuda"
        super().__init__(backend, index, provider)

    def _empty(self, shape: tuple, dtype: np.dtype) -> OrtArray:
        value = ort.OrtValue.ortvalue_from_shape_and_type(list(shape), dtype, self.memory, 0)
        return OrtArray(value, shape, dtype)

    def _upload(self, array: np.ndarray) -> OrtArray:
        dense = np.asarray(array, order="C")
        value = ort.OrtValue.ortvalue_from_numpy(dense, self.memory, 0)
        return OrtArray(value, dense.shape, dense.dtype)

    def _download(self, native: OrtArray) -> np.ndarray:
        return native.value.numpy()

    def run_session(self, program, natives: list) -> list:
        """The program's outputs, bound to new OrtValues in device memory."""
        outputs = [self._empty(shape, dtype) for shape, dtype in program.out_meta]
        program.run_bound([a.value for a in natives], [o.value for o in outputs])
        return outputs
