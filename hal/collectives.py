"""Collective ops: communication between the ranks of a process group, as ops of the op set.

Six ops, declared in `hal/ops.py` (family "collective"), each with a `group` parameter
naming a registered `Group`: `all_reduce` (sum), `all_gather(axis)`, `reduce_scatter(axis)`,
`all_to_all(split_axis, concat_axis)`, and two that move nothing forward but whose
adjoints do: `copy_to_group` (identity; its VJP is all_reduce) and `split_to_group(axis)`
(this rank's chunk; its VJP is all_gather). They come in conjugate pairs, Megatron's f and
g: the VJP of all_reduce is copy_to_group and of copy_to_group all_reduce; of all_gather
split_to_group and back; of reduce_scatter all_gather; of all_to_all the reverse
all_to_all. Because they are ops, a traced graph carries them and autodiff differentiates
through them to any order.

hal itself knows one group, "self" (one rank: every collective is the identity), so the
ops are defined and tested on a single process. A distributed frontend registers real
groups (`register_group`), e.g. over MPI; a group computes on host numpy arrays. The cpu
backend runs them directly; opencl, tvm, cuda and onnxruntime register kernels that stage
through host memory (`KernelTable.register_staged_collectives`); a backend without
either (the null template) runs them as the CPU fallback.

    hal.register_group("tp", group)
    y = hal.all_reduce(x, group="tp")
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from .errors import HalError, ShapeError


class Group(Protocol):
    """A process group: `size` ranks, this process is `rank`; collectives on numpy arrays.

    Every rank of the group must call the same collectives in the same order with the
    same shapes and dtypes. Chunks are along an axis, rank r holding the r-th of `size`
    equal chunks; a group refuses (ShapeError) an axis that does not divide.
    """

    name: str
    size: int
    rank: int

    def all_reduce(self, x: np.ndarray) -> np.ndarray:
        """The elementwise sum of x over the ranks, on every rank."""

    def all_gather(self, x: np.ndarray, axis: int) -> np.ndarray:
        """Every rank's x concatenated along axis in rank order, on every rank."""

    def reduce_scatter(self, x: np.ndarray, axis: int) -> np.ndarray:
        """This rank's chunk along axis of the sum of x over the ranks."""

    def all_to_all(self, x: np.ndarray, split_axis: int, concat_axis: int) -> np.ndarray:
        """x split in `size` chunks along split_axis, chunk r sent to rank r; the chunks
        received concatenated along concat_axis in rank order."""


class SelfGroup:
    """The group of this process alone: every collective is the identity."""

    name, size, rank = "self", 1, 0

    def all_reduce(self, x):
        """x itself (a sum over one rank)."""
        return x

    def all_gather(self, x, axis):
        """x itself (one chunk)."""
        return x

    def reduce_scatter(self, x, axis):
        """x itself (the only chunk of the only rank)."""
        return x

    def all_to_all(self, x, split_axis, concat_axis):
        """x itself (one chunk sent to itself)."""
        return x


_GROUPS: dict[str, Group] = {"self": SelfGroup()}


def register_group(name: str, group: Group) -> None:
    """Make `group` the one that collectives with `group=name` use (replacing any before)."""
    if not isinstance(name, str) or not name:
        raise HalError(f"register_group: a group name is a non-empty string, got {name!r}")
    _GROUPS[name] = group


def unregister_group(name: str) -> None:
    """Forget the group registered under name ("self" stays)."""
    if name != "self":
        _GROUPS.pop(name, None)


def group(name: str) -> Group:
    """The group registered under name; HalError listing the registered ones if none is."""
    try:
        return _GROUPS[name]
    except (KeyError, TypeError):
        raise HalError(
            f"no process group named {name!r} is registered (registered: "
            f"{', '.join(sorted(map(str, _GROUPS)))}); a distributed frontend registers its "
            "groups, e.g. frontends.parallel.Mesh"
        ) from None


def chunk(op: str, name: str, n: int, axis: int) -> int:
    """The length of one rank's chunk of n elements along axis; ShapeError if uneven."""
    size = group(name).size
    if n % size:
        raise ShapeError(
            f"{op}: axis {axis} has {n} elements, which do not split evenly over the "
            f"{size} ranks of group {name!r}; make it a multiple of {size} (pad, or choose "
            "another split)"
        )
    return n // size


def staged_kernel(op: str):
    """A kernel for a device without its own collectives: download, run the group, upload."""
    from .ops import spec

    reference = spec(op).reference

    def kernel(device, x, **params):
        return device.upload(np.ascontiguousarray(reference(device.download(x), **params)))

    return kernel


def _call(op: str, x, **params):
    from .dispatch import call
    from .ops import spec

    return call(spec(op), x, **params)


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


OPS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "copy_to_group",
       "split_to_group")
