"""Peak memory of one workload call, measured in a fresh process.

The child (`python -m benchmarks.footprint SPEC`) builds the workload's inputs on the
device and notes its resident memory, calls the workload once (solver set-up, plans,
compilation), resets the resident high-water mark (`/proc/self/clear_refs`, Linux) and
calls it again. The footprint is that call's high-water mark above the memory before the
first call: what the computation keeps (coefficients, plans, buffers, compiled code) plus
its temporaries at their peak, its inputs excluded, the one-off memory of compiling
excluded. It counts host memory whatever allocates it (numpy, XLA, a backend's pool on
the host), so peers written in any library compare on the same terms. The device's own
peak is added where the device counts its memory.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import hal
from benchmarks.child import prepared, run_child
from benchmarks.workload import NotMeasuredHere, Workload, params_key

STATUS, CLEAR_REFS = Path("/proc/self/status"), Path("/proc/self/clear_refs")


def _kib(field: str) -> int:
    """A `Vm*` line of /proc/self/status in KiB."""
    for line in STATUS.read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise NotMeasuredHere(f"{STATUS} has no {field} line: the footprint needs Linux")


def measure_footprint(suite: str, workload: Workload, dtype: str, device: str,
                      fallback: str = "error") -> dict[str, float]:
    """{"footprint_mib", "call_peak_mib"[, "device_peak_mib"]} of one call of `workload`
    under the CPU-fallback policy `fallback`, measured in a child process; NotMeasuredHere
    where the OS cannot say."""
    if not CLEAR_REFS.exists():
        raise NotMeasuredHere("the footprint needs Linux's /proc/self/clear_refs")
    spec = {"suite": suite, "workload": workload.name, "params": params_key(workload.params),
            "dtype": dtype, "device": device, "fallback": fallback}
    return run_child("benchmarks.footprint", spec,
                     f"footprint of {suite}/{workload.name} on {device} ({dtype})")


def _child(spec: dict) -> dict[str, float]:
    """Measure in this process (see the module docstring)."""
    workload, device, tensors = prepared(spec)
    before = _kib("VmRSS")
    with hal.fallback_policy(spec["fallback"]):
        for call in range(2):
            if call == 1:
                CLEAR_REFS.write_text("5")  # resets VmHWM to the current resident size
                resident = _kib("VmRSS")
                device.reset_peak()
            out = workload.run(*tensors, **workload.options)
            device.synchronize()
            peak = _kib("VmHWM")
            del out
    figures = {"footprint_mib": (peak - before) / 1024, "call_peak_mib": (peak - resident) / 1024}
    device_peak = device.memory_stats().peak
    if device.backend.name != "cpu" and device_peak is not None:
        figures["device_peak_mib"] = device_peak / 2**20
    return figures


if __name__ == "__main__":
    print(json.dumps(_child(json.loads(sys.argv[1]))))
