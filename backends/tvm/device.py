"""One TVM device: a target, its kernel cache, and tensors as TVM runtime tensors."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator

import numpy as np

import hal
from hal import dtypes as dt

from . import target as targets
from .compiler import Compiler


class Array:
    """A tensor on a TVM device: the runtime tensor plus numpy shape and dtype for dispatch."""

    __slots__ = ("device", "dtype", "nbytes", "shape", "tensor")

    def __init__(self, device: TVMDevice, tensor, shape: tuple, dtype: np.dtype):
        self.device = device
        self.tensor = tensor
        self.shape = shape
        self.dtype = dtype
        self.nbytes = math.prod(shape) * dtype.itemsize
        device._count(self.nbytes)

    @property
    def ndim(self) -> int:
        """Number of axes."""
        return len(self.shape)

    def __del__(self):
        try:
            self.device._count(-self.nbytes)
        except Exception:  # interpreter shutdown
            pass


class TVMDevice(hal.Device):
    """A TVM target and device; kernels are compiled for it on first use and cached."""

    def __init__(self, backend: hal.Backend, index: int, info: targets.TargetInfo):
        self.info = info
        self.tvm_device = info.tvm_device()
        self.compiler = Compiler(info, hal.settings.cache_dir)
        self._live = self._peak_live = self._allocs = 0
        super().__init__(backend, index)

    def _count(self, nbytes: int) -> None:
        self._live += nbytes
        if nbytes > 0:
            self._allocs += 1
            self._peak_live = max(self._peak_live, self._live)

    # -- tensors -------------------------------------------------------------------------
    def empty(self, shape: tuple, dtype: np.dtype) -> Array:
        """An uninitialised tensor on the device."""
        import tvm

        try:
            tensor = tvm.runtime.empty(shape, dtype.name, self.tvm_device)
        except Exception as e:  # TVM raises its own error types for allocation failures
            raise hal.HalOutOfMemory(
                f"{self.name}: TVM could not allocate {dtype.name}{list(shape)} "
                f"({type(e).__name__}: {e}); free tensors or use smaller shapes") from e
        return Array(self, tensor, shape, dtype)

    def upload(self, array: np.ndarray) -> Array:
        """A device tensor holding a copy of a host array."""
        import tvm

        array = np.asarray(array)
        if not array.flags.c_contiguous:
            array = array.copy(order="C")
        return Array(self, tvm.runtime.tensor(array, self.tvm_device), array.shape, array.dtype)

    def download(self, native: Array) -> np.ndarray:
        """A host copy of a device tensor."""
        return native.tensor.numpy()

    def run(self, op: str, build: Callable, arrays, /, **params) -> Array:
        """Compile (once) and run a TE kernel over device tensors; returns its output."""
        inputs = tuple((a.shape, a.dtype) for a in arrays)
        compiled = self.compiler.kernel(op, build, inputs, freeze(params) if params else ())
        out = self.empty(compiled.shape, compiled.dtype)
        compiled.function(*[a.tensor for a in arrays], out.tensor)
        return out

    @contextlib.contextmanager
    def default_schedules(self) -> Iterator[None]:
        """Run kernels with the default schedule inside the block, even where tuned ones
        exist (to measure what tuning gained)."""
        before, self.compiler.use_tuned = self.compiler.use_tuned, False
        try:
            yield
        finally:
            self.compiler.use_tuned = before

    # -- runtime ---------------------------------------------------------------------------
    def synchronize(self) -> None:
        """Block until the device's queued work is done."""
        self.tvm_device.sync()

    def memory_stats(self) -> hal.MemoryStats:
        """Bytes held by live tensors (TVM's allocator keeps no statistics of its own)."""
        return hal.MemoryStats(allocated=self._live, reserved=None, peak=self._peak_live,
                               allocations=self._allocs, device_allocations=None,
                               total=self.capabilities.memory_bytes)

    def reset_peak(self) -> None:
        """Start peak accounting afresh."""
        self._peak_live = self._live

    def _describe(self) -> dict:
        import tvm

        from . import tuning

        conf = dict(self.info.config)
        on_host = self.info.kind == "llvm"
        return {
            "name": f"TVM {self.info.key}",
            "vendor": hal.host.cpu_model() if on_host else self.info.kind,
            "driver_version": f"tvm {tvm.__version__}",
            "runtime_version": f"llvm {tvm.support.libinfo().get('LLVM_VERSION', '?')}",
            "memory_bytes": hal.host.memory_bytes() if on_host else None,
            "compute_units": conf.get("num-cores"),
            "extra": {
                "target": conf,
                "int8_dot_product": "avx512 vnni (vpdpbusd)" if on_host and targets.has_vnni()
                                    else "none",
                "kernel_cache": str(self.compiler.directory),
                "tuning_database": str(tuning.database_dir(self.info)),
                "tuning_runs": tuning.runs(self.info),
                "targets_not_built": targets.missing(),
            },
        }


def freeze(value):
    """Params as a hashable, repr-stable value (lists to tuples, dtypes to names)."""
    if isinstance(value, dict):
        return tuple(sorted((k, freeze(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    if isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic)):
        return dt.dtype(value).name
    if isinstance(value, np.generic):
        return value.item()
    return value
