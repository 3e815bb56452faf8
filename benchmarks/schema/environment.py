"""What a new run describes: this machine, its software and environment, now.

The host's CPU model and memory come from `hal.host`; the rest (cores, OS, Python, git
state, library versions, the environment variables that change results) is read here.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import re
import subprocess
from pathlib import Path
from typing import Any

import hal
from benchmarks.schema.records import DeviceRecord, RunRecord

# library -> its distributions, in order; a wheel variant named after the library
# (cupy-cuda13x, onnxruntime-gpu) counts where none of them is installed
LIBRARIES = {
    "numpy": ("numpy",),
    "scipy": ("scipy",),
    "pyopencl": ("pyopencl",),
    "tvm": ("apache-tvm", "tlcpack"),
    "onnxruntime": ("onnxruntime",),
    "cupy": ("cupy",),
    "torch": ("torch",),
    "jax": ("jax",),
}
ENV_PREFIXES = ("HAL_", "OPENBLAS_", "MKL_", "MPIR_CVAR_")
ENV_NAMES = ("OMP_NUM_THREADS",)


def new_run(
    run_id: str,
    devices: list[DeviceRecord] | None = None,
    repo: Path | None = None,
    config: dict[str, Any] | None = None,
) -> RunRecord:
    """A run record describing this machine and process now, fingerprint included.

    `config` is what the run was asked to measure (stored so that a resume follows it).
    """
    run = RunRecord(
        id=run_id,
        git=git_state(repo or Path.cwd()),
        host=host_info(),
        devices=list(devices or []),
        libraries=library_versions(),
        env=relevant_env(),
        loadavg=list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        config=dict(config or {}),
    )
    run.fingerprint = run.compute_fingerprint()
    return run


def git_state(repo: Path) -> dict[str, Any] | None:
    """`{"commit", "dirty"}` of the git checkout at `repo`, or None outside one."""
    try:
        commit = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        status = subprocess.run(
            ["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": commit, "dirty": bool(status.strip())}


def host_info() -> dict[str, Any]:
    """Host name, CPU model, logical cores (total and usable), the threads hal gives each
    library (HAL_THREADS), memory bytes, OS and Python."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {
        "hostname": platform.node(),
        "cpu": hal.host.cpu_model(),
        "machine": platform.machine(),
        "cores": os.cpu_count(),
        "usable_cores": usable,
        "threads": hal.settings.threads,
        "memory_bytes": hal.host.memory_bytes(),
        "os": platform.platform(),
        "python": platform.python_version(),
    }


def library_versions(
    libraries: dict[str, tuple[str, ...]] = LIBRARIES,
) -> dict[str, str | None]:
    """Installed versions of the libraries that matter (None if absent), without importing
    them: the first of a library's distributions installed, else a variant wheel named
    `<library>-...` (cupy-cuda12x, cupy-cuda13x, cupy-rocm-6-0, onnxruntime-gpu)."""
    installed = {_normalized(d.name): d.version for d in importlib.metadata.distributions()
                 if d.name}
    versions: dict[str, str | None] = {}
    for name, distributions in libraries.items():
        found = [installed[d] for d in map(_normalized, distributions) if d in installed]
        found += [v for d, v in sorted(installed.items()) if d.startswith(f"{name}-")]
        versions[name] = found[0] if found else None
    return versions


def with_device_libraries(libraries: dict[str, str | None],
                          capabilities: dict[str, Any]) -> dict[str, str | None]:
    """`libraries` with the versions an opened device names in its capabilities' extra
    (the cuda backend's cupy) filled in where the installed distributions gave none (a
    library on the path without its metadata)."""
    named = {k: v for k, v in (capabilities.get("extra") or {}).items()
             if k in libraries and isinstance(v, str)}
    return {k: v if v is not None else named.get(k) for k, v in libraries.items()}


def _normalized(distribution: str) -> str:
    """A distribution's name as PEP 503 compares them (cupy_cuda13x is cupy-cuda13x)."""
    return re.sub(r"[-_.]+", "-", distribution).lower()


def relevant_env() -> dict[str, str]:
    """Environment variables that may change results: HAL_*, thread counts, BLAS/MPI tuning.

    All are recorded; the fingerprint leaves out those naming paths (HAL_CACHE_DIR among
    them; see `records.fingerprinted_env`)."""
    return {
        k: v for k, v in sorted(os.environ.items()) if k in ENV_NAMES or k.startswith(ENV_PREFIXES)
    }
