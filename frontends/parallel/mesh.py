"""A device mesh over MPI: one process group per axis, registered with hal's collectives.

`Mesh((dp, tp), ("dp", "tp"))` lays the ranks of a communicator out row-major (the last
axis fastest, so "tp" neighbours are adjacent ranks) and splits it into one communicator
per axis: the ranks that share every other coordinate. Each becomes an `MPIGroup` (hal's
`Group` on numpy arrays through mpi4py's buffer methods), registered under a name such as
"mesh0.tp" to pass as `group=` to the collective ops:

    with Mesh((2, 2), ("dp", "tp")) as mesh:
        y = hal.collectives.all_reduce(x, group=mesh.group("tp"))

Devices. Given this rank's `device`, the Mesh chooses each group's transport
(transport.py): a device library such as NCCL where the group's ranks sit on distinct
devices of one node and the backend has one, else host memory; `MPIGroup.transport` says
which, and why not the library.

Reliability. Every rank must issue the same collectives on a group in the same order with
the same shapes and dtypes; when one does not, MPI hangs, mixes data or fails deep inside
MPICH. So before each collective the ranks compare (sequence number, op, dtype, shape,
parameters), and a mismatch is a HalError on every rank listing what each rank called
(the debug check: one 16-byte allgather per collective; `debug=False` or
HAL_PARALLEL_DEBUG=0 turns it off for speed). A rank that stops with an uncaught exception,
or leaves a `with Mesh` block by a nonzero `sys.exit`, aborts the whole job with its reason
(rank, exception, file:line) instead of leaving the others waiting (`abort.py`;
`abort_on_error=False` or HAL_PARALLEL_ABORT_ON_ERROR=0 to let a rank end alone).
`timeout=seconds` (or HAL_PARALLEL_TIMEOUT) starts one watchdog thread per group: a
collective still incomplete after that long prints a diagnostic to stderr and aborts the
whole job (exit status 3) instead of hanging it.
"""

from __future__ import annotations

import functools
import itertools
import math
import os
import threading
import time
import zlib
from collections import Counter
from typing import NamedTuple

import numpy as np

import hal
from hal import dtypes
from hal.ops.shapes import axis as _axis

from . import transport
from .abort import abort_job, abort_on_uncaught_exceptions, rank_message

_MESHES = itertools.count()  # meshes are created collectively, so every rank numbers alike
_ABORT_STATUS = 3
RECV_SPIN_S = 0.005  # a recv polls without sleeping this long, then sleeps up to RECV_PAUSE_S
RECV_PAUSE_S = 2e-4
_NARROW = {d for d in (np.dtype(np.float16), dtypes.bfloat16) if d is not None}  # no MPI type


def _mpi():
    """mpi4py's MPI module, imported on first use (importing it initialises MPI)."""
    from mpi4py import MPI

    return MPI


class Call(NamedTuple):
    """One collective as a rank issued it: what debug mode compares across the ranks."""

    seq: int
    op: str
    dtype: np.dtype  # or its name, as debug mode sends it
    shape: tuple[int, ...]
    detail: str  # the algorithm or axes

    def __str__(self) -> str:
        shape = ", ".join(map(str, self.shape))
        detail = f" {self.detail}" if self.detail else ""
        return f"{self.op} {self.dtype}({shape}){detail} #{self.seq}"


class Pending:
    """A nonblocking collective in flight; `wait()` returns its result (again on each call)."""

    def __init__(self, group: MPIGroup, call: Call, request, send: np.ndarray,
                 out: np.ndarray, dtype):
        self._group, self._call, self._request = group, call, request
        self._send, self._out, self._dtype = send, out, dtype  # MPI reads and writes them
        self._result = None

    def test(self) -> bool:
        """Let MPI move the collective on (it progresses only inside MPI calls); whether it
        has completed."""
        return self._result is not None or self._request.Test()

    def wait(self) -> np.ndarray:
        """Block until the collective completes; the result array."""
        if self._result is None:
            started = self._group._arm(self._call)
            self._request.Wait()
            self._group._disarm(self._call, started)
            self._result = self._out.astype(self._dtype, copy=False)
            self._send = self._out = None
        return self._result


