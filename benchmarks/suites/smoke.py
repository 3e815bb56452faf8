"""Smoke suite: the smallest case of each op family, seconds in all.

For checking that a new backend plugs into the harness end to end (inputs, check,
timing, placement), not for figures.
"""

from __future__ import annotations

from benchmarks.suites import ops
from benchmarks.workload import Workload


def workloads() -> list[Workload]:
    """Tiny elementwise, reduction, GEMM, FFT and composite workloads."""
    return [
        ops.elementwise("add", 4096),
        ops.reduction("sum", (64, 64), -1),
        ops.gemm(64, 16, 64),
        ops.fft("fft", (8, 256), ("complex64",)),
        ops.softmax(64, 128, ("float32",)),
        ops.attention(2, 32, 16, dtypes=("float32",)),
    ]
