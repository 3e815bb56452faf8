"""2-D Navier-Stokes: Taylor-Green decay, inviscid invariants converging at ~4th order, guards."""

from __future__ import annotations

import numpy as np
import pytest

import hal
from frontends.science import UnstableError
from frontends.science import navier_stokes as ns


@pytest.mark.parametrize("dtype,tol", [("float64", 1e-12), ("float32", 1e-5)])
def test_taylor_green_decays_exactly(device, dtype, tol):
    n, nu, dt, steps = 32, 0.05, 0.01, 20
    solver = ns.NavierStokes2D(n, dt, nu, dtype=dtype, device=device)
    w = solver.run(solver.transform(ns.taylor_green(n, nu, 0.0)), steps)
    exact = ns.taylor_green(n, nu, dt * steps)
    err = np.max(np.abs(solver.vorticity(w).numpy() - exact)) / np.max(np.abs(exact))
    print(f"\nTaylor-Green {dtype} on {device.name}: max-norm error {err:.2e}")
    assert solver.vorticity(w).dtype == hal.dtype(dtype)
    assert err <= tol


def _drift(dt: float, w0: np.ndarray, t_end: float = 1.0, checkpoints: int = 4):
    """Largest relative change of energy and enstrophy over the run (inviscid)."""
    solver = ns.NavierStokes2D(w0.shape[0], dt)
    w = solver.transform(w0)
    e0, z0 = solver.energy(w), solver.enstrophy(w)
    de = dz = 0.0
    for _ in range(checkpoints):
        w = solver.run(w, round(t_end / dt / checkpoints))
        de = max(de, abs(solver.energy(w) - e0) / e0)
        dz = max(dz, abs(solver.enstrophy(w) - z0) / z0)
    return de, dz


def test_inviscid_invariants_drift_at_about_fourth_order_in_dt():
    w0 = ns.random_vorticity(32, seed=1)
    dts = np.array([0.05, 0.025, 0.0125])
    drifts = np.array([_drift(dt, w0) for dt in dts])
    orders = [np.polyfit(np.log(dts), np.log(drifts[:, j]), 1)[0] for j in (0, 1)]
    print(f"\ninviscid drift orders: energy {orders[0]:.2f}, enstrophy {orders[1]:.2f}")
    assert drifts.max() < 1e-7
    assert 3.3 <= orders[0] <= 6.5 and 3.3 <= orders[1] <= 6.5


def test_energy_and_enstrophy_match_the_physical_means():
    n = 32
    w = ns.random_vorticity(n, seed=2)
    solver = ns.NavierStokes2D(n, 0.01)
    state = solver.transform(w)
    kept = solver.vorticity(state).numpy()
    assert solver.enstrophy(state) == pytest.approx(0.5 * np.mean(kept**2), rel=1e-12)
    ky = np.fft.fftfreq(n, 1 / n)[:, None]
    kx = np.fft.fftfreq(n, 1 / n)[None, :]
    psi = np.fft.fft2(kept) / np.where(kx**2 + ky**2 > 0, kx**2 + ky**2, np.inf)
    u, v = np.fft.ifft2(1j * ky * psi).real, np.fft.ifft2(-1j * kx * psi).real
    assert solver.energy(state) == pytest.approx(0.5 * np.mean(u**2 + v**2), rel=1e-12)


def test_kolmogorov_flow_runs_in_float32_and_float64_alike():
    n, steps = 64, 10
    w0 = ns.random_vorticity(n, seed=3)
    out = {}
    for dtype in ("float64", "float32"):
        solver = ns.NavierStokes2D(n, 1e-3, 1e-3, ns.kolmogorov_forcing(n), dtype=dtype)
        out[dtype] = solver.vorticity(solver.run(solver.transform(w0), steps)).numpy()
    diff = np.max(np.abs(out["float32"] - out["float64"])) / np.max(np.abs(out["float64"]))
    print(f"\nKolmogorov 64^2 float32 vs float64 after {steps} steps: {diff:.2e}")
    assert 0 < diff <= 1e-5


def test_unstable_time_step_is_refused_before_any_step():
    solver = ns.NavierStokes2D(32, 5.0)
    with pytest.raises(UnstableError, match="Courant number") as info:
        solver.run(solver.transform(ns.random_vorticity(32)), 10)
    assert "step 0" in str(info.value) and "reduce dt" in str(info.value)


@pytest.mark.parametrize("n", [33, 3])
def test_odd_grid_is_refused(n):
    with pytest.raises(hal.ShapeError, match="navier-stokes: grid size N"):
        ns.NavierStokes2D(n, 0.01)