class MPIGroup:
    """hal's `Group` over an mpi4py communicator, on numpy arrays.

    Sums of float16 and bfloat16 are computed in float32 (one rounding at the end; MPI
    has no bfloat16) and cast back; bool sums are logical or (numpy's add); other dtypes
    go as mpi4py maps them; gathers and exchanges move raw bytes, so any dtype.
    `all_reduce` takes an algorithm of `cost.ALGORITHMS` ("allreduce" unless a CostModel
    `cost` chooses by size); "hierarchical" reduces within `node` (the group's ranks on
    this node). `send`/`recv` move arrays between two ranks (a pipeline's stages).
    `transport` is "host (why)", or the name of the device library `collectives` (a
    `hal.runtime.groups.DeviceCollectives`) that `on_device` runs the device's arrays
    through (the cuda backend's kernels call it).
    `counts`, `bytes` and `seconds` (Counters keyed by op name, the nonblocking ones as
    "iall_reduce" etc.) say how many calls, how many bytes this rank
    put on the wire and how long it spent inside them; `last` is the last collective
    completed. `debug` and `timeout`: see the module docstring.
    """

    def __init__(self, comm, name: str, *, node=None, debug: bool | None = None,
                 timeout: float | None = None, cost=None,
                 transport: str = "host (the group was given no device library)",
                 collectives=None):
        MPI = _mpi()
        self.comm, self.name, self.node, self.cost = comm, name, node, cost
        self.transport, self.collectives = transport, collectives
        self.size, self.rank = comm.Get_size(), comm.Get_rank()
        self.debug = _flag(debug, "HAL_PARALLEL_DEBUG") and self.size > 1
        self.timeout = _timeout(timeout)
        self.counts: Counter = Counter()
        self.bytes: Counter = Counter()
        self.seconds: Counter = Counter()
        self.seq = 0  # collectives issued on this group
        self.p2p_seq = 0  # sends and recvs issued on this group
        self._sends: list = []  # (request, what it must keep alive) of the sends in flight
        self._sum, self._or = MPI.SUM, MPI.LOR
        self._pending: tuple[float, Call] | None = None  # (start, call) while inside one
        self.last: Call | None = None  # the last collective completed (for diagnostics)
        self._signature = np.empty(2, np.int64)  # the debug check's: (seq, checksum)
        self._signatures = np.empty((self.size, 2), np.int64)  # every rank's
        self._watchdog = _Watchdog(self) if self.timeout else None

    def __repr__(self) -> str:
        return f"MPIGroup({self.name!r}, rank {self.rank} of {self.size})"

    # -- blocking collectives (hal's Group) --------------------------------------------
    def all_reduce(self, x, algorithm: str | None = None) -> np.ndarray:
        """The elementwise sum of x over the ranks, on every rank."""
        x = np.asarray(x)
        wire = _summable(x)
        algorithm = self._algorithm(wire.nbytes, algorithm)
        call = self._begin("all_reduce", x, f"algorithm={algorithm}", wire.nbytes)
        started = self._arm(call)
        if algorithm == "allreduce":
            out = np.empty_like(wire)
            self.comm.Allreduce(wire, out, op=self._op(wire))
        else:
            from . import cost

            out = cost.run(algorithm, self.comm, wire, node=self.node)
        self._disarm(call, started)
        return out.astype(x.dtype, copy=False)

    def all_gather(self, x, axis: int = 0) -> np.ndarray:
        """Every rank's x concatenated along axis in rank order, on every rank."""
        x = np.require(x, requirements="C")
        axis = _axis("all_gather", axis, x.ndim)
        out = np.empty((self.size, *x.shape), x.dtype)
        call = self._begin("all_gather", x, f"axis={axis}", x.nbytes)
        started = self._arm(call)
        self.comm.Allgather(_raw(x), _raw(out))
        self._disarm(call, started)
        if axis == 0:
            return out.reshape(self.size * x.shape[0], *x.shape[1:])
        return np.concatenate(out, axis)

    def reduce_scatter(self, x, axis: int = 0) -> np.ndarray:
        """This rank's chunk along axis of the sum of x over the ranks."""
        x = np.asarray(x)
        axis = _axis("reduce_scatter", axis, x.ndim)
        n = self._chunk("reduce_scatter", x.shape, axis)
        wire = np.ascontiguousarray(np.moveaxis(_summable(x), axis, 0))
        out = np.empty((n, *wire.shape[1:]), wire.dtype)
        call = self._begin("reduce_scatter", x, f"axis={axis}", wire.nbytes)
        started = self._arm(call)
        self.comm.Reduce_scatter_block(wire, out, op=self._op(wire))
        self._disarm(call, started)
        return np.ascontiguousarray(np.moveaxis(out, 0, axis)).astype(x.dtype, copy=False)

    def all_to_all(self, x, split_axis: int, concat_axis: int) -> np.ndarray:
        """x split in `size` chunks along split_axis, chunk r sent to rank r; the chunks
        received concatenated along concat_axis in rank order."""
        x = np.asarray(x)
        split_axis = _axis("all_to_all", split_axis, x.ndim)
        concat_axis = _axis("all_to_all", concat_axis, x.ndim)
        n = self._chunk("all_to_all", x.shape, split_axis)
        chunks = x.reshape(*x.shape[:split_axis], self.size, n, *x.shape[split_axis + 1:])
        send = np.ascontiguousarray(np.moveaxis(chunks, split_axis, 0))
        out = np.empty_like(send)
        call = self._begin("all_to_all", x, f"split={split_axis} concat={concat_axis}",
                           send.nbytes)
        started = self._arm(call)
        self.comm.Alltoall(_raw(send), _raw(out))
        self._disarm(call, started)
        return np.concatenate(out, concat_axis)

    def on_device(self, op: str, x, **params):
        """Collective `op` (all_reduce, all_gather, reduce_scatter) on x, a native array of
        this rank's device, through the device library `transport` names: counted, checked
        and watched as the host ones (its `seconds` are the time to enqueue it)."""
        if "axis" in params:
            params["axis"] = _axis(op, params["axis"], x.ndim)
        call = self._begin(op, x, " ".join(f"{k}={v}" for k, v in params.items()), x.nbytes)
        started = self._arm(call)
        out = getattr(self.collectives, op)(x, **params)
        self._disarm(call, started)
        return out

    # -- nonblocking collectives on 1-D arrays -----------------------------------------
    def iall_reduce(self, x) -> Pending:
        """Start the sum of the 1-D x over the ranks; `.wait()` returns it."""
        x = _vector("iall_reduce", x)
        wire = _summable(x)
        out = np.empty_like(wire)
        call = self._begin("iall_reduce", x, "", wire.nbytes)
        started = self._arm(call)
        request = self.comm.Iallreduce(wire, out, op=self._op(wire))
        self._disarm(call, started, completed=False)
        return Pending(self, call, request, wire, out, x.dtype)

    def ireduce_scatter(self, x) -> Pending:
        """Start this rank's chunk of the sum of the 1-D x over the ranks; `.wait()` returns it."""
        x = _vector("ireduce_scatter", x)
        wire = _summable(x)
        out = np.empty(self._chunk("ireduce_scatter", x.shape, 0), wire.dtype)
        call = self._begin("ireduce_scatter", x, "", wire.nbytes)
        started = self._arm(call)
        request = self.comm.Ireduce_scatter_block(wire, out, op=self._op(wire))
        self._disarm(call, started, completed=False)
        return Pending(self, call, request, wire, out, x.dtype)

    def iall_gather(self, x) -> Pending:
        """Start gathering every rank's 1-D x in rank order; `.wait()` returns it."""
        x = np.require(_vector("iall_gather", x), requirements="C")
        out = np.empty(self.size * x.size, x.dtype)
        call = self._begin("iall_gather", x, "", x.nbytes)
        started = self._arm(call)
        request = self.comm.Iallgather(_raw(x), _raw(out))
        self._disarm(call, started, completed=False)
        return Pending(self, call, request, x, out, x.dtype)

    # -- point to point (a pipeline's stages) ---------------------------------------------
    def send(self, x, peer: int, tag: int = 0) -> None:
        """Start sending x to rank `peer` (nonblocking: x is kept until it is delivered;
        `flush` waits for every send). Messages to one peer with one tag arrive in order."""
        x = np.require(x, requirements="C")
        call = self._p2p("send", x, peer, tag)
        self.bytes["send"] += x.nbytes
        self._sends = [(request, kept) for request, kept in self._sends if not request.Test()]
        wire = _raw(x)
        self._sends.append((self.comm.Isend(wire, dest=peer, tag=tag), (x, wire, call)))

    def recv(self, out, peer: int, tag: int = 0) -> np.ndarray:
        """The next array rank `peer` sent with `tag`, received into `out`; HalError when
        the message's size differs from out's (the ranks disagree about what is sent).
        It waits polling for RECV_SPIN_S, then in sleeps of at most RECV_PAUSE_S."""
        out = np.require(out, requirements=("C", "W"))
        call = self._p2p("recv", out, peer, tag)
        started = self._arm(call)
        status = _mpi().Status()
        spin_until, pause = time.perf_counter() + RECV_SPIN_S, 0.0
        while not self.comm.Iprobe(source=peer, tag=tag, status=status):
            # a blocking MPICH probe spins: on cores shared by more ranks than cores, the
            # waiting stage would take its neighbour's core; back off to short sleeps
            time.sleep(pause)
            if time.perf_counter() > spin_until:
                pause = min(RECV_PAUSE_S, pause + 1e-5)
        sent = status.Get_count(_mpi().BYTE)
        if sent != out.nbytes:
            self._disarm(call, started, completed=False)
            raise hal.HalError(
                f"recv on group {self.name!r} (as its rank {self.rank}): expected {call}, "
                f"{out.nbytes} bytes, from rank {peer}, which sent {sent} bytes with tag {tag}; "
                "the two ranks must agree on what they exchange (shape and dtype)")
        self.comm.Recv(_raw(out), source=peer, tag=tag)
        self._disarm(call, started)
        return out

    def flush(self) -> None:
        """Wait until every send this rank started has been delivered."""
        while self._sends:
            request, (_, _, call) = self._sends[0]
            started = self._arm(call)
            request.Wait()
            self._disarm(call, started, completed=False)
            self._sends.pop(0)

    def close(self) -> None:
        """Deliver the sends in flight, stop the watchdog, drop the device library's
        collectives (the communicator stays its owner's)."""
        self.flush()
        self.collectives = None
        if self._watchdog is not None:
            self._watchdog.stop()
            self._watchdog = None

    # -- bookkeeping, debug checks, timeouts -------------------------------------------
    def _algorithm(self, nbytes: int, algorithm: str | None) -> str:
        if algorithm is None:
            return "allreduce" if self.cost is None else self.cost.choose(nbytes)
        if algorithm != "allreduce":
            from . import cost

            if algorithm not in cost.ALGORITHMS:
                raise hal.HalError(
                    f"all_reduce on group {self.name!r}: unknown algorithm {algorithm!r}; "
                    f"use one of {', '.join(cost.ALGORITHMS)} (or None to choose by size)")
        return algorithm

    def _op(self, wire: np.ndarray):
        return self._or if wire.dtype == np.bool_ else self._sum

    def _chunk(self, op: str, shape: tuple[int, ...], axis: int) -> int:
        if shape[axis] % self.size:
            raise hal.ShapeError(
                f"{op}: axis {axis} of the shape {shape} has {shape[axis]} elements, which "
                f"do not split evenly over the {self.size} ranks of group {self.name!r}; "
                f"make it a multiple of {self.size} (pad, or choose another split)")
        return shape[axis] // self.size

    def _p2p(self, op: str, x: np.ndarray, peer: int, tag: int) -> Call:
        """A send's or recv's Call (numbered apart from the collectives, which every rank of
        the group issues), counted; HalError for a peer outside the group."""
        if isinstance(peer, bool) or not isinstance(peer, int | np.integer) \
                or not 0 <= peer < self.size or peer == self.rank:
            raise hal.HalError(f"{op} on group {self.name!r}: peer {peer!r} must be another "
                               f"rank of the group (0 to {self.size - 1}, not {self.rank})")
        self.p2p_seq += 1
        self.counts[op] += 1
        return Call(self.p2p_seq, op, x.dtype, x.shape, f"{'to' if op == 'send' else 'from'} "
                    f"{peer} tag={tag}")

    def _begin(self, op: str, x: np.ndarray, detail: str, nbytes: int) -> Call:
        self.seq += 1
        call = Call(self.seq, op, x.dtype, x.shape, detail)
        self.counts[op] += 1
        self.bytes[op] += nbytes
        if self.debug:
            started = self._arm(call)
            self._check(call)
            self._disarm(call, started, completed=False)
        return call

    def _arm(self, call: Call) -> float:
        started = time.perf_counter()
        self._pending = (started, call)
        return started

    def _disarm(self, call: Call, started: float, completed: bool = True) -> None:
        self.seconds[call.op] += time.perf_counter() - started
        self._pending = None
        if completed:
            self.last = call

    def _check(self, call: Call) -> None:
        """Compare this call with the other ranks' by (sequence number, checksum of the
        rest): one 16-byte allgather into buffers kept for it; the calls themselves are
        gathered only to report a mismatch."""
        mine, everyone = self._signature, self._signatures
        mine[:] = call.seq, _checksum(call.op, call.dtype, call.shape, call.detail)
        self.comm.Allgather(mine, everyone)
        if everyone.tobytes() != mine.tobytes() * self.size:  # all ranks see it: all raise
            calls = self.comm.allgather(
                (call.seq, call.op, call.dtype.name, call.shape, call.detail))
            listing = "; ".join(f"rank {r}: {Call(*c)}" for r, c in enumerate(calls))
            raise hal.HalError(
                f"group {self.name!r}: collective #{call.seq} differs across its ranks "
                f"({listing}); every rank of a group must issue the same collectives in "
                "the same order with the same shapes and dtypes")

    def _abort(self, started: float, call: Call) -> None:
        waiting = {"send": "receiving", "recv": "sending"}.get(call.op)
        why = (f"The peer ({call.detail}) is not {waiting} it (stopped or hung)" if waiting else
               "Another rank of the group is not issuing this collective (stopped or hung, or "
               "issuing another one with the debug check off)")
        abort_job(rank_message(
            f"{call} on group {self.name!r} (as its rank {self.rank} of {self.size}) has not "
            f"completed after {time.perf_counter() - started:.1f} s (timeout "
            f"{self.timeout:g} s); last completed: {self.last or 'none'}. {why}; aborting the "
            "job"),
            _ABORT_STATUS)


