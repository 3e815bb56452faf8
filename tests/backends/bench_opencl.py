"""Figures for the OpenCL backend beside numpy/scipy (pytest-benchmark; not collected by
default, the harness absorbs them later):

    pytest tests/backends/bench_opencl.py --benchmark-enable --benchmark-group-by=group

GEMM f32 1024^3; FFT batch 4096 x 1024 complex64/complex128 (own kernels and pyvkfft);
prime length 1009; the fused a*b + c in GB/s; a kernel's first call (program build) vs
a cached call. Every device call synchronises inside the timed region.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.fft

import hal
from backends.opencl import elementwise, gemm, vkfft

RNG = np.random.default_rng(0)
_fresh = itertools.count()


@pytest.fixture(scope="module")
def dev():
    """opencl:0 (PoCL here)."""
    if not hal.backend("opencl").is_available():
        pytest.skip("no OpenCL device")
    return hal.device("opencl:0")


def _synced(dev, fn, *args, **kwargs):
    def call():
        out = fn(*args, **kwargs)
        dev.synchronize()
        return out

    return call


def _per_item(benchmark, items: int, unit: str):
    benchmark.extra_info[unit] = benchmark.stats.stats.median / items * 1e6


# -- GEMM --------------------------------------------------------------------------------
GEMM_N = 1024


@pytest.mark.benchmark(group="gemm f32 1024^3")
@pytest.mark.parametrize("impl", ["opencl", "numpy"])
def test_gemm(benchmark, dev, impl):
    a = RNG.standard_normal((GEMM_N, GEMM_N)).astype(np.float32)
    if impl == "numpy":
        benchmark(np.matmul, a, a)
    else:
        t = hal.asarray(a, device=dev)
        benchmark(_synced(dev, hal.matmul, t, t))
    benchmark.extra_info["gflops"] = 2 * GEMM_N**3 / benchmark.stats.stats.median / 1e9


# -- FFT -----------------------------------------------------------------------------------
def _fft_case(benchmark, dev, impl, shape, cd):
    x = (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(cd)
    if impl == "numpy":
        benchmark(np.fft.fft, x)
    elif impl == "scipy":
        benchmark(scipy.fft.fft, x, workers=2)
    else:
        if impl == "vkfft" and not vkfft.available():
            pytest.skip("pyvkfft is not installed (the vkfft extra)")
        t = hal.asarray(x, device=dev)
        before, dev.use_vkfft = dev.use_vkfft, impl == "vkfft"
        try:
            benchmark(_synced(dev, hal.fft.fft, t))
        finally:
            dev.use_vkfft = before
    _per_item(benchmark, shape[0], "us_per_transform")


IMPLS = ["opencl", "vkfft", "numpy", "scipy"]


@pytest.mark.benchmark(group="fft c64 4096x1024")
@pytest.mark.parametrize("impl", IMPLS)
def test_fft_c64(benchmark, dev, impl):
    _fft_case(benchmark, dev, impl, (4096, 1024), np.complex64)


@pytest.mark.benchmark(group="fft c128 4096x1024")
@pytest.mark.parametrize("impl", IMPLS)
def test_fft_c128(benchmark, dev, impl):
    _fft_case(benchmark, dev, impl, (4096, 1024), np.complex128)


@pytest.mark.benchmark(group="fft c64 prime 512x1009")
@pytest.mark.parametrize("impl", IMPLS)
def test_fft_prime(benchmark, dev, impl):
    _fft_case(benchmark, dev, impl, (512, 1009), np.complex64)


# -- fused elementwise ------------------------------------------------------------------------
FUSED_N = 1 << 23


@pytest.mark.benchmark(group="a*b+c f32 8M")
@pytest.mark.parametrize("impl", ["opencl fused", "opencl two ops", "numpy"])
def test_fused_multiply_add(benchmark, dev, impl):
    a, b, c = (RNG.standard_normal(FUSED_N).astype(np.float32) for _ in range(3))
    if impl == "numpy":
        benchmark(lambda: a * b + c)
    else:
        ta, tb, tc = (hal.asarray(h, device=dev) for h in (a, b, c))
        if impl == "opencl fused":
            benchmark(_synced(dev, elementwise.fused, dev, "a0 * a1 + a2", ta.native, tb.native,
                              tc.native))
        else:
            benchmark(_synced(dev, lambda: ta * tb + tc))
    benchmark.extra_info["gbps"] = 4 * 4 * FUSED_N / benchmark.stats.stats.median / 1e9


# -- build time ------------------------------------------------------------------------------
def _gemm_source() -> str:
    """The f32 GEMM kernel's source, made new (a unique comment) so no cache can hold it."""
    variant = gemm.Variant(*[np.dtype(np.float32)] * 3, gemm.Epilogue(), False)
    return gemm.vector_source(variant) + f"/* {next(_fresh)} {RNG.integers(1 << 62)} */\n"


def _launch_gemm(dev, kernel, a):
    table = dev.upload(np.zeros(1, np.int64))
    args = [a.base_data, np.int64(0), a.base_data, np.int64(0), dev.empty((64, 64), np.float32)
            .base_data, table.base_data, table.base_data, *map(np.int32, (64, 64, 64)),
            *map(np.int64, (64, 1)), np.int32(0), np.int32(0)]
    dev.run(kernel, (8, 8, 1), None, *args)
    dev.synchronize()


@pytest.mark.benchmark(group="matmul kernel: first call (build) vs cached")
def test_first_call_builds(benchmark, dev):
    a = hal.ones((64, 64), dtype="float32", device=dev).native
    benchmark.pedantic(lambda: _launch_gemm(dev, dev.build("bench", _gemm_source(), "gemm"), a),
                       rounds=5, iterations=1)


@pytest.mark.benchmark(group="matmul kernel: first call (build) vs cached")
def test_cached_call(benchmark, dev):
    a = hal.ones((64, 64), dtype="float32", device=dev).native
    source = _gemm_source()
    benchmark(lambda: _launch_gemm(dev, dev.build("bench", source, "gemm"), a))
