"""Guards shared by the workloads: sizes a method can take, and blow-up caught while it runs."""

from __future__ import annotations

import math

import hal


class UnstableError(hal.HalError):
    """A time step the scheme cannot take: the solution grew without bound or went non-finite."""


def require_even(workload: str, n: int) -> None:
    """ShapeError unless n is an even size of at least 4 (the spectral solvers' grids)."""
    if not isinstance(n, int) or n < 4 or n % 2:
        raise hal.ShapeError(
            f"{workload}: grid size N={n!r} must be an even integer >= 4 (the Nyquist mode "
            f"of an odd N has no real derivative); use N={max(4, int(n) + int(n) % 2)}"
        )


def require_power_of_two(workload: str, n: int) -> None:
    """ShapeError unless n is a power of two >= 2 (the multigrid hierarchy halves it)."""
    if not isinstance(n, int) or n < 2 or n & (n - 1):
        raise hal.ShapeError(
            f"{workload}: N={n!r} intervals must be a power of two >= 2 so every level "
            f"halves exactly; use N={1 << max(1, math.ceil(math.log2(max(2, int(n)))))}"
        )


def check_growth(workload: str, size: str, dtype, dt: float, step: int, what: str,
                 value: float, limit: float) -> None:
    """UnstableError if a monitored quantity `what` is non-finite or above its limit."""
    if not math.isfinite(value) or value > limit:
        raise UnstableError(
            f"{workload} {size} {hal.dtype(dtype).name}: unstable at step {step} with dt={dt:.3g} "
            f"({what} {value:.3g}, limit {limit:.3g}); reduce dt (halve it and retry)"
        )
