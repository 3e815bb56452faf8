"""One TVM device: a target, its kernel cache, and tensors as TVM runtime tensors."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator

import numpy as np
import tvm

import hal
from hal import dtypes as dt

from . import target as targets
from .compiler import Compiler


class Array:
    """A tensor on a TVM device: the runtime tensor plus numpy shape and dtype for dispatch.

    When it is garbage collected its memory goes back to the device's pool, unless a view
    shares it (`TVMDevice.view`).
    """

    __slots__ = ("device", "dtype", "nbytes", "owner", "shape", "tensor")

    def __init__(self, device: TVMDevice, tensor, shape: tuple, dtype: np.dtype,
                 owner: bool = True):
        self.device = device
        self.tensor = tensor
        self.shape = shape
        self.dtype = dtype
        self.owner = owner  # the only holder of its memory: it may be recycled
        self.nbytes = math.prod(shape) * dtype.itemsize if owner else 0
        device._live += self.nbytes

    @property
    def ndim(self) -> int:
        """Number of axes."""
        return len(self.shape)

    def __del__(self):
        try:
            self.device._release(self)
        except Exception:  # interpreter shutdown
            pass


class TVMDevice(hal.Device):
    """A TVM target and device; kernels are compiled for it on first use and cached.

    Tensors come from a pool of freed runtime tensors of the same shape and dtype: TVM
    allocates each tensor afresh, and a fresh megabyte costs its page faults on every
    call (0.24 ms of a 1 ms int8 GEMM at 512^3).
    """

    POOL_BYTES = 1 << 30  # freed memory kept for reuse at most
    oom_errors = (MemoryError, RuntimeError)  # TVM's FFI errors (std::bad_alloc) are these

    def __init__(self, backend: hal.Backend, index: int, info: targets.TargetInfo):
        self.info = info
        self.tvm_device = info.tvm_device()
        self.compiler = Compiler(info, hal.settings.cache_dir)
        self._live = self._pooled = 0
        self._pool: dict[tuple, list] = {}
        super().__init__(backend, index)

    def _release(self, array: Array) -> None:
        self._live -= array.nbytes
        if array.owner and self._pooled + array.nbytes <= self.POOL_BYTES:
            self._pool.setdefault((array.shape, array.dtype), []).append(array.tensor)
            self._pooled += array.nbytes

    # -- tensors: hal.Device's memory hooks over TVM runtime tensors ---------------------
    def _empty(self, shape: tuple, dtype: np.dtype) -> Array:
        free = self._pool.get((shape, dtype))
        if free:
            tensor = free.pop()
            self._pooled -= math.prod(shape) * dtype.itemsize
        else:
            tensor = tvm.runtime.empty(shape, dtype.name, self.tvm_device)
        return Array(self, tensor, shape, dtype)

    def _upload(self, array: np.ndarray) -> Array:
        if not array.flags.c_contiguous:
            array = array.copy(order="C")
        out = self._empty(array.shape, array.dtype)
        out.tensor.copyfrom(array)
        return out

    def _download(self, native: Array) -> np.ndarray:
        return native.tensor.numpy()

    def _pool_stats(self) -> dict[str, int]:
        return {"allocated": self._live, "reserved": self._live + self._pooled}

    def view(self, array: Array, shape: tuple) -> Array:
        """The same memory seen with another shape (neither side is recycled afterwards)."""
        if tuple(shape) == array.shape:
            return array
        array.owner = False
        return Array(self, array.tensor._create_view(tuple(shape)), tuple(shape), array.dtype,
                     owner=False)

    def empty_cache(self) -> None:
        """Drop the pool of freed tensors."""
        self._pool.clear()
        self._pooled = 0

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

    def _describe(self) -> dict:
        from . import tuning

        conf = dict(self.info.config)
        on_host = self.info.kind == "llvm"
        return {
            "name": f"TVM {self.info.key}",
            "vendor": hal.host.cpu_model() if on_host else self.info.kind,
            "driver_version": f"tvm {tvm.__version__}",
            "runtime_version": f"llvm {tvm.support.libinfo().get('LLVM_VERSION', '?')}",
            "memory_bytes": hal.host.memory_bytes() if on_host else None,
            "memory": "host" if on_host else None,
            "compute_units": conf.get("num-cores"),
            "extra": {
                "target": conf,
                "int8_dot_product": "avx512 vnni (vpdpbusd)" if on_host and targets.has_vnni()
                                    else "none",
                "kernel_cache": str(self.compiler.directory),
                "threads": tvm.runtime.num_threads() if on_host else None,
                "tuning_database": str(tuning.database_dir(self.info)),
                # a damaged database is named here, so results say why nothing was tuned
                "tuning_database_problem": tuning.database_problem(
                    tuning.database_dir(self.info)),
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
