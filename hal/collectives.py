"""Collective ops: communication between the ranks of a process group, as ops of the op set.

Seven ops, declared in `hal/ops/collectives.py` (family "collective"), each with a `group`
parameter naming a registered `Group`: `all_reduce` (sum), `all_gather(axis)`,
`reduce_scatter(axis)`, `all_to_all(split_axis, concat_axis)`, two that move nothing
forward but whose adjoints do: `copy_to_group` (identity; its VJP is all_reduce) and
`split_to_group(axis)` (this rank's chunk; its VJP is all_gather), and `gather_to_group
(axis)`, an all_gather whose VJP reduce-scatters (sequence parallelism's gather before a
split computation, whose cotangent is each rank's part). They come in conjugate pairs,
Megatron's f and g: the VJP of all_reduce is copy_to_group and of copy_to_group
all_reduce; of all_gather split_to_group and back; of reduce_scatter all_gather; of
gather_to_group reduce_scatter; of all_to_all the reverse all_to_all. Because they are
ops, a traced graph carries them and autodiff differentiates through them to any order.

Two point-to-point ops move data between two ranks of a group: `send(x, peer=)` sends x
and returns it, `recv(like, peer=)` returns what the peer sent, shaped like `like`; a
pipeline's stages exchange activations and gradients with them, and a traced graph
carries them (never folded, merged or dropped).

Groups are the runtime's (hal/runtime/groups.py, re-exported here): hal itself knows one,
"self" (one rank: every collective is the identity), so the ops are defined and tested on
a single process; a distributed frontend registers real groups (`register_group`), e.g.
over MPI. The cpu backend runs them directly; opencl, tvm and onnxruntime register
kernels that stage through host memory (`KernelTable.register_staged_collectives`); cuda's
run a group's device library (NCCL) where the group's `transport` names one, else stage
(`register_device_collectives`); a backend without any (the null template) runs them as
the CPU fallback.

    hal.register_group("tp", group)
    y = hal.all_reduce(x, group="tp")
"""

from __future__ import annotations

from . import ops
from .dispatch import call
from .ops.collectives import OPS, P2P
from .runtime.groups import Group, SelfGroup, group, register_group, unregister_group

__all__ = ["OPS", "P2P", "Group", "SelfGroup", "all_gather", "all_reduce", "all_to_all",
           "copy_to_group", "gather_to_group", "group", "recv", "reduce_scatter",
           "register_group", "send", "split_to_group", "unregister_group"]


def _call(op: str, x, **params):
    return call(ops.spec(op), x, **params)


def all_reduce(x, /, *, group: str):
    """The sum of x over the ranks of the group, on every rank."""
    return _call("all_reduce", x, group=group)


def all_gather(x, /, *, group: str, axis: int = 0):
    """Every rank's x concatenated along axis in rank order, on every rank."""
    return _call("all_gather", x, group=group, axis=axis)


def reduce_scatter(x, /, *, group: str, axis: int = 0):
    """This rank's chunk (along axis) of the sum of x over the ranks."""
    return _call("reduce_scatter", x, group=group, axis=axis)


def all_to_all(x, /, *, group: str, split_axis: int, concat_axis: int):
    """x's chunks along split_axis sent one per rank; the received ones joined on concat_axis."""
    return _call("all_to_all", x, group=group, split_axis=split_axis, concat_axis=concat_axis)


def copy_to_group(x, /, *, group: str):
    """x itself; its VJP all-reduces the cotangent (Megatron's f: a replicated value entering
    a computation split over the group)."""
    return _call("copy_to_group", x, group=group)


def split_to_group(x, /, *, group: str, axis: int = 0):
    """This rank's chunk of x along axis (no communication); its VJP all-gathers."""
    return _call("split_to_group", x, group=group, axis=axis)


def gather_to_group(x, /, *, group: str, axis: int = 0):
    """Every rank's x concatenated along axis, as all_gather; its VJP reduce-scatters the
    cotangent (Megatron's sequence-parallel gather: the gathered value feeds a computation
    split over the group, so each rank's cotangent is only its part of the sum)."""
    return _call("gather_to_group", x, group=group, axis=axis)


def send(x, /, *, group: str, peer: int, tag: int = 0):
    """Send x to rank `peer` of the group; returns x (so that a graph keeps the send in
    order with what reads its result)."""
    return _call("send", x, group=group, peer=peer, tag=tag)


def recv(like, /, *, group: str, peer: int, tag: int = 0):
    """The next tensor rank `peer` of the group sent with `tag`; `like` gives its shape,
    dtype and device (its values are not read)."""
    return _call("recv", like, group=group, peer=peer, tag=tag)
