"""Multigrid V-cycles: grid-independent convergence factors, accuracy, float32, bad sizes."""

from __future__ import annotations

import numpy as np
import pytest

import hal
from frontends.science import distributed, multigrid


@pytest.mark.parametrize("pre,post,bound", [(1, 1, 0.12), (2, 2, 0.06)])
def test_convergence_factor_is_small_and_grid_independent(pre, post, bound):
    factors = [multigrid.convergence_factor(multigrid.Level.serial(n), 8, pre, post)[0]
               for n in (16, 32, 64, 128)]
    print(f"\nV({pre},{post}) factors for N=16..128: {np.round(factors, 4)}")
    assert max(factors) <= bound
    assert max(factors) - min(factors) <= 0.02


def test_factor_on_every_backend(device):
    factor, _ = multigrid.convergence_factor(multigrid.Level.serial(32, device=device), 6)
    assert factor <= 0.12


def test_v_cycles_solve_poisson_to_discretisation_error():
    errors = []
    for n in (32, 64):
        level = multigrid.Level.serial(n)
        f = distributed.poisson_rhs(level)
        u = hal.zeros_like(f)
        for _ in range(10):
            u = multigrid.v_cycle(level, u, f)
        y = (np.arange(n) / n)[:, None]
        x = (np.arange(1, n) / n)[None, :]
        errors.append(np.max(np.abs(u.numpy() - np.sin(np.pi * x) * np.sin(np.pi * y))))
    assert errors[1] < 1e-3 and 3.5 < errors[0] / errors[1] < 4.5  # second order


def test_float32_factor_reported_beside_float64():
    f64, _ = multigrid.convergence_factor(multigrid.Level.serial(64), 4)
    f32, u = multigrid.convergence_factor(multigrid.Level.serial(64, "float32"), 4)
    print(f"\nV(1,1) factor N=64 over 4 cycles: float64 {f64:.4f}, float32 {f32:.4f}")
    assert u.dtype == hal.float32 and f32 <= 0.12 and abs(f32 - f64) < 0.02


@pytest.mark.parametrize("n", [48, 1, 100])
def test_size_that_does_not_halve_is_refused(n):
    with pytest.raises(hal.ShapeError, match="power of two"):
        multigrid.Level.serial(n)