class _Watchdog(threading.Thread):
    """Aborts the job when the group's collective in progress outlives the timeout."""

    def __init__(self, group: MPIGroup):
        super().__init__(name=f"hal-watchdog-{group.name}", daemon=True)
        self.group = group
        self.stopped = threading.Event()
        self.start()

    def run(self) -> None:
        timeout = self.group.timeout
        while not self.stopped.wait(min(timeout / 4, 1.0)):
            pending = self.group._pending
            if pending is not None and time.perf_counter() - pending[0] > timeout:
                self.group._abort(*pending)

    def stop(self) -> None:
        """End the thread (it notices within a quarter of the timeout)."""
        self.stopped.set()


class Mesh:
    """The ranks of `comm` (default MPI.COMM_WORLD) as an n-d mesh with named axes.

    Created collectively (every rank, the same order of meshes). `coords` are this rank's
    coordinates (row-major, last axis fastest); `group(axis)` the name of the axis's
    MPIGroup in hal's registry, `groups[axis]` the group, `comm(axis)` its communicator;
    `node` the ranks on this node. `debug` (default on, unless HAL_PARALLEL_DEBUG=0),
    `timeout` and `cost` go to every group (see MPIGroup); cost="calibrate" is the model
    `cost.load_or_calibrate` gives (the JSON stored for this job's ranks and nodes, else
    calibrated now and stored). `device` (a hal.Device, or None for host memory) is where
    this rank's tensors live: each group's `transport` is chosen from every rank's
    (transport.py; `place(device)` chooses again). `abort_on_error` (default on, unless
    HAL_PARALLEL_ABORT_ON_ERROR=0): with more than one rank, an uncaught exception on any
    rank, or a nonzero `sys.exit` inside the mesh's `with` block, aborts the whole job with
    that rank's reason (see the module docstring). `close()` (or leaving a `with` block)
    unregisters the groups and frees the communicators.
    """

    def __init__(self, shape, names, comm=None, *, debug: bool | None = None,
                 timeout: float | None = None, cost=None, device=None,
                 abort_on_error: bool | None = None):
        MPI = _mpi()
        comm = MPI.COMM_WORLD if comm is None else comm
        self.shape, self.names = _layout(shape, names, comm.Get_size())
        timeout = _timeout(timeout)  # refused before any communicator is made
        self.abort_on_error = _flag(abort_on_error, "HAL_PARALLEL_ABORT_ON_ERROR") \
            and comm.Get_size() > 1
        if self.abort_on_error:
            abort_on_uncaught_exceptions()
        if isinstance(cost, str):
            if cost != "calibrate":
                raise hal.HalError(f"Mesh: cost is a CostModel, None or 'calibrate', got "
                                   f"{cost!r}")
            from .cost import load_or_calibrate

            cost = load_or_calibrate(comm)
        self.size, self.rank = comm.Get_size(), comm.Get_rank()
        index = np.unravel_index(self.rank, self.shape)
        self.coords = {name: int(i) for name, i in zip(self.names, index)}
        self.node = comm.Split_type(MPI.COMM_TYPE_SHARED)
        prefix = f"mesh{next(_MESHES)}"
        self.groups: dict[str, MPIGroup] = {}
        for i, name in enumerate(self.names):
            others = [int(c) for j, c in enumerate(index) if j != i]
            color = np.ravel_multi_index(others, self.shape[:i] + self.shape[i + 1:])
            axis_comm = comm.Split(int(color), self.coords[name])
            group = MPIGroup(axis_comm, f"{prefix}.{name}",
                             node=axis_comm.Split_type(MPI.COMM_TYPE_SHARED), debug=debug,
                             timeout=timeout, cost=cost)
            hal.collectives.register_group(group.name, group)
            self.groups[name] = group
        self.place(device)

    def place(self, device) -> None:
        """Choose each group's transport for this rank's tensors on `device` (a hal.Device,
        or None for host memory), from every rank's (transport.py); collective."""
        here = transport.place(device)
        for group in self.groups.values():
            group.transport = transport.choose(group.comm.allgather(here), group.cost)
            group.collectives = None
            if not group.transport.startswith("host"):
                group.collectives = device.backend.open_collectives(
                    device, group.size, group.rank, functools.partial(_bootstrap, group.comm))

    def group(self, axis: str) -> str:
        """The name the axis's group is registered under (pass it as `group=`)."""
        return self._group(axis).name

    def comm(self, axis: str):
        """The mpi4py communicator of the axis."""
        return self._group(axis).comm

    def close(self) -> None:
        """Unregister the groups, stop their watchdogs and free the communicators."""
        for group in self.groups.values():
            hal.collectives.unregister_group(group.name)
            group.close()
            group.node.Free()
            group.comm.Free()
        self.groups = {}
        if self.node is not None:
            self.node.Free()
            self.node = None

    def __enter__(self) -> Mesh:
        return self

    def __exit__(self, kind, value, tb) -> None:
        if self.abort_on_error and isinstance(value, SystemExit) and value.code not in (None, 0):
            status = value.code if isinstance(value.code, int) else 1
            abort_job(rank_message(f"sys.exit({value.code!r}) inside a Mesh block; aborting the "
                                   "job so that no rank waits for this one"), status)
        self.close()

    def __repr__(self) -> str:
        return f"Mesh({self.shape}, {self.names}, rank {self.rank} at {self.coords})"

    def _group(self, axis: str) -> MPIGroup:
        try:
            return self.groups[axis]
        except KeyError:
            raise hal.HalError(
                f"mesh {self.shape} has no axis {axis!r} (axes: {', '.join(self.names)})"
                + ("" if self.groups else "; the mesh is closed")) from None


