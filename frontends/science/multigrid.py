"""Geometric multigrid V-cycles for -lap u = f on the unit square, zero Dirichlet boundary.

Vertex-centred grids of N intervals (N a power of two). A level holds rows
[row0, row0 + rows) of the rows 0..N-1 of the grid and the N-1 interior columns; row 0
is the boundary (kept zero) and row N lies outside every block. One process holds all
rows (`Level.serial`); `distributed.py` splits them across MPI ranks, and only the halo
rows differ, so the same smoother, residual, restriction and prolongation serve both.
Red-black Gauss-Seidel smoothing, full-weighting restriction, bilinear prolongation.

    u = hal.zeros((n, n - 1)); f = ...
    for _ in range(10): u = v_cycle(Level.serial(n), u, f)
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

import hal

from . import checks


@dataclass
class Level:
    """One grid level: N intervals, the block of rows held, and how to get halo rows.

    `halo(u)` returns the rows just above and below the block (zeros at the domain
    boundary); `coarse()` is the next level down, or None at the bottom. A level with
    `gather` (the bottom of a distributed hierarchy) is solved on the whole grid, which
    `gather(block)` assembles on every rank.
    """

    n: int
    row0: int
    rows: int
    halo: Callable[[hal.Tensor], tuple[hal.Tensor, hal.Tensor]]
    coarse: Callable[[], Level | None]
    dtype: object = hal.float64
    device: object = None
    gather: Callable[[hal.Tensor], hal.Tensor] | None = None

    @classmethod
    def serial(cls, n: int, dtype="float64", device=None) -> Level:
        """The whole grid on one device."""
        checks.require_power_of_two("multigrid", n)
        dtype, device = hal.dtype(dtype), hal.device(device)

        def halo(u):
            zero = hal.zeros((1, n - 1), dtype=dtype, device=device)
            return zero, zero

        def coarse():
            return cls.serial(n // 2, dtype, device) if n > 2 else None

        return cls(n, 0, n, halo, coarse, dtype, device)

    @property
    def h2(self) -> float:
        """The squared mesh width."""
        return 1.0 / self.n**2

    @functools.cached_property
    def below(self) -> Level | None:
        """The next coarser level (built once)."""
        return self.coarse()

    @functools.cached_property
    def whole(self) -> Level:
        """This level's whole grid on one device (where a gathering level is solved)."""
        return Level.serial(self.n, self.dtype, self.device)

    @functools.cached_property
    def masks(self) -> tuple[hal.Tensor, hal.Tensor]:
        """(red, black): interior points whose global i + j is even / odd."""
        i = np.arange(self.row0, self.row0 + self.rows)[:, None]
        j = np.arange(1, self.n)[None, :]
        interior = i > 0
        return tuple(hal.asarray(interior & ((i + j) % 2 == parity), device=self.device)
                     for parity in (0, 1))

    @functools.cached_property
    def interior(self) -> hal.Tensor:
        """1.0 on interior rows, 0.0 on the boundary row (shape (rows, 1))."""
        rows = np.arange(self.row0, self.row0 + self.rows)[:, None] > 0
        return hal.asarray(rows.astype(self.dtype), device=self.device)


def padded(level: Level, u: hal.Tensor) -> hal.Tensor:
    """u with its halo rows above and below and zero boundary columns left and right."""
    above, below = level.halo(u)
    return hal.pad(hal.concat([above, u, below], axis=0), ((0, 0), (1, 1)))


def neighbours(level: Level, u: hal.Tensor) -> hal.Tensor:
    """The sum of the four neighbours of every point (fixed order: up, down, left, right)."""
    p = padded(level, u)
    return p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:]


def residual(level: Level, u: hal.Tensor, f: hal.Tensor, interior: hal.Tensor) -> hal.Tensor:
    """f + (neighbours - 4u) / h^2 on interior points, zero on the boundary row."""
    return interior * (f + (neighbours(level, u) - 4 * u) * (1 / level.h2))


def smooth(level: Level, u: hal.Tensor, f: hal.Tensor, masks, sweeps: int) -> hal.Tensor:
    """`sweeps` red-black Gauss-Seidel sweeps (red points first)."""
    for _ in range(sweeps):
        for mask in masks:
            u = hal.where(mask, (neighbours(level, u) + level.h2 * f) * 0.25, u)
    return u


