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
all-gathers). A shard made whole to feed a split computation is gathered by
`gathered_for_split` (gather_to_group: its VJP reduce-scatters).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

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
        local = C.split_to_group(used_whole(local), group=group, axis=target.dim)
    elif isinstance(target, Replicate):
        local = _gathered(local, group, source.dim)
    else:
        local = C.all_to_all(local, group=group, split_axis=target.dim, concat_axis=source.dim)
    return DTensor.make(local, target, group)


def enter(local: Tensor, group: str) -> Tensor:
    """`copy_to_group(local)` (Megatron's f), once per replicated tensor in a `distribute()`
    block, so that all its split uses share one all_reduce of their cotangents (one for the
    query, key and value projections of one input, not three). A parameter of the scope's
    (partial gradients) enters as it is, its name noted in `partial`."""
    scope = current()
    name = scope.parameter(local)
    if name is not None:
        scope.partial.add(name)
        return local
    return scope.once(("copy_to_group", id(local), group), local,
                      lambda: hal.collectives.copy_to_group(local, group=group))


def used_whole(local: Tensor) -> Tensor:
    """local, used by a computation that is not split (a parameter of the scope's is noted in
    `whole`: its gradient is whole on every rank)."""
    scope = current()
    name = scope.parameter(local)
    if name is not None:
        scope.whole.add(name)
    return local


def gathered_for_split(x: DTensor) -> DTensor:
    """The shard x whole on every rank, to feed a computation split over its group:
    `gather_to_group`, whose VJP reduce-scatters the ranks' parts of the cotangent (Megatron's
    sequence-parallel conjugate), once per shard in a `distribute()` block; the result counts
    as entered (`enter` returns it as it is: its VJP already sums the parts)."""
    if not isinstance(x.placement, Shard):
        raise HalError(f"gathered_for_split: {x!r} is not a shard")
    local, group, axis = x.local, x.group, x.placement.dim
    scope = current()
    whole = scope.once(("gather_to_group", id(local), group, axis), local,
                       lambda: hal.collectives.gather_to_group(local, group=group, axis=axis))
    scope.once(("copy_to_group", id(whole), group), whole, lambda: whole)
    return DTensor.make(whole, Replicate(), group)


def _gathered(local: Tensor, group: str, axis: int) -> Tensor:
    """`all_gather(local)`, once per shard in a `distribute()` block (the query, key and
    value projections of a sequence-sharded input share one)."""
    return current().once(("all_gather", id(local), group, axis), local,
                          lambda: hal.collectives.all_gather(local, group=group, axis=axis))


class Scope:
    """What one `distribute()` block remembers: each collective made once per local tensor
    (`once`) and, for partial gradients, the replicated `parameters` it was given: the names
    of those that entered a split computation as they are (`partial`: their gradients come
    back as this rank's part of the sum) and of those used whole (`whole`)."""

    def __init__(self, parameters: Mapping[str, Tensor] | None = None) -> None:
        self.made: dict[tuple, tuple[Tensor, Tensor]] = {}
        self.parameters = {id(t): (t, n) for n, t in (parameters or {}).items()}
        self.partial: set[str] = set()
        self.whole: set[str] = set()

    def once(self, key: tuple, local: Tensor, make: Callable[[], Tensor]) -> Tensor:
        """make()'s result, made once per key (whose id is local's) in this block."""
        found = self.made.get(key)
        if found is None or found[0] is not local:
            found = self.made[key] = (local, make())
        return found[1]

    def parameter(self, local: Tensor) -> str | None:
        """The name of local if it is one of the scope's parameters."""
        found = self.parameters.get(id(local))
        return found[1] if found is not None and found[0] is local else None


SCOPES: list[Scope] = []
"""The open `distribute()` blocks' scopes, innermost last."""


def current() -> Scope:
    """The innermost open block's scope (a fresh one outside any)."""
    return SCOPES[-1] if SCOPES else Scope()
