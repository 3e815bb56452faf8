"""FFT workloads against numpy in complex128: 1024-point single and batched, 2-D 1024^2."""

from __future__ import annotations

import numpy as np
import pytest

import hal

TOL = {"complex64": 1e-6, "complex128": 1e-13}


def _rel_l2(actual, expected) -> float:
    return float(np.linalg.norm(actual - expected) / np.linalg.norm(expected))


def _data(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("kind,shape", [("fft", (1024,)), ("fft", (4096, 1024)),
                                        ("fft2", (1024, 1024))])
def test_fft_matches_numpy_in_complex128(device, kind, shape, dtype):
    if device.backend.name != "cpu" and len(shape) > 1:
        pytest.skip("the 4096 x 1024 and 1024^2 cases run on cpu only (test time)")
    x = _data(shape, dtype)
    out = getattr(hal.fft, kind)(hal.asarray(x, device=device)).numpy()
    ref = getattr(np.fft, kind)(x.astype(np.complex128))
    assert out.dtype == np.dtype(dtype)
    assert _rel_l2(out, ref) <= TOL[dtype]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_real_transform_pair_round_trips(device, dtype):
    x = np.random.default_rng(1).standard_normal((64, 64)).astype(dtype)
    back = hal.fft.irfft2(hal.fft.rfft2(hal.asarray(x, device=device)), (64, 64)).numpy()
    assert _rel_l2(back, x) <= (1e-6 if dtype == "float32" else 1e-14)
