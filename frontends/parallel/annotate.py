"""Tensor parallelism by annotation: `parallel(split_dim=...)`, `parallelize`, `forward`.

The single-device model gets one annotation per layer to split, Megatron's layout:

    self.fc1 = parallel(nn.Linear(dim, hidden), split_dim=1)   # column: outputs split
    self.fc2 = parallel(nn.Linear(hidden, dim), split_dim=0)   # row: inputs split

or as a class decorator, `@parallel(split_dim=1) class Up(nn.Linear): ...`. An annotated
layer's `weight` is split along split_dim over the "tp" axis of a Mesh; its `bias` is
split with the outputs (split_dim = the weight's last axis) and replicated otherwise;
every other parameter is replicated. `parallelize(model, mesh)` returns a copy holding
this rank's shards, whose `model(...)` and `model.call_with(params, ...)` run it
distributed (`forward`): the parameters become DTensors, the propagation rules insert the
collectives (an MLP: one all_reduce forward, one backward), and the results come back as
replicated local tensors, as the single-device model returns them. So a training script
differentiates `model.call_with` with respect to the local parameter tensors
(frontends.autograd) exactly as on one device: a shard's gradient is the shard of the
full gradient, a replicated parameter's the full gradient on every rank (or, with
`parallelize(..., partial_grads=True)`, this rank's part of it where it fed a split
computation, all summed at once by `sum_partial_grads`).
"""

from __future__ import annotations

from collections.abc import Mapping

import hal
from hal import HalError, ShapeError, Tensor

from .distribute import distribute
from .dtensor import DTensor, redistribute
from .placement import Placement, Replicate, Shard

SPLIT = "parallel_split_dim"  # the annotation's attribute on a layer or layer class


def parallel(layer=None, *, split_dim: int):
    """Annotate a layer (instance or class) to be split along its weight's `split_dim`:
    1 = column parallel (outputs), 0 = row parallel (inputs). Returns what it was given."""
    if split_dim not in (0, 1):
        raise HalError(f"parallel: split_dim must be 0 (row: inputs) or 1 (column: outputs), "
                       f"got {split_dim!r}")

    def annotate(target):
        if isinstance(target, type):
            setattr(target, SPLIT, split_dim)
        else:
            object.__setattr__(target, SPLIT, split_dim)
        return target

    return annotate if layer is None else annotate(layer)


class Plan:
    """Where a parallelized model's parameters lie: the group and a placement per name, the
    model's own class (whose forward runs on the DTensors), whether it runs sequence
    parallel, and whether its replicated parameters' gradients come back partial
    (`partial_grads`; `partial`: the names found so, from the forwards run so far)."""

    def __init__(self, group: str, placements: dict[str, Placement], base: type,
                 sequence_parallel: bool = False, partial_grads: bool = False):
        self.group, self.placements, self.base = group, placements, base
        self.sequence_parallel, self.partial_grads = sequence_parallel, partial_grads
        self.partial: set[str] = set()


_PARALLEL_CLASSES: dict[type, type] = {}


def _parallel_class(base: type) -> type:
    """A subclass of the model's class whose call and call_with run distributed."""
    cls = _PARALLEL_CLASSES.get(base)
    if cls is None:
        cls = _PARALLEL_CLASSES[base] = type(base.__name__, (base,), {
            "__call__": lambda self, *args, **kwargs: forward(self, None, *args, **kwargs),
            "call_with": lambda self, params, *args, **kwargs: forward(self, params, *args,
                                                                        **kwargs),
            "__module__": base.__module__,
            "__doc__": f"{base.__name__}, parallelized: called, it runs distributed "
                       "(frontends.parallel.forward).",
        })
    return cls


def parallelize(model, mesh, axis: str = "tp", *, sequence_parallel: bool = False,
                partial_grads: bool = False):
    """A copy of `model` whose annotated parameters are this rank's shards over mesh's axis,
    and which runs distributed when called (`forward`); with `sequence_parallel` the
    activations between its split layers lie sharded along the sequence (Megatron's
    sequence parallelism, rules.py: the sequence length must divide over the ranks).

    With `partial_grads`, a replicated parameter that feeds a split computation (a
    layer_norm or a bias on a sequence shard) enters it without its all_reduce in the
    backward pass: its gradient comes back as this rank's part of the sum, and
    `sum_partial_grads` sums all of them in one fused all_reduce.

    Uneven splits are refused (ShapeError naming the parameter, its size and the ranks).
    """
    if getattr(model, "_plan", None) is not None:
        raise HalError(f"parallelize: this {type(model).__name__} is parallelized already; "
                       "parallelize the single-device model once")
    group = mesh.group(axis)
    ranks, rank = mesh.shape[mesh.names.index(axis)], mesh.coords[axis]
    copy = model.copy()
    placements: dict[str, Placement] = {}
    shards: dict[str, Tensor] = {}
    for path, layer in copy.named_layers():
        split = getattr(layer, SPLIT, None)
        for leaf, tensor in layer._params.items():
            name = f"{path}.{leaf}" if path else leaf
            placement = _placement(leaf, tensor, split, layer)
            placements[name] = placement
            if isinstance(placement, Shard):
                shards[name] = _shard(name, tensor, placement.dim, ranks, rank)
    for name, shard in shards.items():
        owner, leaf = copy._owner(name)
        owner._params[leaf] = shard
    object.__setattr__(copy, "_plan", Plan(group, placements, type(model), sequence_parallel,
                                           partial_grads))
    copy.__class__ = _parallel_class(type(model))
    return copy


