"""2-D incompressible Navier-Stokes in vorticity form on [0, 2 pi)^2, pseudo-spectral.

w_t + u . grad w = nu lap w + f, with u = (psi_y, -psi_x) and lap psi = -w. The state is
the rfft2 of w; the 2/3 rule masks the state and the nonlinear term; viscosity is
integrated exactly by an integrating factor and the rest by classical RK4 (Lawson's
IF-RK4). `if_rk4_step` runs on any library with numpy.fft's rfft2/irfft2 names.

    ns = NavierStokes2D(256, dt=1e-3, nu=1e-3, forcing=kolmogorov_forcing(256))
    w_hat = ns.run(ns.transform(random_vorticity(256)), steps=100)
"""

from __future__ import annotations

import numpy as np

import hal

from . import checks, spectral

COURANT_LIMIT = 2.8  # RK4 is stable on the imaginary axis up to 2 sqrt(2)


def grid(n: int) -> tuple[np.ndarray, np.ndarray]:
    """(x, y) coordinates of the n x n grid, y along axis 0 and x along axis 1."""
    s = 2 * np.pi * np.arange(n) / n
    return s[None, :], s[:, None]


def taylor_green(n: int, nu: float, t: float) -> np.ndarray:
    """The Taylor-Green vorticity 2 sin x sin y exp(-2 nu t): an exact solution."""
    x, y = grid(n)
    return 2 * np.sin(x) * np.sin(y) * np.exp(-2 * nu * t)


def kolmogorov_forcing(n: int, mode: int = 4) -> np.ndarray:
    """Vorticity forcing of the body force (sin(mode y), 0): -mode cos(mode y)."""
    _, y = grid(n)
    return np.broadcast_to(-mode * np.cos(mode * y), (n, n)).copy()


def random_vorticity(n: int, seed: int = 0, peak: float = 4.0) -> np.ndarray:
    """A smooth random vorticity field (Gaussian spectrum around |k| = peak, rms 1)."""
    rng = np.random.default_rng(seed)
    k = np.hypot(*np.meshgrid(np.fft.fftfreq(n, 1 / n), np.fft.fftfreq(n, 1 / n)))
    spectrum = (rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n)))
    w = np.fft.ifft2(spectrum * np.exp(-((k - peak) / 2) ** 2)).real
    return w / np.sqrt(np.mean(w**2))


def if_rk4_step(fft, c: dict, w, dt: float, n: int):
    """One IF-RK4 step of the rfft2 state w; c from `NavierStokes2D` (on any library)."""

    def rhs(v):
        wx, wy = fft.irfft2(c["dx"] * v, (n, n)), fft.irfft2(c["dy"] * v, (n, n))
        u, vv = fft.irfft2(c["pu"] * v, (n, n)), fft.irfft2(c["pv"] * v, (n, n))
        return c["mask"] * fft.rfft2(u * wx + vv * wy) + c["force"]

    k1 = rhs(w)
    e2w = c["E2"] * w
    k2 = rhs(c["E2"] * (w + (dt / 2) * k1))
    k3 = rhs(e2w + (dt / 2) * k2)
    k4 = rhs(c["E"] * w + dt * (c["E2"] * k3))
    return c["E"] * w + (dt / 6) * (c["E"] * k1 + 2 * (c["E2"] * (k2 + k3)) + k4)