def _layout(shape, names, ranks: int) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """(shape, names) checked against each other and the number of ranks."""
    shape, names = tuple(shape), tuple(names)
    if not all(isinstance(n, int | np.integer) and n >= 1 for n in shape):
        raise hal.HalError(f"Mesh: the shape {shape} must be positive ints, one per axis")
    shape = tuple(map(int, shape))
    if len(names) != len(shape) or len(set(names)) != len(names) or not all(
            isinstance(n, str) and n for n in names):
        raise hal.HalError(
            f"Mesh: the names {names} must be distinct non-empty strings, one per axis of "
            f"the shape {shape}")
    if math.prod(shape) != ranks:
        raise hal.HalError(
            f"Mesh: the shape {shape} has {math.prod(shape)} ranks but the communicator has "
            f"{ranks}; run under `mpiexec -n {math.prod(shape)}`, or choose a shape whose "
            f"product is {ranks}")
    return shape, names


def _bootstrap(comm, make):
    """What make() returns on rank 0 of comm, on every rank (a device library's unique id)."""
    return comm.bcast(make() if comm.Get_rank() == 0 else None, root=0)


def _summable(x: np.ndarray) -> np.ndarray:
    """x as a contiguous buffer MPI can sum: float16 and bfloat16 widened to float32."""
    if x.dtype in _NARROW:
        return x.astype(np.float32)
    return np.require(x, requirements="C")


