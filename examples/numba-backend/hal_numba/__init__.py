"""hal-numba: a hal backend whose kernels numba compiles for the host CPU.

An out-of-tree plugin built from public hal names only (`import hal`), in the shape of
`backends/null.py`: a device over host memory (numpy arrays), a kernel table, and an
entry point in pyproject.toml. Kernels are numba ufuncs and loops, compiled on first use
for the dtypes they are called with (`compiled.py`), half precision through float32
(`table.py`); the kernel modules import numba and load in `_load_kernels`, so without
numba the backend still loads and says why it is unavailable. Ops without a kernel
(complex functions, FFT, sorting, ...) run through hal's decompositions or its CPU
fallback, and `hal conformance --backend numba` shows which.
"""

from __future__ import annotations

import importlib.util
import os
import platform

import numpy as np

import hal

from .table import kernels


class NumbaDevice(hal.Device):
    """The host CPU as numba targets it; tensors are numpy arrays the device owns."""

    def _empty(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        return np.empty(shape, dtype)

    def _upload(self, array: np.ndarray) -> np.ndarray:
        return np.array(array)  # a copy: later writes to the host array leave the tensor alone

    def _download(self, native: np.ndarray) -> np.ndarray:
        return np.array(native)

    def _pool_stats(self) -> None:
        return None  # numpy owns host memory: only the total is known

    def _describe(self) -> dict:
        import llvmlite
        import llvmlite.binding as llvm
        import numba

        target = numba.config.CPU_NAME or llvm.get_host_cpu_name()
        return {
            "name": f"host CPU, LLVM target {target}",
            "vendor": platform.machine(),
            "driver_version": f"llvmlite {llvmlite.__version__} (LLVM "
                              f"{'.'.join(map(str, llvm.llvm_version_info))})",
            "runtime_version": f"numba {numba.__version__}",
            "memory_bytes": os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"),
            "memory": "host",
            "compute_units": numba.config.NUMBA_NUM_THREADS,
            "extra": {"llvm_target": llvm.get_process_triple(), "llvm_cpu": target,
                      "cpu_features": numba.config.CPU_FEATURES or "host"},
        }


class NumbaBackend(hal.Backend):
    """One device: the host CPU, with kernels numba compiles for it."""

    name = "numba"
    kernels = kernels

    def why_unavailable(self) -> str | None:
        """Why numba cannot run here (it is not installed), else None; imports nothing."""
        if importlib.util.find_spec("numba") is None:
            return "numba is not installed (pip install numba)"
        return None

    def _load_kernels(self) -> None:
        from . import elementwise, matmul, quant, reductions, take  # they import numba and register

    def _open_device(self, index: int) -> NumbaDevice:
        return NumbaDevice(self, index)
