"""A measuring module run in a fresh process: `python -m MODULE SPEC`, its answer the last
line it prints (JSON). The spec names the suite, the workload (its name and params key),
the dtype, the device and the CPU-fallback policy."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

import hal
from benchmarks.workload import Workload, find_workload

PACKAGE_ROOT = Path(__file__).resolve().parent.parent
TIMEOUT_S = 600.0


def run_child(module: str, spec: dict[str, Any], what: str,
              env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run `python -m module SPEC` from the checkout with `env` added to this environment,
    and return the JSON object it printed last; HalError naming `what` with the child's
    exit status and stderr when it fails."""
    environ = {**os.environ, **(env or {}), "PYTHONPATH": os.pathsep.join(
        p for p in (str(PACKAGE_ROOT), os.environ.get("PYTHONPATH")) if p)}
    done = subprocess.run([sys.executable, "-m", module, json.dumps(spec)],
                          capture_output=True, text=True, timeout=TIMEOUT_S, env=environ,
                          cwd=PACKAGE_ROOT, check=False)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise hal.HalError(f"{what}: the child process failed (exit {done.returncode}): "
                           f"{done.stderr.strip()[-1500:]}")
    return json.loads(lines[-1])


def prepared(spec: dict[str, Any]) -> tuple[Workload, hal.Device, list[hal.Tensor]]:
    """In the child: the workload the spec names, its device, and its inputs on the device
    (synchronised, so that nothing of their upload is measured)."""
    workload = find_workload(spec["suite"], spec["workload"], spec["params"], spec["dtype"])
    device = hal.device(spec["device"])
    case = workload.build(np.dtype(hal.dtype(spec["dtype"])))
    tensors = [hal.asarray(a, device=device) for a in case.inputs]
    device.synchronize()
    return workload, device, tensors