@functools.lru_cache(maxsize=4096)
def _checksum(op: str, dtype: np.dtype, shape: tuple[int, ...], detail: str) -> int:
    """A checksum of a collective's op, dtype, shape and parameters, remembered (the debug
    check compares it across the ranks on every call)."""
    return zlib.crc32(repr((op, dtype.name, shape, detail)).encode())


def _raw(x: np.ndarray) -> np.ndarray:
    """The bytes of the contiguous array x (what gathers and exchanges move)."""
    return x.reshape(-1).view(np.uint8)


def _vector(op: str, x) -> np.ndarray:
    x = np.asarray(x)
    if x.ndim != 1:
        raise hal.ShapeError(f"{op}: takes a 1-D array (a flat buffer), got shape {x.shape}; "
                             "ravel it first")
    return x


def _flag(value: bool | None, variable: str) -> bool:
    """value, or when None the environment variable (unset: on; 0, false, no, off: off)."""
    if value is not None:
        return bool(value)
    return os.environ.get(variable, "").strip().lower() not in ("0", "false", "no", "off")


def _timeout(timeout: float | None) -> float | None:
    """The timeout argument, else HAL_PARALLEL_TIMEOUT, checked; None = no watchdog."""
    what = "timeout"
    if timeout is None:
        timeout = os.environ.get("HAL_PARALLEL_TIMEOUT", "").strip() or None
        what = "HAL_PARALLEL_TIMEOUT"
        if timeout is None:
            return None
    try:
        seconds = float(timeout)
    except (TypeError, ValueError):
        seconds = math.nan
    if not seconds > 0 or math.isinf(seconds):
        raise hal.HalError(f"{what}={timeout!r} is not a positive number of seconds; give e.g. "
                           "60 (or leave it unset for no timeout)")
    return seconds
