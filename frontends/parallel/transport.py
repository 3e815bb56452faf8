"""Which transport a group's collectives take: a device library (NCCL) or host memory.

Where each layer's part lies. The library is the backend's: `hal.Backend`'s
`collectives_transport(device)` says cheaply whether it has one usable here ("nccl", or
"host (why)"), `open_collectives` opens it (backends/cuda/nccl.py). The choice needs every
rank's device, so the Mesh makes it once per group, all the group's ranks together at
start-up (one allgather of each rank's `Place`, then `choose`), and the group keeps the
opened library (`MPIGroup.transport`, `MPIGroup.on_device`). The backend's collective
kernels ask the group (`hal.runtime.groups.staged`) and call its `on_device` with their
native arrays, or stage through host memory as every other backend does. So no layer
imports one above it, the frontends name no backend and no library, and a rank on the
host is untouched.

`choose` is a plain function of the ranks' places: a device library where the group has
two or more ranks, each on a distinct device of one backend on one node, the library is
usable on every rank, and the cost model predicts it faster than staging
(cost.transport_seconds, its figures assumptions until calibrated on a GPU node);
otherwise "host (why)". Two ranks on one device stage: NCCL refuses them ("Duplicate GPU
detected"), so one GPU cannot exercise NCCL between ranks.
"""

from __future__ import annotations

import socket
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from .cost import CostModel

BUCKET_BYTES = 25 << 20  # the message the choice is made for: DataParallel's default bucket


class Place(NamedTuple):
    """Where one rank computes, as the transport choice needs it."""

    host: str  # the node's name
    device: str  # hal's device name ("cuda:1"); "" when the Mesh was given no device
    library: str  # its backend's collectives_transport: a library name or "host (why)"


def place(device) -> Place:
    """This rank's Place for `device` (a hal.Device, or None: no device given)."""
    if device is None:
        return Place(socket.gethostname(), "", "host (no device was given to the Mesh)")
    return Place(socket.gethostname(), device.name,
                 device.backend.collectives_transport(device))


def choose(places: Sequence[Place], cost: CostModel | None = None,
           nbytes: float = BUCKET_BYTES) -> str:
    """The transport of a group whose rank r computes at places[r]: a device library's
    name, or "host (why)" (see the module docstring); `cost` the calibrated MPI model, if
    any, and nbytes the all_reduce the choice is made for."""
    if len(places) == 1:
        return "host (one rank: nothing to exchange)"
    for rank, p in enumerate(places):
        if p.library.startswith("host"):
            return f"host (rank {rank}{f' on {p.device}' if p.device else ''}: {_why(p.library)})"
    if len({p.host for p in places}) > 1:
        return (f"host (the ranks span the nodes {', '.join(sorted({p.host for p in places}))}; "
                "a device library is used within one node)")
    if len({(p.device.partition(":")[0], p.library) for p in places}) > 1:
        return ("host (the ranks' devices differ in backend or library: "
                f"{', '.join(f'{p.device} {p.library}' for p in places)})")
    library, first = places[0].library, {}
    for rank, p in enumerate(places):
        if p.device in first:
            return (f"host (ranks {first[p.device]} and {rank} share {p.device}, and "
                    f"{library} refuses two ranks on one device)")
        first[p.device] = rank
    from .cost import transport_seconds  # scipy and tabulate: only where a library may be used

    staged, direct = transport_seconds("host", nbytes, cost), transport_seconds(library, nbytes)
    if staged <= direct:
        return (f"host (predicted {staged * 1e6:.0f} us staged against {direct * 1e6:.0f} us "
                f"by {library} for an all_reduce of {nbytes:.0f} bytes)")
    return library


def _why(transport: str) -> str:
    """The reason inside "host (why)"."""
    return transport.removeprefix("host (").removesuffix(")")
