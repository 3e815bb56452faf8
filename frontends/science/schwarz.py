"""Conjugate gradients for the 5-point Poisson problem, preconditioned by additive Schwarz.

One-level, non-overlapping additive Schwarz (block Jacobi): each rank solves its own
block exactly with zero Dirichlet data on the cut rows, by the sine transform written as
two dense matmuls per side (A_block = S diag(lambda) S, S the orthonormal DST-I matrix).
With no coarse space the iterations grow with the number of blocks; on one rank the
preconditioner is the exact inverse and CG converges in one iteration.
"""

from __future__ import annotations

import numpy as np

import hal

from .distributed import global_sum
from .multigrid import Level, neighbours


def _sine(k: int, h2: float) -> tuple[np.ndarray, np.ndarray]:
    """(S, eigenvalues) of the k-point 1-D Dirichlet operator (2u - neighbours) / h^2."""
    j = np.arange(1, k + 1)
    s = np.sqrt(2 / (k + 1)) * np.sin(np.pi * np.outer(j, j) / (k + 1))
    return s, (2 - 2 * np.cos(np.pi * j / (k + 1))) / h2


class BlockSolver:
    """The exact inverse of the Poisson operator on one rank's interior rows."""

    def __init__(self, level: Level):
        self.skip = 1 if level.row0 == 0 else 0  # rank 0's first row is the boundary
        k = level.rows - self.skip
        sr, lr = _sine(k, level.h2)
        sc, lc = _sine(level.n - 1, level.h2)
        dev, dt = level.device, level.dtype
        self.sr, self.sc = (hal.asarray(a.astype(dt), device=dev) for a in (sr, sc))
        self.inv = hal.asarray((1 / (lr[:, None] + lc[None, :])).astype(dt), device=dev)
        self.zero = hal.zeros((self.skip, level.n - 1), dtype=dt, device=dev)

    def __call__(self, r: hal.Tensor) -> hal.Tensor:
        """z = A_block^-1 r on the interior rows (zero on the boundary row)."""
        inner = r[self.skip:]
        z = self.sr @ ((self.sr @ inner @ self.sc) * self.inv) @ self.sc
        return hal.concat([self.zero, z], axis=0) if self.skip else z


def apply_operator(level: Level, u: hal.Tensor) -> hal.Tensor:
    """(4u - neighbours) / h^2 on interior points: the 5-point -lap."""
    return level.interior * ((4 * u - neighbours(level, u)) * (1 / level.h2))


def pcg(comm, level: Level, f: hal.Tensor, tol: float = 1e-8,
        max_iterations: int = 500) -> tuple[hal.Tensor, int, float]:
    """(u, iterations, relative residual) of Schwarz-preconditioned CG from u = 0.

    Raises HalError naming the size and rank count if tol is not reached.
    """
    solve = BlockSolver(level)
    u = hal.zeros_like(f)
    r = f
    z = solve(r)
    p = z
    rz = global_sum(comm, r * z)
    norm_f = global_sum(comm, f * f) ** 0.5
    for it in range(1, max_iterations + 1):
        q = apply_operator(level, p)
        alpha = rz / global_sum(comm, p * q)
        u, r = u + alpha * p, r - alpha * q
        rel = global_sum(comm, r * r) ** 0.5 / norm_f
        if rel <= tol:
            return u, it, rel
        z = solve(r)
        rz, rz_old = global_sum(comm, r * z), rz
        p = z + (rz / rz_old) * p
    raise hal.HalError(
        f"schwarz-pcg N={level.n} on {comm.Get_size()} ranks: relative residual {rel:.3g} "
        f"above tol={tol:g} after {max_iterations} iterations; raise max_iterations or tol"
    )
