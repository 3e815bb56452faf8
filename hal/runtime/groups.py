"""Process groups: the ranks a collective op communicates among, by name.

hal itself knows one group, "self" (one rank: every collective is the identity), so the
collective ops are defined and tested on a single process. A distributed frontend
registers real groups (`register_group`), e.g. over MPI; a group computes on host numpy
arrays. The collective ops (hal/ops/collectives.py, hal/collectives.py) name their
group by a `group` parameter and look it up here.

A group's `transport` says how its collectives reach a device's tensors: "host (why)"
where they stage through host memory, or the name of a device library (e.g. "nccl") whose
collectives the group runs on the devices' own arrays (`on_device`). The library is the
backend's (`Backend.open_collectives`, a `DeviceCollectives`); the group that decided to
use it keeps it, so hal's kernels ask the group and no layer imports the one above.
"""

from __future__ import annotations

from collections import deque
from typing import Protocol

import numpy as np

from .errors import HalError, ShapeError


class DeviceCollectives(Protocol):
    """A device library's collectives among the ranks of one group (NCCL, say), on the
    native arrays of this rank's device, enqueued in the device's stream order; the
    arguments and results are as `Group`'s."""

    def all_reduce(self, x): ...

    def all_gather(self, x, axis: int): ...

    def reduce_scatter(self, x, axis: int): ...


ON_DEVICE = ("all_reduce", "all_gather", "reduce_scatter")  # what a DeviceCollectives runs


class Group(Protocol):
    """A process group: `size` ranks, this process is `rank`; collectives on numpy arrays.

    Every rank of the group must call the same collectives in the same order with the
    same shapes and dtypes. Chunks are along an axis, rank r holding the r-th of `size`
    equal chunks; a group refuses (ShapeError) an axis that does not divide. `transport`:
    "host (why)", or a device library's name when `on_device` runs the ON_DEVICE ops.
    """

    name: str
    size: int
    rank: int
    transport: str

    def on_device(self, op: str, x, **params):
        """Collective `op` (one of ON_DEVICE) on x, a native array of this rank's device,
        through the device library that `transport` names (never called when it is host)."""

    def all_reduce(self, x: np.ndarray) -> np.ndarray:
        """The elementwise sum of x over the ranks, on every rank."""

    def all_gather(self, x: np.ndarray, axis: int) -> np.ndarray:
        """Every rank's x concatenated along axis in rank order, on every rank."""

    def reduce_scatter(self, x: np.ndarray, axis: int) -> np.ndarray:
        """This rank's chunk along axis of the sum of x over the ranks."""

    def all_to_all(self, x: np.ndarray, split_axis: int, concat_axis: int) -> np.ndarray:
        """x split in `size` chunks along split_axis, chunk r sent to rank r; the chunks
        received concatenated along concat_axis in rank order."""

    def send(self, x: np.ndarray, peer: int, tag: int) -> None:
        """Send x to rank `peer` (it may return before `peer` receives: x is not changed
        afterwards); messages between two ranks with one tag arrive in the order sent."""

    def recv(self, out: np.ndarray, peer: int, tag: int) -> np.ndarray:
        """The next array rank `peer` sent with `tag`, received into `out` (its shape and
        dtype); HalError when what was sent differs in size."""


class SelfGroup:
    """The group of this process alone: every collective is the identity; a send to rank 0
    (itself) waits in a mailbox until a recv from rank 0 with the same tag takes it."""

    name, size, rank = "self", 1, 0
    transport = "host (one process: every collective is the identity)"

    def __init__(self) -> None:
        self._mailbox: dict[int, deque] = {}

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

    def send(self, x, peer, tag):
        """Keep a copy of x for the next recv with this tag."""
        self._mailbox.setdefault(tag, deque()).append(np.array(x))

    def recv(self, out, peer, tag):
        """The oldest array sent with this tag and not yet received; HalError when none was
        sent or it differs from `out` in shape or dtype."""
        waiting = self._mailbox.get(tag)
        if not waiting:
            raise HalError(f"recv from rank 0 of group 'self' (tag {tag}): nothing was sent "
                           "to this process with that tag; send before receiving")
        if waiting[0].shape != out.shape or waiting[0].dtype != out.dtype:
            raise ShapeError(
                f"recv from rank 0 of group 'self' (tag {tag}): a {out.dtype}{out.shape} was "
                f"expected but a {waiting[0].dtype}{waiting[0].shape} was sent")
        return waiting.popleft()


_GROUPS: dict[str, Group] = {"self": SelfGroup()}


def staged(group: Group) -> bool:
    """True when the group's collectives go through host memory (its transport is host)."""
    return group.transport.startswith("host")


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


def peer(op: str, name: str, rank, tag) -> None:
    """HalError unless `rank` is a rank of the group and `tag` a non-negative int."""
    size = group(name).size
    if isinstance(rank, bool) or not isinstance(rank, int | np.integer) or not 0 <= rank < size:
        raise HalError(f"{op}: peer {rank!r} is not a rank of group {name!r}, which has "
                       f"{size} (0 to {size - 1})")
    if isinstance(tag, bool) or not isinstance(tag, int | np.integer) or not 0 <= tag < 2**15:
        raise HalError(f"{op}: tag {tag!r} must be an int from 0 to 32767")


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
