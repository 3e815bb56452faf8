"""Domain decomposition over MPI: row blocks, halo exchange, Jacobi and distributed multigrid.

The grid rows 0..N-1 (row 0 the boundary, see `multigrid.py`) are split into equal
blocks, one per rank; a halo exchange (mpi4py Sendrecv of one row each way) gives every
block the rows next to it. mpi4py moves the rows; every number is computed in hal ops.
Every rank must make the same calls with the same sizes and dtypes: `distributed_level`
checks that (`same_on_every_rank`) before its first collective, so a mismatch is a
HalError on every rank rather than a hang or rows of different sizes mixed.

    comm = MPI.COMM_WORLD
    level = distributed_level(comm, 64)
    factor, _ = multigrid.convergence_factor(level, norm=global_norm(comm))
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import hal

from . import checks
from .multigrid import Level, neighbours

HALO = 1  # rows of halo each side


@dataclass(frozen=True)
class Partition:
    """The block of rows of an N-interval grid that rank `rank` of `ranks` holds."""

    n: int
    ranks: int
    rank: int = 0

    def __post_init__(self):
        if self.ranks < 1 or not 0 <= self.rank < self.ranks:
            raise hal.ShapeError(f"partition: rank {self.rank} of {self.ranks} ranks is invalid")
        if self.n % self.ranks:
            raise hal.ShapeError(
                f"partition: N={self.n} grid rows do not divide across {self.ranks} ranks; "
                f"choose N a multiple of {self.ranks} "
                f"(e.g. {self.ranks * max(2, self.n // self.ranks)})"
            )
        if self.n // self.ranks < 2 * HALO:
            raise hal.ShapeError(
                f"partition: N={self.n} over {self.ranks} ranks leaves {self.n // self.ranks} "
                f"row(s) per rank, fewer than the {2 * HALO} the halo exchange needs (one row "
                f"sent each way); use at most {self.n // (2 * HALO)} ranks or N >= "
                f"{2 * HALO * self.ranks}"
            )

    @property
    def rows(self) -> int:
        """Rows per rank."""
        return self.n // self.ranks

    @property
    def row0(self) -> int:
        """The first global row of this rank's block."""
        return self.rank * self.rows


def halo_exchange(comm, u: hal.Tensor) -> tuple[hal.Tensor, hal.Tensor]:
    """(row above, row below) this rank's block: the neighbours' edge rows, zeros at the ends."""
    from mpi4py import MPI

    rank, size = comm.Get_rank(), comm.Get_size()
    first, last = np.ascontiguousarray(u[:1].numpy()), np.ascontiguousarray(u[-1:].numpy())
    above, below = np.zeros_like(first), np.zeros_like(last)
    up = rank - 1 if rank > 0 else MPI.PROC_NULL
    down = rank + 1 if rank < size - 1 else MPI.PROC_NULL
    comm.Sendrecv(first, dest=up, recvbuf=below, source=down)
    comm.Sendrecv(last, dest=down, recvbuf=above, source=up)
    return hal.asarray(above, device=u.device), hal.asarray(below, device=u.device)


def gather_rows(comm, u: hal.Tensor) -> hal.Tensor:
    """Every rank's block stacked in rank order, on every rank."""
    local = np.ascontiguousarray(u.numpy())
    whole = np.empty((comm.Get_size(), *local.shape), dtype=local.dtype)
    comm.Allgather(local, whole)
    return hal.asarray(whole.reshape(-1, local.shape[1]), device=u.device)


def global_sum(comm, x: hal.Tensor) -> float:
    """The sum of x over every rank's block."""
    from mpi4py import MPI

    return comm.allreduce(float(hal.sum(x)), op=MPI.SUM)


def global_norm(comm):
    """The 2-norm over all ranks, as a function of a block."""
    return lambda r: global_sum(comm, r * r) ** 0.5


def same_on_every_rank(comm, what: str, **values) -> None:
    """Raise hal.HalError on every rank unless every rank passed the same `values` (one
    allgather; call it before the collectives that the values size)."""
    seen = comm.allgather({k: repr(v) for k, v in values.items()})
    differ = sorted({k for s in seen for k in s if len({t.get(k) for t in seen}) > 1})
    if differ:
        detail = "; ".join(f"{k}: " + ", ".join(
            f"{v} on rank(s) {', '.join(str(r) for r, s in enumerate(seen) if s.get(k) == v)}"
            for v in dict.fromkeys(s.get(k) for s in seen)) for k in differ)
        raise hal.HalError(f"{what}: the ranks were given different arguments ({detail}); "
                           "every rank must call it with the same ones")


def distributed_level(comm, n: int, dtype="float64", device=None,
                      hierarchy: bool = True) -> Level:
    """The finest level of an N-interval grid split across the ranks of comm.

    With `hierarchy` (multigrid; N must be a power of two) coarser levels stay split
    while a block keeps at least one row; the level whose blocks are single rows is
    gathered and solved whole on every rank. Every rank must pass the same n, dtype and
    hierarchy (each may have its own device).
    """
    same_on_every_rank(comm, "distributed_level", n=n, dtype=_dtype_name(dtype),
                       hierarchy=hierarchy)
    part = Partition(n, comm.Get_size(), comm.Get_rank())
    if hierarchy:
        checks.require_power_of_two("distributed multigrid", n)
    return _level(comm, n, part.rows, part.row0, hal.dtype(dtype), hal.device(device))


def _dtype_name(dtype) -> str:
    """The dtype's name, or what was given where it is no dtype (refused after the check)."""
    try:
        return hal.dtype(dtype).name
    except hal.HalError:
        return repr(dtype)


def _level(comm, n, rows, row0, dtype, device) -> Level:
    def coarse():
        return _level(comm, n // 2, rows // 2, row0 // 2, dtype, device)

    def gather(u):
        return gather_rows(comm, u)

    return Level(n, row0, rows, lambda u: halo_exchange(comm, u), coarse, dtype, device,
                 gather=gather if rows == 1 or n == 2 else None)


def jacobi(level: Level, u: hal.Tensor, f: hal.Tensor, iterations: int) -> hal.Tensor:
    """`iterations` Jacobi sweeps u <- (neighbours + h^2 f) / 4 on interior points.

    Each point's arithmetic is the same on any number of ranks, so the result is
    bitwise identical for every decomposition.
    """
    scaled = level.h2 * f
    for _ in range(iterations):
        u = level.interior * ((neighbours(level, u) + scaled) * 0.25)
    return u


def poisson_rhs(level: Level) -> hal.Tensor:
    """f = 2 pi^2 sin(pi x) sin(pi y) on this level's rows (u = sin sin exactly)."""
    y = (np.arange(level.row0, level.row0 + level.rows) / level.n)[:, None]
    x = (np.arange(1, level.n) / level.n)[None, :]
    f = 2 * np.pi**2 * np.sin(np.pi * x) * np.sin(np.pi * y)
    return level.interior * hal.asarray(f.astype(level.dtype), device=level.device)
