"""The cpu backend's float32 erf and exact GELU (backends/cpu_erf.py) against float64 erf."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import erf as erf64

import hal
from backends import cpu_erf

GRID = np.linspace(-7, 7, 400_001, dtype=np.float32)


def _ulps(got: np.ndarray, exact: np.ndarray) -> np.ndarray:
    return np.abs(got.astype(np.float64) - exact) / np.spacing(np.abs(exact).astype(np.float32))


def test_erf_is_within_2_ulp_and_1e_7_of_erf_on_a_dense_grid():
    exact = erf64(GRID.astype(np.float64))
    got = cpu_erf.erf(GRID)
    assert got.dtype == np.float32
    assert np.abs(got - exact).max() < 1e-7
    assert _ulps(got, exact).max() < 2


def test_erf_special_values():
    x = np.float32([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30, -1e-30, 4.0, -4.0, 10.0])
    got = cpu_erf.erf(x)
    assert np.isnan(got[0])
    np.testing.assert_array_equal(got[1:3], [1, -1])
    assert got[3] == 0 and not np.signbit(got[3]) and np.signbit(got[4])
    np.testing.assert_allclose(got[5:7], [2 / math.sqrt(math.pi) * 1e-30, -2 / math.sqrt(math.pi)
                                         * 1e-30], rtol=1e-6)
    np.testing.assert_array_equal(got[7:], [1, -1, 1])


def test_gelu_matches_the_exact_formula():
    exact = GRID * 0.5 * (1 + erf64(GRID.astype(np.float64) / math.sqrt(2)))
    got = cpu_erf.gelu(GRID)
    np.testing.assert_allclose(got, exact, rtol=2e-7, atol=2e-7)  # float32 rounding of x


def test_erf_and_gelu_in_place_and_0_d():
    x = np.linspace(-3, 3, 101, dtype=np.float32)
    expected = cpu_erf.erf(x)
    y = x.copy()
    assert cpu_erf.erf(y, out=y) is y
    np.testing.assert_array_equal(y, expected)
    zero_d = cpu_erf.gelu(np.array(1.5, np.float32))
    assert isinstance(zero_d, np.ndarray) and zero_d.shape == ()
    np.testing.assert_allclose(zero_d, 1.5 * 0.5 * (1 + erf64(1.5 / math.sqrt(2))), rtol=2e-7)


def test_erf_and_gelu_write_into_out_of_any_layout():
    x = np.random.default_rng(0).standard_normal((64, 48)).astype(np.float32)[:, ::3]
    out = np.empty((48, 64), np.float32).T[:, ::3]
    assert cpu_erf.gelu(x, out=out) is out
    np.testing.assert_allclose(out, x * 0.5 * (1 + erf64(x / math.sqrt(2))), rtol=2e-6,
                               atol=5e-7)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_hal_erf_gelu_and_linear_gelu_on_cpu_match_the_reference(dtype):
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((33, 17)) * 3).astype(dtype)
    w, b = rng.standard_normal((17, 9)).astype(dtype), rng.standard_normal(9).astype(dtype)
    cpu = hal.device("cpu")
    tol = {"rtol": 2e-6, "atol": 1e-6} if dtype == "float32" else {"rtol": 1e-14, "atol": 0}
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(hal.erf(hal.asarray(x, device=cpu)).numpy(), erf64(x64), **tol)
    gelu = x64 * 0.5 * (1 + erf64(x64 / math.sqrt(2)))
    np.testing.assert_allclose(hal.nn.gelu(hal.asarray(x, device=cpu)).numpy(), gelu, **tol)
    y = x64 @ w + b
    np.testing.assert_allclose(
        hal.nn.linear(*(hal.asarray(a, device=cpu) for a in (x, w, b)),
                      activation="gelu").numpy(),
        y * 0.5 * (1 + erf64(y / math.sqrt(2))), rtol=1e-5 if dtype == "float32" else 1e-12,
        atol=1e-5 if dtype == "float32" else 0)
