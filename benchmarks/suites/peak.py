"""Peak suite: a device's practical peak FLOP/s per dtype and memory bandwidth.

A GEMM sweep gives the FLOP/s peak (the best rate over the sizes), and STREAM-style
kernels over arrays far beyond the last-level cache give the bandwidth peak. STREAM
counts bytes as its fused kernels would move them (scale: 2 arrays, add and triad: 3);
triad here is two hal ops (multiply, add), so a backend that fuses them scores higher.
The best rates are stored with the device's capabilities and give every later
measurement its % of peak.
"""

from __future__ import annotations

import numpy as np

import hal
from benchmarks.suites.ops import gemm
from benchmarks.workload import Case, Workload, random_array

SCALAR = 3.0


def _scale(x):
    """STREAM scale: q * x."""
    return hal.multiply(x, SCALAR)


def _triad(b, c):
    """STREAM triad: b + q * c (two hal ops)."""
    return hal.add(b, hal.multiply(c, SCALAR))


_STREAM = {
    "scale": (1, _scale, lambda x: x * SCALAR),
    "add": (2, hal.add, np.add),
    "triad": (2, _triad, lambda b, c: b + c * SCALAR),
}


def stream(kind: str, n: int, dtypes=("float64",)) -> Workload:
    """A STREAM kernel (scale, add or triad) over arrays of `n` elements."""
    inputs, run, reference = _STREAM[kind]

    def build(dtype: np.dtype) -> Case:
        arrays = [random_array((n,), dtype, seed) for seed in range(inputs)]
        return Case(arrays, bytes=(inputs + 1) * n * dtype.itemsize, items=n)

    return Workload(f"stream_{kind}", {"n": n}, dtypes, build, run, reference, peak="gbps")


def workloads() -> list[Workload]:
    """GEMM 256..2048 in float32/float64 and STREAM over 256 MiB arrays (8x a 32 MiB LLC)."""
    n = 1 << 25
    return [
        *(gemm(s, s, s, peak="gflops") for s in (256, 512, 1024, 2048)),
        *(stream(kind, n) for kind in _STREAM),
    ]
