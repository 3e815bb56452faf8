"""KdV u_t + 6 u u_x + u_xxx = 0: Fourier pseudo-spectral ETDRK4 against the exact 2-soliton.

The state is the rfft of u; the linear part i k^3 is integrated exactly, the nonlinear
term -3 i k F(u^2) by Cox-Matthews ETDRK4 with Kassam-Trefethen contour coefficients.
`etdrk4_step` is written on any array library with numpy.fft's rfft/irfft names, so the
peers in `peers.py` run the identical algorithm.

    problem = KASSAM_TREFETHEN                       # N=256, 39,322 steps to T=0.006
    u, err = solve(problem, dtype="float64", device="cpu")
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

import hal

from . import checks, spectral


@dataclass(frozen=True)
class TwoSoliton:
    """Hirota's exact 2-soliton u = 2 (log F)_xx, F = 1 + e1 + e2 + A12 e1 e2.

    e_i = exp(k_i (x - x_i) - k_i^3 t): soliton i has amplitude k_i^2 / 2, speed k_i^2,
    and starts centred at x_i.
    """

    k1: float
    k2: float
    x1: float
    x2: float

    def __call__(self, xp, x, t):
        """u(x, t) with the array library `xp` (numpy or hal), evaluated stably.

        With theta_j the four exponents of F and slopes s_j = (0, k1, k2, k1 + k2),
        u = 2 sum_{i<j} w_i w_j (s_i - s_j)^2 / (sum w)^2, w_j = exp(theta_j - max theta):
        every term is positive and no exponential overflows, for any x and t.
        """
        k1, k2 = self.k1, self.k2
        e1 = k1 * (x - self.x1) - k1**3 * t
        e2 = k2 * (x - self.x2) - k2**3 * t
        e12 = e1 + e2 + 2 * math.log(abs(k1 - k2) / (k1 + k2))
        top = xp.maximum(xp.maximum(e1, e2), xp.maximum(e12, 0.0))
        w0, w1, w2, w3 = xp.exp(-top), xp.exp(e1 - top), xp.exp(e2 - top), xp.exp(e12 - top)
        total = w0 + w1 + w2 + w3
        pairs = (w0 * w1 * k1**2 + w0 * w2 * k2**2 + w0 * w3 * (k1 + k2) ** 2
                 + w1 * w2 * (k1 - k2) ** 2 + w1 * w3 * k2**2 + w2 * w3 * k1**2)
        return 2 * pairs / (total * total)


@dataclass(frozen=True)
class KdVProblem:
    """A KdV run: the exact solution, a periodic grid, the horizon and the largest dt."""

    name: str
    soliton: TwoSoliton
    n: int
    t_end: float
    dt_max: float
    length: float = 2 * math.pi

    @property
    def steps(self) -> int:
        """Number of equal steps no longer than dt_max that reach t_end."""
        return math.ceil(self.t_end / self.dt_max * (1 - 1e-12))

    @property
    def dt(self) -> float:
        """The step actually taken: t_end / steps."""
        return self.t_end / self.steps

    def grid(self) -> np.ndarray:
        """The n points of [-length/2, length/2)."""
        return -self.length / 2 + self.length * np.arange(self.n) / self.n

    def exact(self, t: float) -> np.ndarray:
        """The exact solution on the grid at time t (float64, host)."""
        return self.soliton(np, self.grid(), t)

    def with_horizon(self, t_end: float, name: str | None = None) -> KdVProblem:
        """The same problem run to another time."""
        return replace(self, t_end=t_end, name=name or f"{self.name}-T{t_end:g}")


KASSAM_TREFETHEN = KdVProblem(
    "kassam-trefethen", TwoSoliton(25.0, 16.0, -2.0, -1.0), 256, 0.006, 0.01 / 256**2
)
SOFT_COLLISION = KdVProblem(
    "soft-collision", TwoSoliton(6.0, 5.0, -6.0, -3.0), 512, 0.5, 5e-5, length=40.0
)


def large_n(n: int = 4096, steps: int = 200) -> KdVProblem:
    """The Kassam-Trefethen solitons on N >= 4096 points for a fixed number of steps."""
    dt = 0.01 / 256**2
    return replace(KASSAM_TREFETHEN, name=f"large-n{n}", n=n, t_end=steps * dt, dt_max=dt)


def etdrk4_step(fft, c: dict, v, n: int):
    """One ETDRK4 step of the rfft state v; c holds E, E2 and the g-scaled Q, f1, 2 f2, f3."""

    def nonlinear(w):
        u = fft.irfft(w, n)
        return fft.rfft(u * u)

    nv = nonlinear(v)
    e2v = c["E2"] * v
    a = e2v + c["Qg"] * nv
    na = nonlinear(a)
    b = e2v + c["Qg"] * na
    nb = nonlinear(b)
    cc = c["E2"] * a + c["Qg"] * (2 * nb - nv)
    nc = nonlinear(cc)
    return c["E"] * v + c["f1g"] * nv + c["f2g"] * (na + nb) + c["f3g"] * nc


def coefficients(problem: KdVProblem) -> dict[str, np.ndarray]:
    """ETDRK4 coefficients for the problem's grid and step, folded with g = -3 i k (host)."""
    checks.require_even(f"kdv {problem.name}", problem.n)
    k = spectral.odd_derivative_wavenumbers(problem.n, problem.length)
    c = spectral.etdrk4_coefficients(1j * k**3, problem.dt)
    g = -3j * k
    return {"E": c["E"], "E2": c["E2"], "Qg": c["Q"] * g, "f1g": c["f1"] * g,
            "f2g": 2 * c["f2"] * g, "f3g": c["f3"] * g}