class NavierStokes2D:
    """IF-RK4 for one grid, step, viscosity, forcing, dtype and device."""

    def __init__(self, n: int, dt: float, nu: float = 0.0, forcing: np.ndarray | None = None,
                 dtype="float64", device=None, check_every: int = 50):
        self.name = f"navier-stokes N={n}"
        checks.require_even("navier-stokes", n)
        self.n, self.dt, self.nu, self.check_every = n, dt, nu, check_every
        self.dtype, self.device = hal.dtype(dtype), hal.device(device)
        if self.dtype not in (hal.float32, hal.float64):
            raise hal.UnsupportedDType(
                f"{self.name}: dtype {self.dtype.name} is not float32 or float64"
            )
        self.cdtype = np.dtype(hal.complex64 if self.dtype == hal.float32 else hal.complex128)
        ky = spectral.wavenumbers(n, 2 * np.pi)[:, None]
        kx = spectral.wavenumbers(n, 2 * np.pi, real=True)[None, :]
        k2 = kx**2 + ky**2
        inv = np.divide(1.0, k2, out=np.zeros_like(k2), where=k2 > 0)
        mask = spectral.dealias_mask(n)
        force = np.zeros((n, n // 2 + 1)) if forcing is None else np.fft.rfft2(forcing) * mask
        host = {
            "dx": 1j * kx * mask, "dy": 1j * ky * mask, "pu": 1j * ky * inv * mask,
            "pv": -1j * kx * inv * mask, "mask": -1.0 * mask, "force": force,
            "E": np.exp(-nu * k2 * dt), "E2": np.exp(-nu * k2 * dt / 2),
        }
        self.coeffs = {k: self._upload(np.broadcast_to(v, (n, n // 2 + 1)))
                       for k, v in host.items()}
        self.mask = mask
        weight = np.full(n // 2 + 1, 2.0)
        weight[0] = weight[-1] = 1.0
        scale = 0.5 / float(n) ** 4
        self._enstrophy_weight = hal.asarray(
            (weight * scale * mask).astype(self.dtype), device=self.device)
        self._energy_weight = hal.asarray(
            (weight * scale * inv * mask).astype(self.dtype), device=self.device)

    def _upload(self, a: np.ndarray) -> hal.Tensor:
        return hal.asarray(np.ascontiguousarray(a, dtype=self.cdtype), device=self.device)

    def peer_step(self, peer):
        """This solver's IF-RK4 step in a peer library (`peers.load`), compiled by it."""
        c = {k: peer.asarray(v.numpy()) for k, v in self.coeffs.items()}
        return peer.compile(lambda v: if_rk4_step(peer.fft, c, v, self.dt, self.n))

    def transform(self, w: np.ndarray) -> hal.Tensor:
        """The dealiased rfft2 state of a host vorticity field."""
        return self._upload(np.fft.rfft2(w) * self.mask)

    def vorticity(self, w_hat: hal.Tensor) -> hal.Tensor:
        """The vorticity field of a state."""
        return hal.fft.irfft2(w_hat, (self.n, self.n))

    def courant(self, w_hat: hal.Tensor) -> float:
        """dt * k_max * (max|u| + max|v|), k_max the largest kept wavenumber."""
        c, s = self.coeffs, (self.n, self.n)
        u, v = hal.fft.irfft2(c["pu"] * w_hat, s), hal.fft.irfft2(c["pv"] * w_hat, s)
        speed = float(hal.max(hal.abs(u))) + float(hal.max(hal.abs(v)))
        return self.dt * (self.n / 3) * speed

    def energy(self, w_hat: hal.Tensor) -> float:
        """Kinetic energy: the mean of (u^2 + v^2) / 2 over the domain."""
        return float(hal.sum(self._energy_weight * hal.square(hal.abs(w_hat))))

    def enstrophy(self, w_hat: hal.Tensor) -> float:
        """Enstrophy: the mean of w^2 / 2 over the domain."""
        return float(hal.sum(self._enstrophy_weight * hal.square(hal.abs(w_hat))))

    def _check(self, w_hat: hal.Tensor, step: int) -> None:
        checks.check_growth("navier-stokes", f"N={self.n}", self.dtype, self.dt, step,
                            "Courant number", self.courant(w_hat), COURANT_LIMIT)

    def run(self, w_hat: hal.Tensor, steps: int) -> hal.Tensor:
        """The state after `steps` steps; UnstableError (before any step if dt is too big)."""
        self._check(w_hat, 0)
        for i in range(1, steps + 1):
            w_hat = if_rk4_step(hal.fft, self.coeffs, w_hat, self.dt, self.n)
            if i % self.check_every == 0 or i == steps:
                self._check(w_hat, i)
        return w_hat

