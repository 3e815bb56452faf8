"""Fourier grids and ETDRK4 coefficients: the host-side setup the spectral solvers share.

Coefficients are computed once on the host in complex128 with numpy and uploaded; the
time stepping itself runs in hal ops on the device.
"""

from __future__ import annotations

import numpy as np


def wavenumbers(n: int, length: float, real: bool = False) -> np.ndarray:
    """Angular wavenumbers of an n-point grid on a period `length` (rfft layout if real)."""
    scale = 2 * np.pi / length
    return (np.fft.rfftfreq(n, 1 / n) if real else np.fft.fftfreq(n, 1 / n)) * scale


def odd_derivative_wavenumbers(n: int, length: float) -> np.ndarray:
    """rfft wavenumbers with the Nyquist mode zeroed (odd derivatives of real data)."""
    k = wavenumbers(n, length, real=True)
    k[-1] = 0.0
    return k


def etdrk4_coefficients(lin: np.ndarray, dt: float, points: int = 64) -> dict[str, np.ndarray]:
    """ETDRK4 coefficients for the diagonal linear operator `lin` (Cox-Matthews, complex).

    The phi functions are evaluated by Kassam and Trefethen's contour mean over `points`
    points on the full unit circle around each dt * lin, which stays accurate where the
    closed forms cancel catastrophically and, on the full circle, for imaginary operators
    such as KdV's i k^3 (the half-circle real-part shortcut needs real lin).
    Returns E = exp(dt L), E2 = exp(dt L / 2), Q, f1, f2, f3 as in their paper.
    """
    lin = np.asarray(lin, dtype=np.complex128)
    roots = np.exp(2j * np.pi * (np.arange(1, points + 1) - 0.5) / points)
    lr = dt * lin[..., None] + roots
    e = np.exp(lr)
    phi = {
        "Q": (np.exp(lr / 2) - 1) / lr,
        "f1": (-4 - lr + e * (4 - 3 * lr + lr**2)) / lr**3,
        "f2": (2 + lr + e * (-2 + lr)) / lr**3,
        "f3": (-4 - 3 * lr - lr**2 + e * (4 - lr)) / lr**3,
    }
    return {"E": np.exp(dt * lin), "E2": np.exp(dt * lin / 2),
            **{key: dt * np.mean(val, axis=-1) for key, val in phi.items()}}


def dealias_mask(n: int) -> np.ndarray:
    """Orszag's 2/3 rule on an n x n rfft2 grid: True where |kx|, |ky| < n/3."""
    ky = np.abs(np.fft.fftfreq(n, 1 / n))[:, None]
    kx = np.abs(np.fft.rfftfreq(n, 1 / n))[None, :]
    return (ky < n / 3) & (kx < n / 3)
