"""One CUDA GPU: device selection, cupy's memory pool counted, CUDA events, DLPack, and the
guard every kernel runs under (out-of-memory through hal.Device's retry, compile and CUDA
errors become hal errors)."""

from __future__ import annotations

import gc
import weakref

import cupy
import numpy as np
from cupy.cuda.compiler import CompileException
from cupy_backends.cuda.api.driver import CUDADriverError
from cupy_backends.cuda.api.runtime import CUDARuntimeError

import hal
from hal import dtypes as dt

DLPACK_CPU, DLPACK_CUDA, DLPACK_CUDA_MANAGED = 1, 2, 13


class CudaCompileError(hal.HalError):
    """A CUDA kernel that NVRTC could not compile; `log` holds the compiler's output."""

    def __init__(self, message: str, log: str):
        super().__init__(message)
        self.log = log


class _CountingAllocator:
    """cupy's default memory pool with hal's counts per GPU: requests, device allocations,
    and the peak of bytes in use (the pool itself keeps no peak)."""

    def __init__(self):
        self.pool = cupy.get_default_memory_pool()
        self.counts: dict[int, list[int]] = {}  # device id -> [requests, device allocs, peak]

    def malloc(self, nbytes: int):
        """A block from the pool, counted for the current GPU."""
        pool = self.pool
        reserved = pool.total_bytes()
        memory = pool.malloc(nbytes)
        counts = self.counts.setdefault(memory.device_id, [0, 0, 0])
        counts[0] += 1
        if pool.total_bytes() > reserved:
            counts[1] += 1
        counts[2] = max(counts[2], pool.used_bytes())
        return memory


_allocator: _CountingAllocator | None = None


def _counting_allocator() -> _CountingAllocator:
    """The process's counting allocator, installed as cupy's allocator on first use."""
    global _allocator
    if _allocator is None:
        _allocator = _CountingAllocator()
        cupy.cuda.set_allocator(_allocator.malloc)
    return _allocator


def _version(v: int) -> str:
    """CUDA's integer version (12090) as text (12.9)."""
    return f"{v // 1000}.{v % 1000 // 10}"


def describe_operands(args) -> str:
    """'float32(4, 5), int8(3,)' for the arrays among a kernel's operands."""
    return ", ".join(f"{a.dtype.name}{tuple(a.shape)}" for a in args if hasattr(a, "shape"))


