"""The first call of a workload in a fresh process: with empty caches, then with the caches
a first process left.

The child (`python -m benchmarks.first_call SPEC`) builds the workload's inputs on the
device, then times its first call between two device events: everything a workload does
once (for a jitted function: the trace, the compile and a checked first run). It runs
twice with one new cache directory (`HAL_CACHE_DIR`): the first child finds it empty, the
second finds what the first wrote there (the backends' disk caches of compiled kernels).
The imports of starting the process are not timed; a library a call imports for the
first time is.
"""

from __future__ import annotations

import json
import sys
import tempfile

import hal
from benchmarks.child import prepared, run_child
from benchmarks.workload import Workload, params_key


def measure_first_call(suite: str, workload: Workload, dtype: str, device: str,
                       fallback: str = "error") -> dict[str, float]:
    """{"first_call_empty_cache_s", "first_call_disk_cache_s"}: seconds of the first call of
    `workload` in a fresh process under the CPU-fallback policy `fallback`, with an empty
    cache directory, then with the one that first process filled."""
    spec = {"suite": suite, "workload": workload.name, "params": params_key(workload.params),
            "dtype": dtype, "device": device, "fallback": fallback}
    what = f"first call of {suite}/{workload.name} on {device} ({dtype})"
    with tempfile.TemporaryDirectory(prefix="hal-first-call-") as cache:
        env = {"HAL_CACHE_DIR": cache}
        empty = run_child("benchmarks.first_call", spec, what, env)["seconds"]
        cached = run_child("benchmarks.first_call", spec, what, env)["seconds"]
    return {"first_call_empty_cache_s": empty, "first_call_disk_cache_s": cached}


def _child(spec: dict) -> dict[str, float]:
    """Time the first call in this process (see the module docstring)."""
    workload, device, tensors = prepared(spec)
    with hal.fallback_policy(spec["fallback"]):
        start = device.record_event()
        workload.run(*tensors, **workload.options)
        end = device.record_event()
    return {"seconds": device.elapsed(start, end)}


if __name__ == "__main__":
    print(json.dumps(_child(json.loads(sys.argv[1]))))
