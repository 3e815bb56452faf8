"""The CUDA backend (cupy): the whole op set on NVIDIA GPUs.

Tensors are `cupy.ndarray`s. Kernels are cupy's own library calls (cuBLAS matmul, cupy's
reductions), elementwise kernels generated from the op set's expressions with a 16-byte
vector fast path (elementwise, vector), int8 and half-precision products on the tensor
cores through cuBLAS gemmEx (int8, gemm_ex), cuFFT plans of hal's own (fft_plan), fused
kernels for the composites and one generated kernel per elementwise fused group of a
graph (graph_kernels); a jitted graph is
recorded once as a CUDA graph and replayed (capture); collectives among ranks each on a
GPU of its own run through NCCL (nccl), others stage through host memory. Either cupy wheel
works: cupy-cuda12x (`pip install -e '.[cuda]'`) or cupy-cuda13x (`.[cuda13]`). cupy is
imported only when the backend is asked about devices, so hal loads without it.
"""

from __future__ import annotations

import hal
from hal import dtypes as dt

from . import elementwise, fft, fused, gemm, int8, linalg, movement, quant, reduce, sorting
from .table import kernels

INSTALL = "pip install -e '.[cuda]' (cupy-cuda12x) or '.[cuda13]' (cupy-cuda13x)"


def has_bfloat16() -> bool:
    """True when the installed cupy has bfloat16 arrays (cupy 14 and later, with ml_dtypes)."""
    import cupy

    return dt.bfloat16 is not None and int(cupy.__version__.split(".")[0]) >= 14


class CudaBackend(hal.Backend):
    """Every CUDA GPU cupy sees; cuda:N is CUDA device N."""

    name = "cuda"
    kernels = kernels

    def why_unavailable(self) -> str | None:
        """Why no GPU can be opened here (cupy missing, no driver, no device), or None."""
        try:
            import cupy
        except Exception as e:  # a broken cupy install fails in many ways; say which
            return f"cupy is not installed ({type(e).__name__}: {e}); {INSTALL}"
        try:
            count = cupy.cuda.runtime.getDeviceCount()
        except Exception as e:  # CUDARuntimeError: no driver, driver too old, no device
            return f"CUDA reports no usable GPU: {e}"
        return None if count > 0 else "CUDA reports 0 devices"

    def device_count(self) -> int:
        """How many CUDA devices the driver lists."""
        import cupy

        return cupy.cuda.runtime.getDeviceCount()

    def _open_device(self, index: int):
        from .device import CudaDevice

        return CudaDevice(self, index)

    def compile_fused(self, body, device):
        """One generated kernel for an elementwise fused group (see graph_kernels), or None
        to decline (reduce bodies, float16/bfloat16)."""
        from .graph_kernels import compile_fused

        return compile_fused(device, body)

    def capture(self, device, run):
        """One call of a jitted graph recorded as a CUDA graph on a stream of its own."""
        from . import capture

        return capture.capture(device, run)

    def replay(self, device, graph, copies: list, outputs: list) -> list:
        """The CUDA graph launched once, ordered after the inputs' copies, outputs copied."""
        from . import capture

        return capture.replay(device, graph, copies, outputs)

    def collectives_transport(self, device) -> str:
        """"nccl" where cupy's NCCL binding finds the library, else "host (why)"."""
        try:
            from cupy.cuda import nccl
        except Exception as e:  # a cupy built without the binding fails in several ways
            return f"host (cupy's NCCL binding does not import: {type(e).__name__}: {e})"
        if not nccl.available:
            return ("host (cupy finds no NCCL library; pip install nvidia-nccl-cu12, or "
                    "nvidia-nccl-cu13 beside cupy-cuda13x)")
        return "nccl"

    def open_collectives(self, device, size, rank, bootstrap):
        """An NCCL communicator of the group's ranks (see nccl)."""
        from .nccl import NcclCollectives

        return NcclCollectives(device, size, rank, bootstrap)

    def unsupported_on(self, device) -> dict:
        """bfloat16 where the installed cupy has no bfloat16 arrays."""
        if has_bfloat16() or dt.bfloat16 is None:
            return {}
        return {"bfloat16": "cupy < 14 has no bfloat16 arrays; pip install 'cupy-cuda12x>=14' "
                            "(or cupy-cuda13x>=14), or cast to float32"}
