"""NCCL through cupy: the cuda backend's collectives among ranks each on a GPU of its own.

A group whose ranks sit on distinct GPUs of one node (the frontend decides: hal's Mesh)
opens one `NcclCollectives` per rank, all ranks at once: rank 0's NCCL unique id reaches
the others through the group's bootstrap (an MPI broadcast in the Mesh). Its all_reduce,
all_gather and reduce_scatter take cupy arrays and are enqueued on the GPU's current
stream, so what runs next on that stream sees their results. Sums follow hal's host path
(frontends/parallel/mesh.py): float16 and bfloat16 in float32 rounded once at the end,
complex as its real and imaginary parts; gathers move raw bytes, so any dtype. A jitted
graph that calls them is not captured as a CUDA graph (`_stream`). NCCL refuses two ranks
on one GPU ("Duplicate GPU detected"), which is why the frontend stages those.
"""

from __future__ import annotations

import cupy
import numpy as np
from cupy.cuda import nccl

import hal
from hal import dtypes as dt

_WIDE = {np.dtype(np.float16): np.float32, **({dt.bfloat16: np.float32} if dt.bfloat16 else {})}
_TYPES = {np.dtype(np.int8): nccl.NCCL_INT8, np.dtype(np.uint8): nccl.NCCL_UINT8,
          np.dtype(np.int32): nccl.NCCL_INT32, np.dtype(np.int64): nccl.NCCL_INT64,
          np.dtype(np.float32): nccl.NCCL_FLOAT32, np.dtype(np.float64): nccl.NCCL_FLOAT64}


class NcclCollectives:
    """An NCCL communicator of `size` ranks, this one `rank` on `device` (a CudaDevice)."""

    def __init__(self, device, size: int, rank: int, bootstrap):
        self.device, self.size, self.rank = device, size, rank
        uid = bootstrap(nccl.get_unique_id)
        with device.cuda_device:
            self.comm = self._guard("creating the communicator", nccl.NcclCommunicator,
                                    size, uid, rank)

    def all_reduce(self, x: cupy.ndarray) -> cupy.ndarray:
        """The elementwise sum of x over the ranks."""
        with self.device.cuda_device:
            wire = _summable(x)
            out = cupy.empty_like(wire)
            self._guard("all_reduce", self.comm.allReduce, wire.data.ptr, out.data.ptr,
                        wire.size, _TYPES[wire.dtype], nccl.NCCL_SUM, _stream())
            return _narrowed(out, x.dtype).reshape(x.shape)

    def all_gather(self, x: cupy.ndarray, axis: int) -> cupy.ndarray:
        """Every rank's x concatenated along axis in rank order."""
        with self.device.cuda_device:
            raw = cupy.ascontiguousarray(x).reshape(-1).view(cupy.uint8)
            out = cupy.empty(self.size * raw.size, cupy.uint8)
            self._guard("all_gather", self.comm.allGather, raw.data.ptr, out.data.ptr,
                        raw.size, nccl.NCCL_UINT8, _stream())
            parts = out.view(x.dtype).reshape(self.size, *x.shape)
            if axis == 0:
                return parts.reshape(self.size * x.shape[0], *x.shape[1:])
            return cupy.concatenate(list(parts), axis)

    def reduce_scatter(self, x: cupy.ndarray, axis: int) -> cupy.ndarray:
        """This rank's chunk along axis of the sum of x over the ranks."""
        with self.device.cuda_device:
            moved = cupy.ascontiguousarray(cupy.moveaxis(x, axis, 0))
            wire = _summable(moved)
            out = cupy.empty(wire.size // self.size, wire.dtype)
            self._guard("reduce_scatter", self.comm.reduceScatter, wire.data.ptr,
                        out.data.ptr, out.size, _TYPES[wire.dtype], nccl.NCCL_SUM, _stream())
            chunk = _narrowed(out, x.dtype).reshape(moved.shape[0] // self.size,
                                                    *moved.shape[1:])
            return cupy.ascontiguousarray(cupy.moveaxis(chunk, 0, axis))

    def _guard(self, what: str, call, *args):
        try:
            return call(*args)
        except nccl.NcclError as e:
            raise hal.DeviceError(
                f"NCCL {what} on {self.device.name} (rank {self.rank} of {self.size}) "
                f"failed: {e}; run with NCCL_DEBUG=WARN for NCCL's reason (two ranks on one "
                "GPU, a GPU another process holds, mismatched calls across the ranks)") from None


def _stream() -> int:
    """The current stream's handle; HalError while it is being captured into a CUDA graph,
    so a jitted graph with NCCL collectives runs uncaptured (its replays would skip the
    group's per-call checks, counts and watchdog)."""
    stream = cupy.cuda.get_current_stream()
    if stream.is_capturing():
        raise hal.HalError("NCCL collectives are not recorded into CUDA graphs: the group "
                           "checks, counts and watches each call on the host; the jitted "
                           "graph runs uncaptured")
    return stream.ptr


def _summable(x: cupy.ndarray) -> cupy.ndarray:
    """x flat and contiguous in the type NCCL sums it in (the op set's numeric dtypes)."""
    flat = cupy.ascontiguousarray(x).reshape(-1)
    if x.dtype.kind == "c":
        return flat.view(np.dtype(f"f{x.dtype.itemsize // 2}"))
    wide = _WIDE.get(x.dtype)
    return flat if wide is None else flat.astype(wide)


def _narrowed(out: cupy.ndarray, dtype: np.dtype) -> cupy.ndarray:
    """The summed wire array back in x's dtype (flat)."""
    return out.view(dtype) if dtype.kind == "c" else out.astype(dtype, copy=False)
