"""DTensor: a global tensor held as this rank's local tensor and a placement over a group.

A DTensor is a hal Tensor whose `shape` is the global shape, so every op's shape rule
sees the single-device program. Inside `distribute()` (distribute.py) an interpreter sits
innermost on hal's dispatch stack: an op with a DTensor operand is handed to the
propagation rules (`rules.py`), which choose the placements, move operands with
collectives (`redistribute`) and call the op on the local tensors. Those local calls go
down the stack like any other op, so autodiff tapes and hal.jit traces below record the
local program, collectives included, and the collectives' conjugate VJPs (Megatron's f
and g, hal/collectives.py) make its backward pass the distributed backward pass.

Redistribution, one collective each (the group's ranks all call it):
P->R all_reduce, P->S reduce_scatter, S->R all_gather (once per shard in a
`distribute()` block), S(d)->S(e) all_to_all, R->S split_to_group (a local slice whose VJP
all-gathers).
"""

from __future__ import annotations

import hal
from hal import HalError, Tensor

from .placement import Partial, Placement, Replicate, Shard


class DTensor(Tensor):
    """A global tensor: `local` on this rank, laid out by `placement` over `group`."""

    __slots__ = ("group", "local", "placement")

    @classmethod
    def make(cls, local: Tensor, placement: Placement, group: str) -> DTensor:
        """Wrap a local tensor; the global shape follows from the placement and group size."""
        shape = tuple(local.shape)
        if isinstance(placement, Shard):
            if not 0 <= placement.dim < len(shape):
                raise HalError(f"DTensor: {placement} is not an axis of a {len(shape)}-d tensor")
            d = placement.dim
            shape = (*shape[:d], shape[d] * size(group), *shape[d + 1:])
        t = object.__new__(cls)
        t.native = None
        t.local, t.placement, t.group = local, placement, group
        t.shape, t.dtype, t.device = shape, local.dtype, local.device
        return t

    def full(self) -> Tensor:
        """The global tensor, replicated, as a local Tensor (a collective unless replicated)."""
        return redistribute(self, Replicate()).local

    def numpy(self):
        """The global values on the host (a collective: every rank of the group must call it)."""
        return self.full().numpy()

    def __repr__(self) -> str:
        return (f"DTensor({self.dtype.name}{self.shape}, {self.placement} over "
                f"{self.group!r}, local {tuple(self.local.shape)})")


def size(group: str) -> int:
    """Ranks in the group."""
    return hal.collectives.group(group).size


def redistribute(x: DTensor, target: Placement) -> DTensor:
    """x with placement `target`, by the one collective that moves it (see the module)."""
    source, group = x.placement, x.group
    if source == target:
        return x
    C = hal.collectives
    local = x.local
    if isinstance(target, Partial):
        raise HalError(f"redistribute: {source} -> P is not a redistribution this package "
                       "makes (a partial value comes from an op, e.g. a sum over a shard)")
    if isinstance(source, Partial):
        local = C.all_reduce(local, group=group) if isinstance(target, Replicate) else \
            C.reduce_scatter(local, group=group, axis=target.dim)
    elif isinstance(source, Replicate):
        local = C.split_to_group(local, group=group, axis=target.dim)
    elif isinstance(target, Replicate):
        local = _gathered(local, group, source.dim)
    else:
        local = C.all_to_all(local, group=group, split_axis=target.dim, concat_axis=source.dim)
    return DTensor.make(local, target, group)


def enter(local: Tensor, group: str) -> Tensor:
    """`copy_to_group(local)` (Megatron's f), once per replicated tensor in a `distribute()`
    block, so that all its split uses share one all_reduce of their cotangents (one for the
    query, key and value projections of one input, not three)."""
    entered = ENTERED[-1] if ENTERED else {}
    found = entered.get((id(local), group))
    if found is None or found[0] is not local:
        found = entered[(id(local), group)] = (
            local, hal.collectives.copy_to_group(local, group=group))
    return found[1]


def _gathered(local: Tensor, group: str, axis: int) -> Tensor:
    """`all_gather(local)`, once per shard in a `distribute()` block (the query, key and
    value projections of a sequence-sharded input share one)."""
    entered = ENTERED[-1] if ENTERED else {}
    key = (id(local), group, "all_gather", axis)
    found = entered.get(key)
    if found is None or found[0] is not local:
        found = entered[key] = (local, hal.collectives.all_gather(local, group=group, axis=axis))
    return found[1]


ENTERED: list[dict[tuple, tuple[Tensor, Tensor]]] = []
"""Per open `distribute()` block: (id of a local tensor, group) -> (it, its copy_to_group),
and (id, group, "all_gather", axis) -> (it, its all_gather)."""
