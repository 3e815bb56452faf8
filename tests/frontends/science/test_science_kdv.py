"""KdV: exact 2-soliton (stable), ETDRK4 contour coefficients, short runs, autodiff residual."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

import hal
from frontends.science import UnstableError, kdv, spectral


def test_contour_coefficients_match_closed_forms_away_from_zero():
    z = np.array([1j, 5j, -3j, -2.0, 0.5 + 2j])  # dt * L, imaginary as for KdV
    c = spectral.etdrk4_coefficients(z, 1.0)
    e = np.exp(z)
    assert np.allclose(c["Q"], (np.exp(z / 2) - 1) / z, rtol=1e-12)
    assert np.allclose(c["f1"], (-4 - z + e * (4 - 3 * z + z**2)) / z**3, rtol=1e-12)
    assert np.allclose(c["f2"], (2 + z + e * (-2 + z)) / z**3, rtol=1e-12)
    assert np.allclose(c["f3"], (-4 - 3 * z - z**2 + e * (4 - z)) / z**3, rtol=1e-12)


def test_contour_coefficients_have_the_right_limit_at_zero():
    c = spectral.etdrk4_coefficients(np.array([0.0, 1e-9j]), 1.0)
    assert np.allclose(c["Q"], 0.5, atol=1e-9)
    for key in ("f1", "f2", "f3"):
        assert np.allclose(c[key], 1 / 6, atol=1e-9)


def test_half_circle_real_part_is_wrong_for_an_imaginary_operator():
    z = np.array([4j])
    full = spectral.etdrk4_coefficients(z, 1.0)["f1"]
    roots = np.exp(1j * np.pi * (np.arange(1, 33) - 0.5) / 32)  # upper half only
    lr = z[:, None] + roots
    half = np.real(np.mean((-4 - lr + np.exp(lr) * (4 - 3 * lr + lr**2)) / lr**3, axis=-1))
    assert abs(half[0] - full[0]) > 1e-2 * abs(full[0])


def test_exact_solution_is_stable_where_the_naive_formula_overflows():
    s = kdv.KASSAM_TREFETHEN.soliton
    x = np.linspace(-50.0, 50.0, 101)
    for t in (0.0, 5.0, -5.0):  # exponents up to k^3 |t| ~ 8e4
        u = s(np, x, t)
        assert np.all(np.isfinite(u)) and np.all(u >= 0)
    with np.errstate(all="ignore"):  # 2 (F F'' - F'^2) / F^2 with the exponentials as they are
        e1, e2 = (np.exp(k * (x - x0)) for k, x0 in ((s.k1, s.x1), (s.k2, s.x2)))
        a = ((s.k1 - s.k2) / (s.k1 + s.k2)) ** 2
        f = 1 + e1 + e2 + a * e1 * e2
        f1 = s.k1 * e1 + s.k2 * e2 + a * (s.k1 + s.k2) * e1 * e2
        f2 = s.k1**2 * e1 + s.k2**2 * e2 + a * (s.k1 + s.k2) ** 2 * e1 * e2
        naive = 2 * (f * f2 - f1 * f1) / (f * f)
    assert not np.all(np.isfinite(naive))


def test_exact_solution_matches_the_naive_formula_where_it_is_safe():
    s = kdv.TwoSoliton(3.0, 2.0, -1.0, 1.0)
    x, t, h = np.linspace(-4, 4, 81), 0.1, 1e-3
    a12 = ((s.k1 - s.k2) / (s.k1 + s.k2)) ** 2

    def log_f(y):
        e1 = np.exp(s.k1 * (y - s.x1) - s.k1**3 * t)
        e2 = np.exp(s.k2 * (y - s.x2) - s.k2**3 * t)
        return np.log(1 + e1 + e2 + a12 * e1 * e2)

    naive = 2 * (log_f(x + h) - 2 * log_f(x) + log_f(x - h)) / h**2
    assert np.allclose(s(np, x, t), naive, atol=1e-5 * np.max(naive))


def test_kassam_trefethen_short_horizon_float64_and_float32(device):
    problem = kdv.KASSAM_TREFETHEN.with_horizon(0.0003 if device.backend.name == "cpu"
                                                else 100 * kdv.KASSAM_TREFETHEN.dt)
    exact = problem.exact(problem.t_end)
    errors = {}
    for dtype in ("float64", "float32"):
        u = kdv.KdVSolver(problem, dtype, device).run()
        assert u.dtype == hal.dtype(dtype)
        errors[dtype] = kdv.relative_error(u, exact)
    print(f"\nKdV KT to T={problem.t_end:g} on {device.name}: max-norm error {errors}")
    assert errors["float64"] <= 1e-6
    assert errors["float32"] <= 1e-3


def test_soft_collision_and_large_n_short_runs():
    soft = kdv.SOFT_COLLISION.with_horizon(0.01)
    _, err = kdv.solve(soft)
    assert err <= 1e-8
    big = kdv.large_n(4096, steps=20)
    _, err = kdv.solve(big)
    assert err <= 1e-8


def test_residual_of_the_exact_solution_by_autodiff_is_near_zero():
    s = kdv.KASSAM_TREFETHEN.soliton
    x = hal.asarray(np.linspace(-math.pi, math.pi, 256, endpoint=False))
    r, scale = kdv.residual(s, x, 0.003)
    assert scale > 1e6  # u_xxx is large: the residual is relative to it
    assert float(hal.max(hal.abs(r))) / scale <= 1e-12


@pytest.mark.parametrize("n", [255, 2, 0])
def test_odd_or_tiny_grid_is_refused(n):
    with pytest.raises(hal.ShapeError, match="even integer"):
        kdv.KdVSolver(replace(kdv.KASSAM_TREFETHEN, n=n))


@pytest.mark.filterwarnings("ignore:.*encountered:RuntimeWarning")  # the blow-up it detects
def test_unstable_time_step_is_reported_not_returned_as_nan():
    problem = replace(kdv.KASSAM_TREFETHEN, t_end=0.002, dt_max=2e-4)
    with pytest.raises(UnstableError, match="reduce dt") as info:
        kdv.KdVSolver(problem, check_every=5).run()
    assert isinstance(info.value, hal.HalError)
    assert "N=256" in str(info.value) and "float64" in str(info.value)


def test_integer_dtype_is_refused():
    with pytest.raises(hal.UnsupportedDType, match="float32 or float64"):
        kdv.KdVSolver(kdv.KASSAM_TREFETHEN, "int32")
