"""The Apache TVM backend: kernels written in TE, compiled per shape, autotuned on demand.

Each op is a TE builder (elementwise.py, reduce.py, movement.py, scan.py, linalg.py, quant.py);
composites are single fused kernels, and so is each fused group of a graph (fused.py).
compiler.py compiles and caches them in memory and on disk, schedule.py gives untuned
kernels a parallel, vectorised default, tuning.py runs meta_schedule (`hal tune`) into a
database later compiles use. Devices: the host CPU through LLVM, plus CUDA/OpenCL
devices where the installed TVM runtime has them (the PyPI wheel has neither). TVM has no
complex dtype, so complex tensors and the FFT family are declared unsupported and run
elsewhere. The kernel modules import TVM, so they load only once TVM is found
(`_load_kernels`): without TVM this module loads and says why. TVM's thread pool takes
HAL_THREADS threads (TVM_NUM_THREADS, read when TVM starts, wins where set; TVM's own
default is half the logical cores, which on a machine without SMT leaves half idle).
"""

from __future__ import annotations

import os

import hal

os.environ.setdefault("TVM_NUM_THREADS", str(hal.settings.threads))  # before TVM loads

from .table import kernels

_NO_COMPLEX = "TVM has no complex dtype; use the cpu, opencl or cuda backend for complex data"


class TVMBackend(hal.Backend):
    """TVM-compiled kernels on every target the installed TVM can build and run."""

    name = "tvm"
    kernels = kernels
    unsupported = {
        "complex64": _NO_COMPLEX, "complex128": _NO_COMPLEX,
        **{op: _NO_COMPLEX for op in ("real", "imag", "conj", "complex")},
        **{op: "no TVM FFT kernel: TE has no complex dtype to compute one in"
           for op in ("fftn", "ifftn", "rfftn", "irfftn")},
    }

    def why_unavailable(self) -> str | None:
        """Why TVM cannot compile for this machine, or None (imports TVM, opens nothing)."""
        try:
            import tvm
        except Exception as e:  # not installed, or a build whose native library fails to load
            return f"apache-tvm does not import ({type(e).__name__}: {e}); pip install apache-tvm"
        return None

    def device_count(self) -> int:
        """The host CPU plus each CUDA/OpenCL device the TVM runtime can use."""
        from . import target

        return len(target.available())

    def open(self, index: int = 0):
        """The device `index`; an index past the host's says which targets the installed
        TVM lacks."""
        if self.is_available() and index >= self.device_count():
            from . import target

            missing = "; ".join(target.missing().values()) or "no other TVM device is present"
            raise hal.BackendUnavailable(
                f"tvm:{index} does not exist: TVM here runs on {self.device_count()} device(s) "
                f"(tvm:0 is the host CPU); {missing}. Install a TVM build with that runtime "
                "to use its devices.")
        return super().open(index)

    def compile_fused(self, body, device):
        """One TE kernel for a fused group (fused.py), or None where it has no kernel."""
        from .fused import compile_fused

        return compile_fused(body, device)

    def _load_kernels(self) -> None:
        """Import the TE kernel modules (they import TVM), which register into `kernels`."""
        from . import conv, elementwise, linalg, movement, quant, reduce, scan

    def _open_device(self, index: int):
        from . import target
        from .device import TVMDevice

        return TVMDevice(self, index, target.available()[index])
