"""Data parallelism over a mesh axis: gradient buckets, fused buffers, ZeRO-1/2.

Every rank of the axis runs the model on its own part of the batch; `sync` then makes each
gradient the mean over the ranks. Gradients travel in buckets of about `bucket_bytes`, in
reverse order of the dict: a model lists its parameters in forward order, so the last
layers' gradients, the first a backward pass produces, go first. A bucket is one flat buffer
per dtype (the raveled gradients concatenated); every bucket's all-reduce is issued
nonblocking, then all are waited and unpacked into tensors of the original shapes on the
original devices.

`zero_step` is ZeRO: each rank keeps optimizer state for its 1/dp shard of the flat
parameter vector (one per dtype, padded with zeros to a multiple of dp) and updates only
that shard, then the shards are all-gathered. ZeRO-1 all-reduces the gradients (in
buckets) and keeps its shard; ZeRO-2 reduce-scatters them, so each rank receives only its
shard of the sum.

    mesh = Mesh((2,), ("dp",))
    dp = DataParallel(mesh, zero=2)
    params = dp.broadcast(model.trainable())
    grads = ag.grad(loss)(params, my_part_of_the_batch)
    params = dp.zero_step(optimizer, params, grads, max_norm=1.0)
    # without ZeRO: params = optimizer.step(params, dp.sync(grads))
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from frontends.optim import SGD, AdamW
from hal import HalError, Tensor


class DataParallel:
    """Data parallelism over the MPIGroup of one mesh axis: mean gradients by bucketed fused
    all-reduces, the start-up broadcast of parameters, and ZeRO-1/2 optimizer steps.

    `bucket_bytes=0` sends one collective per tensor (bucketing off); `zero` is 0 (plain),
    1 or 2. Every rank must pass the same names, shapes and dtypes in the same order: this
    is checked with one small collective at the first call and whenever they change, and a
    difference is a HalError on every rank naming it.
    """

    def __init__(self, mesh, axis: str = "dp", *, bucket_bytes: int = 25 * 2**20,
                 zero: int = 0) -> None:
        if isinstance(bucket_bytes, bool) or not isinstance(bucket_bytes, int) \
                or bucket_bytes < 0:
            raise HalError(f"DataParallel: bucket_bytes must be an int >= 0 (0 = one "
                           f"collective per tensor), got {bucket_bytes!r}")
        if zero not in (0, 1, 2):
            raise HalError(f"DataParallel: zero must be 0 (off), 1 (sharded optimizer state) "
                           f"or 2 (and sharded gradients), got {zero!r}")
        self.axis, self.bucket_bytes, self.zero = axis, bucket_bytes, zero
        self.comm = mesh.comm(axis)  # a HalError naming the mesh's axes if it has no such one
        self.group = mesh.groups[axis]
        self.size, self.rank = self.group.size, self.group.rank
        self.last_grad_norm: float | None = None  # zero_step's global norm before clipping
        self._agreed: tuple | None = None  # the (name, kind) list last found equal on all ranks
        self._layout: tuple | None = None  # the gradient list zero_step's shards are cut from
        self._optimizer, self._keys = None, []  # zero_step's optimizer, its state's names

    # -- plain data parallelism -----------------------------------------------------------
    def buckets(self, grads: Mapping[str, Tensor | None]) -> list[list[str]]:
        """The gradient names in each bucket, in the order the buckets are issued: reverse
        dict order, a bucket closed once it holds bucket_bytes or more (None is skipped)."""
        plan, current, filled = [], [], 0
        for name in reversed(list(grads)):
            if grads[name] is None:
                continue
            current.append(name)
            filled += grads[name].nbytes
            if filled >= self.bucket_bytes:
                plan.append(current)
                current, filled = [], 0
        return [*plan, current] if current else plan

    def sync(self, grads: Mapping[str, Tensor | None]) -> dict[str, Tensor | None]:
        """The mean of each gradient over the ranks, same shapes, dtypes and devices (None
        stays None): one nonblocking all-reduce per bucket and dtype, then all waited."""
        self._agree("sync", grads)
        mean = self.finish(self.start(grads))
        return {name: mean[name] for name in grads}

    def start(self, grads: Mapping[str, Tensor | None]) -> list[tuple]:
        """Issue the nonblocking all-reduces of these gradients' buckets and return them
        for `finish`: a backward pass may start each part of the gradients as soon as it
        exists (every rank must start the same parts in the same order; `sync` checks the
        names, shapes and dtypes, this does not)."""
        fused = [names for bucket in self.buckets(grads) for names in _by_dtype(grads, bucket)]
        sends = [_fuse(grads, names) for names in fused]  # alive until waited: MPI reads them
        return [(grads, names, self.group.iall_reduce(flat), flat)
                for names, flat in zip(fused, sends)]

    def finish(self, *started: list[tuple]) -> dict[str, Tensor | None]:
        """Wait for the all-reduces `start` issued; the mean gradients by name."""
        mean: dict[str, Tensor | None] = {}
        for part in started:
            for grads, names, request, _ in part:
                mean.update({n: None for n, g in grads.items() if g is None})
                mean.update(_unfuse(request.wait() / self.size, grads, names))
        return mean

    def check(self, tensors: Mapping[str, Tensor | None]) -> None:
        """HalError on every rank unless all ranks pass the same names, shapes and dtypes
        (one small collective when they change): call it before `start`."""
        self._agree("check", tensors)

    def broadcast(self, params: Mapping[str, Tensor | None]) -> dict[str, Tensor | None]:
        """Rank 0's tensors on every rank (one broadcast per dtype): the start-up step that
        makes all replicas equal."""
        self._agree("broadcast", params)
        out = dict(params)
        for names in _by_dtype(params, [n for n, t in params.items() if t is not None]):
            flat = _fuse(params, names)
            self.comm.Bcast(flat.view(np.uint8), root=0)
            out.update(_unfuse(flat, params, names))
        return out

    # -- ZeRO -----------------------------------------------------------------------------
    def zero_step(self, optimizer: SGD | AdamW, params: Mapping[str, Tensor],
                  grads: Mapping[str, Tensor | None], *, max_norm: float | None = None,
                  averaged: bool = False) -> dict[str, Tensor]:
        """New parameters after one ZeRO step of `optimizer` (SGD or AdamW, used for this
        DataParallel only); parameters whose gradient is None stay as they are. With
        `averaged` the gradients are the mean over the ranks already (an `OverlappedStep`'s,
        whose buckets went during the backward pass): ZeRO-1 takes its shard of them
        without its all-reduce (ZeRO-2, which reduce-scatters instead, refuses them).

        The optimizer runs on this rank's shard as one parameter tensor named "zero.<dtype>":
        its updates are elementwise with one set of options for all parameters, so this
        equals per-tensor updates. `max_norm` clips by the global norm of the mean gradient
        (as clip_grad_norm: one small all-reduce of the sum of squares); the optimizer's own
        grad_clip would see only the shard, so it is refused.
        """
        if self.zero == 0:
            raise HalError("DataParallel.zero_step: this DataParallel has zero=0; make it with "
                           "zero=1 or zero=2, or call sync(grads) and then optimizer.step")
        if not isinstance(optimizer, (SGD, AdamW)):
            raise HalError(f"DataParallel.zero_step: ZeRO shards need an elementwise update "
                           f"(frontends.optim SGD or AdamW), got {type(optimizer).__name__}")
        if optimizer.grad_clip is not None:
            raise HalError("DataParallel.zero_step: the optimizer's grad_clip would clip by the "
                           "norm of this rank's shard only; make it with grad_clip=None and "
                           "pass max_norm to zero_step")
        if max_norm is not None and not max_norm > 0:
            raise HalError(f"DataParallel.zero_step: max_norm {max_norm} must be positive")
        if averaged and self.zero == 2:
            raise HalError("DataParallel.zero_step: ZeRO-2 reduce-scatters the gradients "
                           "itself, so it takes them unaveraged; pass averaged=False, or use "
                           "zero=1 with averaged gradients")
        self._agree("zero_step", grads)
        groups = self._check_layout(params, grads)
        if self.zero == 1:
            mean = dict(grads) if averaged else self.sync(grads)
            shards = [self._shard(_fuse(mean, names)) for names in groups]
        else:
            sends = [self._pad(_fuse(grads, names)) for names in groups]
            pending = [self.group.ireduce_scatter(flat) for flat in sends]
            shards = [request.wait() / self.size for request in pending]
        if max_norm is not None:
            shards = self._clip(shards, max_norm)
        keys = [f"zero.{grads[names[0]].dtype.name}" for names in groups]
        devices = [params[names[0]].device for names in groups]
        new = optimizer.step(
            {k: Tensor.from_host(self._shard(_fuse(params, names)), device)
             for k, names, device in zip(keys, groups, devices)},
            {k: Tensor.from_host(np.ascontiguousarray(g), device)
             for k, g, device in zip(keys, shards, devices)})
        self._optimizer, self._keys = optimizer, keys
        sends = [new[k].numpy() for k in keys]
        pending = [self.group.iall_gather(flat) for flat in sends]
        out = dict(params)
        for names, request in zip(groups, pending):
            out.update(_unfuse(request.wait(), params, names))
        return out

    def state_bytes(self) -> int:
        """Bytes of optimizer state this rank holds for zero_step (0 before the first): about
        1/dp of the unsharded optimizer's."""
        return sum(t.nbytes for k in self._keys
                   for t in self._optimizer.state.get(k, {}).values())

    # -- helpers --------------------------------------------------------------------------
    def _agree(self, where: str, tensors: Mapping[str, Tensor | None]) -> None:
        """HalError on every rank unless all ranks pass the same (name, dtype, shape) list."""
        signature = tuple((name, _kind(t)) for name, t in tensors.items())
        if signature == self._agreed:
            return
        everyone = self.comm.allgather(signature)
        for rank, other in enumerate(everyone[1:], start=1):
            if other != everyone[0]:
                first = next((i for i, (a, b) in enumerate(zip(everyone[0], other)) if a != b),
                             min(len(everyone[0]), len(other)))
                raise HalError(
                    f"DataParallel.{where}: the tensors differ across the {self.axis!r} ranks: "
                    f"at position {first} rank 0 has {_entry(everyone[0], first)} and rank "
                    f"{rank} has {_entry(other, first)}; every rank must pass the same names, "
                    "shapes and dtypes in the same order")
        for name, t in tensors.items():
            if t is not None and not (isinstance(t, Tensor) and t.dtype.kind in "fc"):
                raise HalError(f"DataParallel.{where}: {name!r} is {_describe(_kind(t))}; it takes "
                               "floating-point hal Tensors (or None)")
        self._agreed = signature

    def _check_layout(self, params: Mapping[str, Tensor], grads: Mapping) -> list[list[str]]:
        """The gradient names per dtype, checked against the parameters and the first step."""
        for name, g in grads.items():
            p = params.get(name)
            if g is not None and (p is None or _kind(p) != _kind(g)):
                raise HalError(f"DataParallel.zero_step: gradient {name!r} is "
                               f"{_describe(_kind(g))}, its parameter {_describe(_kind(p))}")
        if self._layout is None:
            self._layout = self._agreed
        elif self._layout != self._agreed:
            raise HalError("DataParallel.zero_step: the gradients' names, shapes or dtypes "
                           "changed since the first step, so the sharded optimizer state no "
                           "longer fits; make a new optimizer and DataParallel for the new set")
        return _by_dtype(grads, [n for n, g in grads.items() if g is not None])

    def _pad(self, flat: np.ndarray) -> np.ndarray:
        """flat with zeros appended up to a multiple of the number of ranks."""
        return np.concatenate([flat, np.zeros(-len(flat) % self.size, flat.dtype)])

    def _shard(self, flat: np.ndarray) -> np.ndarray:
        """This rank's chunk of the padded flat vector."""
        padded = self._pad(flat)
        n = len(padded) // self.size
        return padded[self.rank * n:(self.rank + 1) * n]

    def _clip(self, shards: list[np.ndarray], max_norm: float) -> list[np.ndarray]:
        """The shards scaled by min(1, max_norm / (norm + 1e-6)), norm that of the whole
        gradient (kept in last_grad_norm)."""
        local = sum(np.vdot(s, s).real for s in shards)
        self.last_grad_norm = math.sqrt(self.group.all_reduce(np.array([local], np.float64))[0])
        scale = min(max_norm / (self.last_grad_norm + 1e-6), 1.0)
        return [s * s.dtype.type(scale) for s in shards]