class KdVSolver:
    """ETDRK4 for one problem, dtype and device; `run()` integrates from the exact u(0)."""

    def __init__(self, problem: KdVProblem, dtype="float64", device=None,
                 check_every: int = 200):
        self.problem, self.dtype = problem, hal.dtype(dtype)
        if self.dtype not in (hal.float32, hal.float64):
            raise hal.UnsupportedDType(
                f"kdv {problem.name} N={problem.n}: dtype {self.dtype.name} is not float32 or "
                "float64"
            )
        self.device = hal.device(device)
        cdtype = hal.complex64 if self.dtype == hal.float32 else hal.complex128
        self.coeffs = {key: hal.asarray(val.astype(cdtype), device=self.device)
                       for key, val in coefficients(problem).items()}
        self.check_every = check_every

    def run(self, steps: int | None = None, u0: hal.Tensor | None = None) -> hal.Tensor:
        """u after `steps` steps (all by default) from u0 (default: the exact u(0)).

        Raises UnstableError when the solution blows up.
        """
        p = self.problem
        steps = p.steps if steps is None else steps
        if u0 is None:
            u0 = hal.asarray(p.exact(0.0).astype(self.dtype), device=self.device)
        v = hal.fft.rfft(u0)
        limit = 100 * float(hal.max(hal.abs(v)))
        for i in range(1, steps + 1):
            v = etdrk4_step(hal.fft, self.coeffs, v, p.n)
            if i % self.check_every == 0 or i == steps:
                checks.check_growth(f"kdv {p.name}", f"N={p.n}", self.dtype, p.dt, i,
                                    "max|u_hat|", float(hal.max(hal.abs(v))), limit)
        return hal.fft.irfft(v, p.n)


def relative_error(u, exact: np.ndarray, norm: str = "max") -> float:
    """||u - exact|| / ||exact|| on the host in float64, in the max norm (default) or "l2".

    The max norm is Kassam and Trefethen's measure; on N=256 the L2 error of the
    Kassam-Trefethen problem is about 3x larger (its spatial truncation error).
    """
    u = np.asarray(u.numpy() if isinstance(u, hal.Tensor) else u, dtype=np.float64)
    order = np.inf if norm == "max" else 2
    return float(np.linalg.norm(u - exact, order) / np.linalg.norm(exact, order))


def solve(problem: KdVProblem, dtype="float64", device=None) -> tuple[hal.Tensor, float]:
    """(u(t_end), relative max-norm error against the exact 2-soliton)."""
    u = KdVSolver(problem, dtype, device).run()
    return u, relative_error(u, problem.exact(problem.t_end))


def residual(soliton: TwoSoliton, x: hal.Tensor, t: float) -> tuple[hal.Tensor, float]:
    """(u_t + 6 u u_x + u_xxx of the exact solution by autodiff, max|u_xxx| for scale).

    u_x and u_xxx come from one Taylor-mode pass in x (third order), u_t from one in t.
    """
    from frontends import autograd as ag

    tt = hal.full_like(x, t)
    u, ux, _, uxxx = ag.derivatives(lambda y: soliton(hal, y, tt), x, order=3)
    _, ut = ag.derivatives(lambda s: soliton(hal, x, s), tt, order=1)
    return ut + 6 * u * ux + uxxx, float(hal.max(hal.abs(uxxx)))


def peer_runner(peer, problem: KdVProblem, dtype="float64", steps: int | None = None):
    """A function u0 -> u after `steps` (default all) ETDRK4 steps in a peer library
    (`peers.load(name)`); coefficients are uploaded and the loop compiled once."""
    cdtype = np.complex64 if np.dtype(dtype) == np.float32 else np.complex128
    c = {k: peer.asarray(v.astype(cdtype)) for k, v in coefficients(problem).items()}
    step = peer.compile(lambda v: etdrk4_step(peer.fft, c, v, problem.n))
    loop = peer.looper(step, problem.steps if steps is None else steps)

    def run(u0: np.ndarray) -> np.ndarray:
        v = loop(peer.fft.rfft(peer.asarray(np.asarray(u0, dtype=dtype))))
        return peer.numpy(peer.fft.irfft(v, problem.n))

    return run
