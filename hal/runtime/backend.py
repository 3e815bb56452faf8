"""Backend: a factory of devices, and the one place a backend declares its gaps.

A backend is found through the `hal.backends` entry point group (registry.py); it says
cheaply whether it can open a device here, and opens each device once. Its kernels (a
`hal.KernelTable`: op name -> function, bound to each device as it opens) and its graph
compilers (`compile`, `compile_fused`) are what the op set and `hal.jit` ask of it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from . import dtypes as dt
from .device import Device
from .errors import BackendUnavailable, HalError

API_VERSION = 1  # bumped when the protocol changes incompatibly; plugins declare theirs


class Backend:
    """A factory of devices. Subclasses set `name` and `kernels` and write the hooks."""

    name = "abstract"
    api_version = API_VERSION
    kernels: Any = None  # a hal.KernelTable (hal/ops/kernels.py); bound per device as it opens
    unsupported: Mapping[str, str] = {}  # op or dtype name -> why: the one place gaps are declared

    def __init__(self):
        self._open: dict[int, Device] = {}

    def why_unavailable(self) -> str | None:
        """None when the backend can open a device here, else the reason (cheap: opens nothing)."""
        return None

    def device_count(self) -> int:
        """How many devices the backend sees."""
        return 1

    def _load_kernels(self) -> None:
        """Import the modules that register into `kernels` where they need the backend's
        library (called once the backend says it is available, before a device opens)."""

    def _open_device(self, index: int) -> Device:
        """Open device `index` (called once per index; the result is cached)."""
        raise NotImplementedError  # abstract hook: every backend opens its own devices

    def compile(self, graph, device: Device):
        """An executable of a traced `hal.Graph` for the device, or None (the default) for
        hal's own: the graph lowered, fused (asking `compile_fused` per group) and replayed
        without dispatch (hal/compile/pipeline.py). A backend whose runtime runs whole graphs
        (one session, say) returns an object that, called with the graph's input Tensors,
        returns the output Tensors (a list), and whose `counts()` returns a mapping of each
        way it runs the graph's nodes ('compiled', an execution provider, or 'WAY:OP' for a
        breakdown by op) to a number of nodes. That is the counts contract: inside
        `hal.placement()` hal records every call as each node of the graph (op, dtype) run
        on the device by those ways (joined with '+'), so `hal.placement()` and benchmark
        results' `ops` show the graph's ops; an executable that reports its nodes itself
        with `hal.dispatch.record` is left to do so. `hal conformance` checks the results
        (its jit cells) and that `counts()` is such a mapping.
        """
        return None

    def compile_fused(self, body, device: Device) -> Callable | None:
        """A native function for one fused group of a graph, or None to run it node by node.

        body is a `hal.Graph`: its inputs are the group's operands (numpy
        broadcasting to the result), its nodes elementwise ops (`hal.compile.graph.ELEMENTWISE`)
        and at most one reduction (`hal.compile.graph.REDUCTIONS`): the nodes it reads come before
        it (the prologue, broadcasting to its input), any after it (the epilogue) compute
        at its result's shape; its constants are 0-d scalars to inline, its one output the
        last node. Decline what you do not compile (an epilogue, say): hal then tries the
        group without its epilogue. The function takes the operands' native arrays
        and returns the native result; if it has `takes_out = True` it is also given
        `out=`, a native array of the result's shape and dtype to write (the executable
        reuses it across calls). Compile once per `body.key()`, caching what you can on
        disk under `settings.cache_dir`. The default declines: no fusion.
        """
        return None

    def capture(self, device: Device, run: Callable[[], None]):
        """A device graph recording the launches of one call of `run()`, or None (the
        default) for no capture: hal's jitted graphs then run as they are.

        hal offers a jitted graph here after a few ordinary calls (hal/compile/capture.py).
        `run()` runs the graph once on fixed input buffers, through your kernels; call it as
        often as you need (warm-ups on your capture queue, so its memory pool is settled)
        and record the launches of the last call. Raise to refuse (a host sync, a library
        that refuses capture, hal's own refusal from `run()`): the message becomes the
        executable's `capture_refused` and the graph runs uncaptured. Whatever you return
        is handed to `replay`, once per call of the jitted function.
        """
        return None

    def replay(self, device: Device, graph, copies: list, outputs: list) -> list:
        """Launch a graph from `capture` once: first copy each (source, fixed buffer) native
        pair of `copies` (the call's inputs into the buffers the graph reads), then the
        launches, ordered after the copies; return a new native copy of each of `outputs`
        (the buffers the graph writes, which the next replay overwrites), taken after
        them. Called only for graphs `capture` returned. Raising hal's CaptureRefused
        (hal.compile.capture) drops the capture: the call and later ones run uncaptured."""
        raise NotImplementedError  # abstract hook: only a backend whose capture records

    def collectives_transport(self, device: Device) -> str:
        """How collectives among ranks on distinct devices of this backend on one node can
        run: the name of the backend's own collectives library ("nccl", say), or "host
        (why)" where they stage through host memory (the default). Cheap: opens nothing."""
        return f"host (the {self.name} backend has no collectives of its own)"

    def open_collectives(self, device: Device, size: int, rank: int,
                         bootstrap: Callable[[Callable[[], Any]], Any]):
        """The library's collectives (a `hal.runtime.groups.DeviceCollectives`) among `size`
        ranks, this one `rank` on `device`; called on every rank of a group at once, only
        where `collectives_transport` named a library. `bootstrap(make)` returns, on every
        rank, what `make()` returned on rank 0 (the library's unique id, say)."""
        raise NotImplementedError  # abstract hook: only a backend with its own collectives

    def unsupported_on(self, device: Device) -> Mapping[str, str]:
        """Op or dtype name -> why, for one device (default: the backend's `unsupported`)."""
        return self.unsupported

    def dtypes(self, device: Device) -> tuple[np.dtype, ...]:
        """Dtypes that tensors on the device may have: every hal dtype not unsupported."""
        gaps = self.unsupported_on(device)
        return tuple(d for d in dt.ALL if d.name not in gaps)

    def is_available(self) -> bool:
        """True if the backend can open a device here."""
        return self.why_unavailable() is None

    def devices(self) -> list[str]:
        """Names of the devices, e.g. ['opencl:0', 'opencl:1']; empty when unavailable."""
        if not self.is_available():
            return []
        return [f"{self.name}:{i}" for i in range(self.device_count())]

    def open(self, index: int = 0) -> Device:
        """The opened device `index` (opened once per process); BackendUnavailable when it
        cannot be opened, whatever the backend's own code raised."""
        if index in self._open:
            return self._open[index]
        reason = self.why_unavailable()
        if reason is not None:
            raise BackendUnavailable(f"backend {self.name!r} is unavailable: {reason}")
        count = self.device_count()
        if not 0 <= index < count:
            raise BackendUnavailable(
                f"backend {self.name!r} has {count} device(s); index {index} is out of range "
                f"(use {self.name}:0..{count - 1}; `hal devices` lists them)"
            )
        try:
            self._load_kernels()
            device = self._open_device(index)
            device.capabilities  # noqa: B018  a failing _describe fails here, not on first use
        except (HalError, KeyboardInterrupt):
            raise
        except BaseException as e:  # SystemExit too: a plugin must not end the process
            raise BackendUnavailable(
                f"backend {self.name!r} could not open device {index}: "
                f"{type(e).__name__}: {e} (a fault of the backend; `hal devices` shows the "
                "others)") from e
        self._open[index] = device
        return device