def _kind(t) -> tuple | str | None:
    """What the ranks compare: (dtype, shape) of a tensor, None, or a non-tensor's type."""
    if t is None:
        return None
    if isinstance(t, Tensor):
        return t.dtype, tuple(t.shape)
    return type(t).__name__


def _describe(kind) -> str:
    """A `_kind` in words: 'float64(3, 4)', 'None', 'a list (not a hal Tensor)'."""
    if kind is None:
        return "None"
    if isinstance(kind, str):
        return f"a {kind} (not a hal Tensor)"
    return f"{kind[0].name}{kind[1]}"


def _entry(signature: tuple, i: int) -> str:
    return (f"{signature[i][0]!r} {_describe(signature[i][1])}" if i < len(signature)
            else f"no tensor (it has {len(signature)})")


def _by_dtype(tensors: Mapping[str, Tensor], names: list[str]) -> list[list[str]]:
    """names split by dtype, in order of first appearance."""
    groups: dict = {}
    for name in names:
        groups.setdefault(tensors[name].dtype, []).append(name)
    return list(groups.values())


def _fuse(tensors: Mapping[str, Tensor], names: list[str]) -> np.ndarray:
    """The named tensors raveled and concatenated into one new host array."""
    return np.concatenate([tensors[n].numpy().ravel() for n in names])


def _unfuse(flat: np.ndarray, like: Mapping[str, Tensor], names: list[str]) -> dict[str, Tensor]:
    """The named tensors' shapes cut from the front of flat, each on its tensor's device."""
    out, start = {}, 0
    for name in names:
        t = like[name]
        out[name] = Tensor.from_host(flat[start:start + t.size].reshape(t.shape), t.device)
        start += t.size
    return out