def restrict(level: Level, r: hal.Tensor) -> hal.Tensor:
    """Full weighting (1/16 [1 2 1; 2 4 2; 1 2 1]) onto the rows and columns of level/2."""
    above, _ = level.halo(r)
    p = hal.pad(hal.concat([above, r], axis=0), ((0, 0), (1, 1)))
    m, nc = level.rows // 2, level.n // 2
    rows = 0.25 * p[0:2 * m:2] + 0.5 * p[1:2 * m + 1:2] + 0.25 * p[2:2 * m + 2:2]
    stop = 2 * (nc - 1)
    return (0.25 * rows[:, 1:stop:2] + 0.5 * rows[:, 2:stop + 1:2]
            + 0.25 * rows[:, 3:stop + 2:2])


def _interleave(even: hal.Tensor, odd: hal.Tensor, axis: int) -> hal.Tensor:
    """even[0], odd[0], even[1], odd[1], ... along axis (len(even) = len(odd) or one more)."""
    k = odd.shape[axis]
    head = even[:k] if axis == 0 else even[:, :k]
    pairs = hal.stack([head, odd], axis=axis + 1)
    shape = list(head.shape)
    shape[axis] *= 2
    out = hal.reshape(pairs, shape)
    if even.shape[axis] > k:
        out = hal.concat([out, even[k:] if axis == 0 else even[:, k:]], axis=axis)
    return out


def prolong(coarse: Level, e: hal.Tensor) -> hal.Tensor:
    """Bilinear interpolation of a coarse correction onto the rows and columns of 2 x level."""
    _, below = coarse.halo(e)
    p = hal.concat([e, below], axis=0)
    m = coarse.rows
    rows = _interleave(p[:m], 0.5 * (p[:m] + p[1:m + 1]), axis=0)
    q = hal.pad(rows, ((0, 0), (1, 1)))
    nc = coarse.n
    return _interleave(0.5 * (q[:, :nc] + q[:, 1:nc + 1]), q[:, 1:nc], axis=1)


def v_cycle(level: Level, u: hal.Tensor, f: hal.Tensor, pre: int = 1,
            post: int = 1) -> hal.Tensor:
    """One V(pre, post) cycle on u for -lap u = f; the coarsest level (N=2) is one point,
    which a smoothing sweep solves exactly."""
    if level.gather is not None:
        u = v_cycle(level.whole, level.gather(u), level.gather(f), pre, post)
        return u[level.row0:level.row0 + level.rows]
    u = smooth(level, u, f, level.masks, pre)
    coarse = level.below
    if coarse is None:
        return u
    rc = restrict(level, residual(level, u, f, level.interior))
    ec = v_cycle(coarse, hal.zeros_like(rc), rc, pre, post)
    u = u + prolong(coarse, ec)
    return smooth(level, u, f, level.masks, post)


def convergence_factor(level: Level, cycles: int = 8, pre: int = 1, post: int = 1,
                       seed: int = 0, norm: Callable[[hal.Tensor], float] | None = None
                       ) -> tuple[float, hal.Tensor]:
    """(asymptotic residual reduction per V-cycle, final u) from a random guess with f = 0.

    The guess is one seeded global field (a distributed level takes its rows of it).
    The factor is the geometric mean over the last half of the cycles; `norm` (the
    global 2-norm; distributed runs pass one that reduces across ranks) defaults to local.
    """
    norm = norm or (lambda r: float(hal.sqrt(hal.sum(r * r))))
    guess = np.random.default_rng(seed).standard_normal((level.n, level.n - 1))
    block = guess[level.row0:level.row0 + level.rows].astype(level.dtype)
    u = level.interior * hal.asarray(block, device=level.device)
    f = hal.zeros_like(u)
    norms = [norm(residual(level, u, f, level.interior))]
    for _ in range(cycles):
        u = v_cycle(level, u, f, pre, post)
        norms.append(norm(residual(level, u, f, level.interior)))
    half = cycles // 2
    return (norms[-1] / norms[half]) ** (1 / (cycles - half)), u
