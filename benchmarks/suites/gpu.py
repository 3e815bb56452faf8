"""GPU suite: the op-suite measurements at sizes that fill a data-centre GPU.

GEMM 8192^3 in float32, bfloat16 and float16; complex64 FFTs (a batch of 4096 x 1024
points, and 2-D 1024 x 1024); elementwise bandwidth over 2^27 elements; and each fused
composite (softmax, layer_norm, linear + gelu, attention) beside the same computation
written as separate hal ops (`*_unfused`), so a backend's fusion shows as a speedup.
Run it on one device: `hal bench --suite gpu --backend cuda`.

Every GEMM, FFT and bandwidth row gets its % of the device's measured peak without the
`peak` suite: the GEMMs are the FLOP/s peaks of their dtypes (a complex FFT is held
against its real part's, float32), and `add` the bandwidth peak of a device with memory
of its own (on host memory, the host's measured bandwidth: `benchmarks.peaks`). The run
record names the cupy the device ran (`libraries`).
"""

from __future__ import annotations

import dataclasses
import math

import hal
from benchmarks.suites.ops import (
    attention,
    elementwise,
    fft,
    gemm,
    layer_norm,
    linear_gelu,
    softmax,
)

F32 = ("float32",)


def _softmax_unfused(x, axis=-1):
    """softmax as four ops: max, subtract and exp, sum, divide."""
    e = hal.exp(x - hal.max(x, axis=axis, keepdims=True))
    return e / hal.sum(e, axis=axis, keepdims=True)


def _layer_norm_unfused(x, w, b, eps=1e-5):
    """layer_norm as separate ops: mean, centre, variance, scale, weight, bias."""
    c = x - hal.sum(x, axis=-1, keepdims=True) * (1 / x.shape[-1])
    var = hal.sum(c * c, axis=-1, keepdims=True) * (1 / x.shape[-1])
    return c / hal.sqrt(var + eps) * w + b


def _linear_unfused(x, w, b, activation="gelu"):
    """matmul, bias add, then exact gelu as elementwise ops."""
    y = x @ w + b
    return 0.5 * y * (1 + hal.erf(y * (1 / math.sqrt(2))))


def _attention_unfused(q, k, v, causal=False):
    """Two matmuls around an unfused softmax (no causal mask: the suite's case has none)."""
    scores = (q @ hal.matrix_transpose(k)) * (1 / math.sqrt(q.shape[-1]))
    return _softmax_unfused(scores) @ v


def _unfused(workload, run):
    """The same workload (inputs, reference, work) computed by `run` from separate ops."""
    return dataclasses.replace(workload, name=f"{workload.name}_unfused", run=run)


def workloads() -> list:
    """GEMM, FFT, bandwidth and fused-vs-unfused composites at GPU sizes."""
    fused = [
        softmax(8192, 4096, F32),
        layer_norm(8192, 4096, F32),
        linear_gelu(4096, 4096, 4096, F32),
        attention(32, 1024, 64, dtypes=F32),
    ]
    runs = (_softmax_unfused, _layer_norm_unfused, _linear_unfused, _attention_unfused)
    return [
        *(gemm(8192, 8192, 8192, dtypes=(d,), peak="gflops")
          for d in ("float32", "bfloat16", "float16")),
        fft("fft", (4096, 1024), ("complex64",)),
        fft("fft2", (1024, 1024), ("complex64",)),
        dataclasses.replace(elementwise("add", 1 << 27, ("float32", "float16")), peak="gbps"),
        elementwise("exp", 1 << 27, F32),
        *fused,
        *(_unfused(w, run) for w, run in zip(fused, runs)),
    ]