class CudaDevice(hal.Device):
    """A CUDA GPU; tensors are `cupy.ndarray`s allocated from cupy's memory pool."""

    timer = "CUDA events (cupy.cuda.Event) on the device's current stream"
    oom_errors = (cupy.cuda.memory.OutOfMemoryError,)

    def __init__(self, backend: hal.Backend, index: int):
        self.cuda_device = cupy.cuda.Device(index)
        self.allocator = _counting_allocator()
        self.captured_graphs = weakref.WeakSet()  # CUDA graphs of hal.jit graphs (capture.py)
        super().__init__(backend, index)

    # -- the guard every kernel runs under ------------------------------------------------
    def launch(self, op: str, fn, args: tuple, params: dict):
        """fn(*args, **params) on this GPU. Out of memory: the pool's cached blocks are
        released and fn retried once, then HalOutOfMemory; a compile error is a
        CudaCompileError with the compiler log; other CUDA errors are DeviceErrors."""
        with self.cuda_device:
            try:
                return self.retrying(lambda: f"in {op} for {describe_operands(args)}", fn,
                                     *args, **params)
            except CompileException as e:
                log = e.get_message()
                raise CudaCompileError(
                    f"{op} on {self.name}: a CUDA kernel for {describe_operands(args)} did not "
                    f"compile; this is a bug of the cuda backend, please report it with the "
                    f"compiler log:\n{log}", log) from None
            except (CUDARuntimeError, CUDADriverError) as e:
                raise hal.DeviceError(
                    f"{op} on {self.name}: CUDA failed for {describe_operands(args)}: {e}; "
                    "check `nvidia-smi` and the driver") from None

    # -- tensors: hal.Device's memory hooks over cupy arrays --------------------------------
    def _empty(self, shape: tuple, dtype: np.dtype) -> cupy.ndarray:
        return self.launch("empty", cupy.empty, (shape,), {"dtype": dtype})

    def _upload(self, array: np.ndarray) -> cupy.ndarray:
        if array.dtype == dt.bfloat16:  # copied as bits: no bfloat16 arithmetic involved
            return self.launch("upload", lambda a: cupy.asarray(a).view(dt.bfloat16),
                               (array.view(np.uint16),), {})
        return self.launch("upload", cupy.asarray, (array,), {})

    def _download(self, native: cupy.ndarray) -> np.ndarray:
        with self.cuda_device:
            if native.dtype == dt.bfloat16:
                return cupy.asnumpy(native.view(np.uint16)).view(dt.bfloat16)
            return cupy.asnumpy(native)

    def _pool_stats(self) -> dict[str, int]:
        with self.cuda_device:
            used, reserved = self.allocator.pool.used_bytes(), self.allocator.pool.total_bytes()
        requests, device_allocations, peak = self.allocator.counts.get(self.index, (0, 0, 0))
        return {"allocated": used, "reserved": reserved, "peak": max(peak, used),
                "allocations": requests, "device_allocations": device_allocations}

    def from_dlpack(self, obj) -> cupy.ndarray:
        """Zero-copy from a producer on this GPU (cupy, torch, ...); host producers are copied."""
        kind, index = obj.__dlpack_device__() if hasattr(obj, "__dlpack_device__") else (
            DLPACK_CUDA, self.index)
        if kind == DLPACK_CPU:
            return self.upload(np.from_dlpack(obj))
        if kind not in (DLPACK_CUDA, DLPACK_CUDA_MANAGED) or index != self.index:
            raise hal.DeviceError(
                f"from_dlpack: the producer lives on DLPack device ({kind}, {index}), not on "
                f"{self.name}; pass device='cuda:{index}' or move it to the host first")
        with self.cuda_device:
            out = cupy.from_dlpack(obj)
        self.check_dtype(dt.dtype(out.dtype), "from_dlpack")
        return out

    # -- runtime --------------------------------------------------------------------------
    def synchronize(self) -> None:
        """Block until every stream of the GPU is idle."""
        self.cuda_device.synchronize()

    def _record_event(self) -> cupy.cuda.Event:
        with self.cuda_device:
            event = cupy.cuda.Event()
            event.record()
        return event

    def _elapsed(self, start: cupy.cuda.Event, end: cupy.cuda.Event) -> float:
        end.synchronize()
        return cupy.cuda.get_elapsed_time(start, end) * 1e-3

    def reset_peak(self) -> None:
        """Start peak accounting afresh from the bytes in use now (the peak is counted by
        the allocator hook, which sees cupy's own allocations too)."""
        with self.cuda_device:
            used = self.allocator.pool.used_bytes()
        self.allocator.counts.setdefault(self.index, [0, 0, 0])[2] = used

    def empty_cache(self) -> None:
        """Release the pool's cached blocks and cuFFT plans of this GPU to the driver (the
        plans stay while a captured graph, which launches them, lives)."""
        gc.collect()  # arrays kept alive only by reference cycles go back to the pool
        with self.cuda_device:
            if not self.captured_graphs:
                cupy.fft.config.get_plan_cache().clear()
            self.allocator.pool.free_all_blocks()

    def _describe(self) -> dict:
        props = cupy.cuda.runtime.getDeviceProperties(self.index)
        cc = f"{props['major']}.{props['minor']}"
        runtime = cupy.cuda.runtime
        return {
            "name": props["name"].decode(errors="replace"),
            "vendor": "AMD" if runtime.is_hip else "NVIDIA",
            "driver_version": f"CUDA {_version(runtime.driverGetVersion())} (driver)",
            "runtime_version": f"CUDA {_version(runtime.runtimeGetVersion())} (runtime); "
                               f"cupy {cupy.__version__}",
            "memory_bytes": int(props["totalGlobalMem"]),
            "compute_units": int(props["multiProcessorCount"]),
            "extra": {
                "compute_capability": cc,
                "sm_count": int(props["multiProcessorCount"]),
                "l2_cache_bytes": props.get("l2CacheSize"),
                "pci_bus_id": self.cuda_device.pci_bus_id,
                "cupy": cupy.__version__,
                "libraries": "cuBLAS (matmul), cuFFT (FFT), NVRTC (fused kernels)",
                "stream": "the legacy default stream; one stream per captured hal.jit graph",
            },
        }
