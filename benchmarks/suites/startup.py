"""Startup suite: a fresh interpreter's `import hal` and first op, beside numpy's.

One call starts a new Python process that imports the library, makes a 2-element float64
array and adds 1 to it; the call's time is that process's wall time from start to exit,
interpreter start included, as a user waits for it. HAL_DEVICE and HAL_BACKENDS are unset
in the child, so the default device's rule is what is measured. The facts give the
child's peak resident memory (VmHWM) and, for hal, the backends it loaded and the
accelerator libraries it imported. Measured under the cpu backend only: it is a property
of hal's import and of the host, not of a device.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np

import hal
from benchmarks.child import PACKAGE_ROOT
from benchmarks.workload import Case, Workload, only_on

LIBRARIES = ("numba", "pyopencl", "tvm", "onnxruntime", "onnx", "cupy", "torch", "scipy")

_PEAK = """
import json, sys
peak = next(int(line.split()[1]) for line in open("/proc/self/status")
            if line.startswith("VmHWM:"))
"""

PROGRAMS = {
    "hal": """
import hal
values = (hal.asarray([1.0, 2.0]) + 1).numpy().tolist()
""" + _PEAK + f"""
from hal.runtime import registry
print(json.dumps({{"values": values, "peak_kib": peak,
                  "backends_loaded": sorted(registry.registry._backends),
                  "libraries_imported": [m for m in {LIBRARIES!r} if m in sys.modules]}}))
""",
    "numpy": """
import numpy as np
values = (np.asarray([1.0, 2.0]) + 1).tolist()
""" + _PEAK + """
print(json.dumps({"values": values, "peak_kib": peak}))
""",
}


def start(library: str) -> dict:
    """Run the start-up program of `library` in a fresh interpreter; what it printed."""
    env = {k: v for k, v in os.environ.items() if k not in ("HAL_DEVICE", "HAL_BACKENDS")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PACKAGE_ROOT),
                                                     os.environ.get("PYTHONPATH")) if p)
    done = subprocess.run([sys.executable, "-c", PROGRAMS[library]], capture_output=True,
                          text=True, timeout=300, env=env, cwd=PACKAGE_ROOT, check=False)
    if done.returncode != 0:
        raise hal.HalError(f"startup of {library}: the child process failed (exit "
                           f"{done.returncode}): {done.stderr.strip()[-1500:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def startup(library: str) -> Workload:
    """Start-up of `library` ("hal" or "numpy") in a fresh process; its output is the
    child's [2, 3]."""

    def run(x: hal.Tensor) -> hal.Tensor:
        return hal.asarray(np.asarray(start(library)["values"]), device=x.device)

    def facts(x: hal.Tensor) -> dict[str, float | str]:
        out = start(library)
        return {"peak_rss_mib": out["peak_kib"] / 1024,
                **{k: " ".join(out[k]) or "none" for k in ("backends_loaded",
                                                           "libraries_imported") if k in out}}

    workload = Workload("startup", {"library": library}, ("float64",),
                        lambda dtype: Case([np.array([1.0, 2.0], dtype)]), run,
                        lambda x: x + 1, facts=facts)
    return only_on(workload, ("cpu",), "a property of hal's import and the host, not a device")


def workloads() -> list[Workload]:
    """hal's start-up, then numpy's."""
    return [startup("hal"), startup("numpy")]
