"""Op suite: elementwise bandwidth, reductions, DeepBench GEMM, FFT and nn composites.

GEMM shapes follow DeepBench's training kernels (M = K in {1760, 2048, 2560} x N in
{16, 32, 64, 128}) plus square 512 and 1024. FFT work is counted as 5 N log2 N FLOPs per
complex transform (the FFTW convention). Bytes are the minimum traffic: every input read
once and the output written once.
"""

from __future__ import annotations

import math

import numpy as np

import hal
from benchmarks.workload import Case, Workload, random_array

REALS = ("float32", "float64")
COMPLEX = ("complex64", "complex128")


def _spec_reference(op: str):
    """The op set's own numpy reference for `op` (hal.ops declares it once)."""
    return hal.ops.spec(op).evaluate


def elementwise(op: str, n: int, dtypes=REALS) -> Workload:
    """A unary or binary elementwise op over `n` elements: a bandwidth measurement."""
    arity = {"add": 2, "multiply": 2, "exp": 1, "sqrt": 1}[op]

    def build(dtype: np.dtype) -> Case:
        inputs = [random_array((n,), dtype, seed) for seed in range(arity)]
        if op == "sqrt":
            inputs = [np.abs(a) for a in inputs]
        return Case(inputs, bytes=(arity + 1) * n * dtype.itemsize, items=n)

    return Workload(op, {"n": n}, dtypes, build, getattr(hal, op), getattr(np, op))


def reduction(op: str, shape: tuple[int, ...], axis: int | None, dtypes=REALS) -> Workload:
    """A sum or max over `axis` (None: every element)."""
    n = math.prod(shape)

    def build(dtype: np.dtype) -> Case:
        return Case([random_array(shape, dtype, 0)], flops=n, bytes=n * dtype.itemsize, items=n)

    params = {"shape": "x".join(map(str, shape)), "axis": axis}
    return Workload(
        op,
        params,
        dtypes,
        build,
        getattr(hal, op),
        getattr(np, op),
        options={"axis": axis},
        tolerance_scale=10.0,
    )


def gemm(m: int, n: int, k: int, dtypes=REALS, peak: str | None = None) -> Workload:
    """C = A @ B with A (M, K) and B (K, N): 2 M N K FLOPs."""

    def build(dtype: np.dtype) -> Case:
        a, b = random_array((m, k), dtype, 0), random_array((k, n), dtype, 1)
        return Case([a, b], flops=2.0 * m * n * k, bytes=(m * k + k * n + m * n) * dtype.itemsize)

    return Workload(
        "gemm", {"M": m, "N": n, "K": k}, dtypes, build, hal.matmul, np.matmul, peak=peak
    )


def fft(kind: str, shape: tuple[int, ...], dtypes=COMPLEX) -> Workload:
    """A complex FFT: `fft` over the last axis (batched over the first) or `fft2`."""
    points = shape[-1] if kind == "fft" else shape[-2] * shape[-1]
    transforms = math.prod(shape) // points

    def build(dtype: np.dtype) -> Case:
        x = random_array(shape, dtype, 0)
        flops = 5.0 * points * math.log2(points) * transforms
        return Case([x], flops=flops, bytes=2 * x.nbytes, items=transforms)

    run = hal.fft.fft if kind == "fft" else hal.fft.fft2
    ref = np.fft.fft if kind == "fft" else np.fft.fft2
    return Workload(
        kind, {"shape": "x".join(map(str, shape))}, dtypes, build, run, ref, tolerance_scale=10.0
    )


def softmax(rows: int, cols: int, dtypes=REALS) -> Workload:
    """Softmax over the last axis of a (rows, cols) matrix."""

    def build(dtype: np.dtype) -> Case:
        x = random_array((rows, cols), dtype, 0)
        return Case([x], bytes=2 * x.nbytes, items=rows)

    return Workload(
        "softmax",
        {"rows": rows, "cols": cols},
        dtypes,
        build,
        hal.nn.softmax,
        _spec_reference("softmax"),
        options={"axis": -1},
    )


def layer_norm(rows: int, cols: int, dtypes=REALS) -> Workload:
    """Layer norm over the last axis with weight and bias."""

    def build(dtype: np.dtype) -> Case:
        x = random_array((rows, cols), dtype, 0)
        w, b = random_array((cols,), dtype, 1), random_array((cols,), dtype, 2)
        return Case([x, w, b], bytes=2 * x.nbytes + w.nbytes + b.nbytes, items=rows)

    return Workload(
        "layer_norm",
        {"rows": rows, "cols": cols},
        dtypes,
        build,
        hal.nn.layer_norm,
        _spec_reference("layer_norm"),
        options={"eps": 1e-5},
    )


def linear_gelu(m: int, k: int, n: int, dtypes=REALS) -> Workload:
    """gelu(x @ w + b) with x (M, K), w (K, N): 2 M N K FLOPs for the matmul."""

    def build(dtype: np.dtype) -> Case:
        x, w = random_array((m, k), dtype, 0), random_array((k, n), dtype, 1)
        b = random_array((n,), dtype, 2)
        nbytes = (m * k + k * n + n + m * n) * dtype.itemsize
        return Case([x, w, b], flops=2.0 * m * n * k, bytes=nbytes, items=m)

    return Workload(
        "linear_gelu",
        {"M": m, "K": k, "N": n},
        dtypes,
        build,
        hal.nn.linear,
        _spec_reference("linear"),
        options={"activation": "gelu"},
        tolerance_scale=10.0,
    )


def attention(batch: int, length: int, dim: int, causal: bool = False, dtypes=REALS) -> Workload:
    """Scaled dot-product attention over (batch, L, E): 4 B L^2 E FLOPs for the two matmuls."""

    def build(dtype: np.dtype) -> Case:
        q, k, v = (random_array((batch, length, dim), dtype, s) for s in range(3))
        return Case(
            [q, k, v], flops=4.0 * batch * length * length * dim, bytes=4 * q.nbytes, items=batch
        )

    params = {"batch": batch, "L": length, "E": dim, "causal": causal}
    return Workload(
        "attention",
        params,
        dtypes,
        build,
        hal.nn.scaled_dot_product_attention,
        _spec_reference("scaled_dot_product_attention"),
        options={"causal": causal},
        tolerance_scale=10.0,
    )


def workloads() -> list[Workload]:
    """The full op suite."""
    return [
        elementwise("add", 1 << 24),
        elementwise("multiply", 1 << 24),
        elementwise("exp", 1 << 22),
        reduction("sum", (1 << 24,), None),
        reduction("sum", (4096, 4096), -1),
        reduction("max", (4096, 4096), -1),
        *(gemm(mk, n, mk) for mk in (1760, 2048, 2560) for n in (16, 32, 64, 128)),
        gemm(512, 512, 512),
        gemm(1024, 1024, 1024),
        fft("fft", (1024,)),
        fft("fft", (4096, 1024)),
        fft("fft2", (1024, 1024)),
        softmax(4096, 1024),
        layer_norm(4096, 1024),
        linear_gelu(512, 1024, 4096),
        attention(16, 512, 64),
        attention(16, 512, 64, causal=True),
    ]
