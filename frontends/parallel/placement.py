"""Placements: how a global tensor lies on the ranks of a group (PyTorch DTensor's three).

- `Replicate()`: every rank holds the whole tensor.
- `Shard(dim)`: rank r holds the r-th of `size` equal chunks along dim.
- `Partial()`: every rank holds a tensor of the global shape; the global value is their sum.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Replicate:
    """The whole tensor on every rank."""

    def __repr__(self) -> str:
        return "R"


@dataclass(frozen=True)
class Shard:
    """Equal chunks along `dim` (non-negative), one per rank in rank order."""

    dim: int

    def __repr__(self) -> str:
        return f"S({self.dim})"


@dataclass(frozen=True)
class Partial:
    """A pending sum: the global tensor is the sum of the ranks' tensors."""

    def __repr__(self) -> str:
        return "P"


Placement = Replicate | Shard | Partial