def placements(model) -> dict[str, Placement]:
    """{parameter name: placement} of a parallelized model (all replicated otherwise)."""
    plan = getattr(model, "_plan", None)
    return dict(plan.placements) if plan else {n: Replicate() for n, _ in
                                               model.named_parameters()}


def forward(model, params: Mapping[str, Tensor] | None, *args, **kwargs):
    """model(*args, **kwargs) with `params` (local tensors by name; None: the model's own)
    in place of its parameters, run distributed; tensors in the result come back replicated."""
    plan = getattr(model, "_plan", None)
    if plan is None:
        raise HalError(f"forward: {type(model).__name__} is not parallelized; call "
                       "frontends.parallel.parallelize(model, mesh) first")
    local = {**model.parameters(), **(params or {})}
    where = {n: plan.placements.get(n, Replicate()) for n in local}
    wrapped = {n: DTensor.make(t, where[n], plan.group) for n, t in local.items()}
    replicated = {n: t for n, t in local.items() if isinstance(where[n], Replicate)} \
        if plan.partial_grads else None
    with distribute(plan.sequence_parallel, replicated) as scope:
        result = _replicated(plan.base.call_with(model, wrapped, *args, **kwargs))
    mixed = scope.partial & scope.whole
    if mixed:
        raise HalError(
            f"forward: {type(model).__name__} was parallelized with partial_grads, but "
            f"{', '.join(sorted(mixed))} feed both computations split over the group (a "
            "partial gradient) and whole ones (the full gradient), which cannot be summed "
            "apart; parallelize it without partial_grads")
    plan.partial |= scope.partial
    return result


def sum_partial_grads(model, grads: Mapping[str, Tensor | None]) -> dict[str, Tensor | None]:
    """grads with the partial gradients of a model parallelized with `partial_grads` (those
    of `Plan.partial`) summed over its group: one fused all_reduce per dtype (the gradients
    raveled into one buffer) in place of one per parameter; the others as they are.
    Collective over the model's group: call it after the backward of its forwards."""
    plan = getattr(model, "_plan", None)
    if plan is None or not plan.partial_grads:
        raise HalError(f"sum_partial_grads: {type(model).__name__} was not parallelized with "
                       "partial_grads=True, so its gradients are whole already")
    out = dict(grads)
    buckets: dict[tuple, list[str]] = {}
    for name, g in grads.items():
        if name in plan.partial and g is not None:
            buckets.setdefault((g.dtype, g.device), []).append(name)
    for names in buckets.values():
        flat = hal.concat([hal.reshape(grads[n], (-1,)) for n in names])
        total = hal.collectives.all_reduce(flat, group=plan.group)
        start = 0
        for n in names:
            size = grads[n].size
            out[n] = hal.reshape(total[start:start + size], grads[n].shape)
            start += size
    return out


def _replicated(tree):
    if isinstance(tree, DTensor):
        return redistribute(tree, Replicate()).local
    if isinstance(tree, (list, tuple)):
        return type(tree)(_replicated(t) for t in tree)
    if isinstance(tree, dict):
        return {k: _replicated(v) for k, v in tree.items()}
    return tree


def _placement(leaf: str, tensor: Tensor, split: int | None, layer) -> Placement:
    if split is None:
        return Replicate()
    weight = layer._params.get("weight")
    if weight is None:
        raise HalError(f"parallel: {type(layer).__name__} is annotated with split_dim={split} "
                       "but has no `weight` parameter to split")
    if leaf == "weight":
        return Shard(split)
    if leaf == "bias" and split == weight.ndim - 1 and tensor.ndim == 1:
        return Shard(0)
    return Replicate()


def _shard(name: str, tensor: Tensor, dim: int, ranks: int, rank: int) -> Tensor:
    n = tensor.shape[dim]
    if n % ranks:
        raise ShapeError(
            f"parallelize: {name} has {n} elements along axis {dim}, which do not split "
            f"evenly over tp={ranks} ranks; choose sizes that are multiples of {ranks} "
            "(or a tp that divides them)")
    chunk = n // ranks
    bounds = tuple((rank * chunk, (rank + 1) * chunk) if a == dim else (0, s)
                   for a, s in enumerate(tensor.shape))
    return hal.asarray(tensor.numpy()[tuple(slice(*b) for b in bounds)].copy(),
                       device=tensor.device)
