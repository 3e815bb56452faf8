"""Quick suite: a small slice of the op suite for the default run (tens of seconds a device)."""

from __future__ import annotations

from benchmarks.suites import ops
from benchmarks.workload import Workload


def workloads() -> list[Workload]:
    """One or two workloads of each family of the op suite, mostly float32."""
    f32 = ("float32",)
    return [
        ops.elementwise("add", 1 << 22, f32),
        ops.reduction("sum", (2048, 2048), -1, f32),
        ops.gemm(1760, 16, 1760),
        ops.gemm(1024, 1024, 1024, f32),
        ops.fft("fft", (4096, 1024), ("complex64",)),
        ops.fft("fft2", (1024, 1024), ("complex64",)),
        ops.softmax(4096, 1024, f32),
        ops.layer_norm(4096, 1024, f32),
        ops.linear_gelu(512, 1024, 4096, f32),
        ops.attention(16, 512, 64, dtypes=f32),
    ]
