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
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

import hal
from benchmarks.workload import NotMeasuredHere, Workload, suite_workloads

PACKAGE_ROOT = Path(__file__).resolve().parent.parent
STATUS, CLEAR_REFS = Path("/proc/self/status"), Path("/proc/self/clear_refs")
TIMEOUT_S = 600.0


def _kib(field: str) -> int:
    """A `Vm*` line of /proc/self/status in KiB."""
    for line in STATUS.read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise NotMeasuredHere(f"{STATUS} has no {field} line: the footprint needs Linux")


def _key(params: dict) -> str:
    return json.dumps(params, sort_keys=True, default=str)


def measure_footprint(suite: str, workload: Workload, dtype: str, device: str,
                      fallback: str = "error") -> dict[str, float]:
    """{"footprint_mib", "call_peak_mib"[, "device_peak_mib"]} of one call of `workload`
    under the CPU-fallback policy `fallback`, measured in a child process; NotMeasuredHere
    where the OS cannot say."""
    if not CLEAR_REFS.exists():
        raise NotMeasuredHere("the footprint needs Linux's /proc/self/clear_refs")
    spec = {"suite": suite, "workload": workload.name, "params": _key(workload.params),
            "dtype": dtype, "device": device, "fallback": fallback}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(PACKAGE_ROOT), os.environ.get("PYTHONPATH")) if p)}
    done = subprocess.run([sys.executable, "-m", "benchmarks.footprint", json.dumps(spec)],
                          capture_output=True, text=True, timeout=TIMEOUT_S, env=env,
                          cwd=PACKAGE_ROOT, check=False)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise hal.HalError(f"footprint of {suite}/{workload.name} on {device} ({dtype}): the "
                           f"child process failed (exit {done.returncode}): "
                           f"{done.stderr.strip()[-1500:]}")
    return json.loads(lines[-1])


def _child(spec: dict) -> dict[str, float]:
    """Measure in this process (see the module docstring)."""
    matches = [w for w in suite_workloads(spec["suite"])
               if w.name == spec["workload"] and _key(w.params) == spec["params"]]
    if len(matches) != 1:
        raise hal.HalError(f"footprint: suite {spec['suite']} has {len(matches)} workloads "
                           f"named {spec['workload']} with params {spec['params']}")
    workload, device = matches[0], hal.device(spec["device"])
    case = workload.build(np.dtype(hal.dtype(spec["dtype"])))
    tensors = [hal.asarray(a, device=device) for a in case.inputs]
    device.synchronize()
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
