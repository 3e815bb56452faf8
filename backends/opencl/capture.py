"""A jitted graph on OpenCL replayed as one prepared enqueue plan: the backend's capture hooks
(hal.Backend.capture/replay, hal/compile/capture.py).

hal's `Executable` already runs a graph without dispatch, but each node still costs a
kernel invocation from Python: every argument set again, output arrays made, plan and
cache lookups. `capture` runs the graph once to warm it (programs built, FFT plans made),
then once more while a `Recording` watches pyopencl on this thread: one clone of each
launched kernel with its arguments set for good, the buffers of every intermediate kept.
`replay` turns that into a `Plan` at its first call and then only rebinds the input
buffers and fresh output buffers (`Kernel.set_arg`) and enqueues the kernels
(`enqueue_nd_range_kernel`): no allocation but the outputs, no wait, no lookup. Inputs
whose layout differs from the capture's are copied into the capture's buffers instead.

The plan is checked before it is trusted: at the first replay, run on the capture's own
inputs, it must give the capture's outputs bit for bit. A graph is refused (hal runs it
uncaptured, with the reason) when the capture moved data (copies, fills, reads: the op
depends on host work), enqueued kernels behind pyopencl's back (VkFFT, a bare enqueue),
returned a buffer no kernel writes or an input's buffer, or its plan's check failed.

`cl_khr_command_buffer`: PoCL 3.0 does not offer it, and pyopencl (2026.1) has no binding
for it; PoCL 3.1's support submits each recorded command as its own enqueue, which would
save argument checks, not the per-command cost that remains here (~10 us per kernel).

Memory: the plan keeps every intermediate buffer of the capture, each its own. A plan
serves one call at a time, as the Executable's shared buffers do.
"""

from __future__ import annotations

import threading

import numpy as np
import pyopencl as cl
import pyopencl._cl as _cl

from hal.compile.capture import CaptureRefused

# pyopencl's enqueue functions that are not a kernel launch, a marker or a barrier: each
# moves or writes data, which a replayed plan would not repeat
_DATA_COMMANDS = tuple(name for name in dir(_cl) if "enqueue" in name and not any(
    word in name for word in ("nd_range_kernel", "marker", "barrier", "wait_for_events")))


class Recording:
    """While entered, what this thread enqueues through pyopencl: `launches` holds each
    kernel launch as (a clone of the kernel with its arguments, global size, local size,
    global offset, the Python arguments), `refused` the first thing a plan cannot repeat."""

    def __init__(self, device):
        self.device = device
        self.launches: list[tuple] = []
        self.refused: str | None = None
        self._thread = threading.get_ident()
        self._raw = 0  # enqueue_nd_range_kernel calls: kernels launched without __call__
        self._saved: dict = {}

    def __enter__(self) -> Recording:
        self._opaque = self.device.opaque_launches
        call, raw = cl.Kernel.__call__, _cl.enqueue_nd_range_kernel
        mine = self._mine

        def kernel_call(kernel, queue, global_size, local_size, *args, global_offset=None,
                        **kwargs):
            event = call(kernel, queue, global_size, local_size, *args,
                         global_offset=global_offset, **kwargs)
            if mine():
                self._raw -= 1
                self._launch(kernel, queue, global_size, local_size, global_offset, args)
            return event

        def bare_launch(*args, **kwargs):
            self._raw += mine()
            return raw(*args, **kwargs)

        self._patch(cl.Kernel, "__call__", kernel_call)
        self._patch(_cl, "enqueue_nd_range_kernel", bare_launch)
        for name in _DATA_COMMANDS:
            self._patch(_cl, name, self._watching(name, getattr(_cl, name)))
        return self

    def _patch(self, owner, name: str, value) -> None:
        """Set owner.name, and pyopencl's own name for the same function, until exit."""
        original = getattr(owner, name)
        for where in (owner, cl):
            if getattr(where, name, None) is original:
                self._saved[(where, name)] = original
                setattr(where, name, value)

    def __exit__(self, *exc) -> None:
        for (owner, name), value in self._saved.items():
            setattr(owner, name, value)
        if self._raw and self.refused is None:
            self.refused = "a kernel was enqueued without pyopencl's Kernel.__call__"
        if self.device.opaque_launches != self._opaque and self.refused is None:
            self.refused = "a library launched kernels pyopencl does not see (VkFFT)"

    def _mine(self) -> bool:
        return threading.get_ident() == self._thread

    def _watching(self, name: str, command):
        def watched(*args, **kwargs):
            if self._mine() and self.refused is None:
                self.refused = f"the graph moves data on the queue ({name.strip('_')})"
            return command(*args, **kwargs)

        return watched

    def _launch(self, kernel, queue, global_size, local_size, offset, args) -> None:
        if queue is not self.device.queue:
            self.refused = self.refused or "a kernel ran on another queue"
            return
        for arg in args:
            if not isinstance(arg, (cl.MemoryObjectHolder, cl.LocalMemory, int, float,
                                    np.generic, type(None))):
                self.refused = self.refused or f"a kernel argument of type {type(arg).__name__}"
        try:
            clone = kernel.clone()  # clCloneKernel (OpenCL 2.1): the arguments set so far
        except cl.Error as e:
            self.refused = self.refused or f"the device cannot clone a kernel ({e})"
            return
        self.launches.append((clone, global_size, local_size, offset, args))


class Plan:
    """The recorded launches of one call, prepared: `run(natives)` rebinds the inputs'
    buffers, allocates the outputs and enqueues every kernel, nothing else."""

    def __init__(self, device, recording: Recording, inputs: list, outputs: list):
        self.device, self.queue = device, device.queue
        self.launches = [(k, g, lo, off) for k, g, lo, off, _ in recording.launches]
        self.offsets = tuple(a.offset for a in inputs)
        position = {id(a.base_data): i for i, a in enumerate(inputs)}
        self.refused = None
        if len(position) < len(inputs):
            self.refused = "two inputs share a buffer"
        slots = {}  # id of an output buffer -> its index among the fresh ones
        self.outputs = []  # per output: (fresh buffer index, shape, dtype, strides, offset)
        self.sizes = []
        for a in outputs:
            key = id(a.base_data)
            if key in position:
                self.refused = "an output is a view of an input's buffer"
            if key not in slots:
                slots[key] = len(self.sizes)
                self.sizes.append(a.base_data.size)
            self.outputs.append((slots[key], a.shape, a.dtype, a.strides, a.offset))
        self.inputs, self.fresh = [], []  # (kernel, argument index, input or output index)
        self.held = []  # the other buffers (intermediates, tables): kept for the plan's life
        for kernel, *_, args in recording.launches:
            for index, arg in enumerate(args):
                if not isinstance(arg, cl.MemoryObjectHolder):
                    continue
                if id(arg) in position:
                    self.inputs.append((kernel, index, position[id(arg)]))
                elif id(arg) in slots:
                    self.fresh.append((kernel, index, slots[id(arg)]))
                else:
                    self.held.append(arg)
        if len({slot for *_, slot in self.fresh}) < len(self.sizes):
            self.refused = self.refused or "an output no kernel touches (empty or host-made)"

    def accepts(self, natives) -> bool:
        """True when the inputs sit where the capture's did: same offsets, own buffers."""
        return (tuple(a.offset for a in natives) == self.offsets
                and len({id(a.base_data) for a in natives}) == len(natives))

    def run(self, natives) -> list:
        """The output natives of the graph (the `node` outputs, in order) for these inputs."""
        device, queue = self.device, self.queue
        buffers = [device.allocate(size) for size in self.sizes]
        for kernel, index, i in self.inputs:
            kernel.set_arg(index, natives[i].base_data)
        for kernel, index, i in self.fresh:
            kernel.set_arg(index, buffers[i])
        enqueue = _cl.enqueue_nd_range_kernel
        for kernel, global_size, local_size, offset in self.launches:
            enqueue(queue, kernel, global_size, local_size, offset, None, False, False)
        return [device.on_buffer(buffers[i], shape, dtype, strides, offset)
                for i, shape, dtype, strides, offset in self.outputs]


class RecordedGraph:
    """What `capture` recorded; its `Plan` made at the first replay."""

    def __init__(self, recording: Recording):
        self.recording, self.plan = recording, None


def capture(device, run) -> RecordedGraph:
    """One call of `run()` recorded after one warm-up call; CaptureRefused naming what a
    plan could not repeat."""
    run()
    with Recording(device) as recording:
        run()
    if recording.refused is not None:
        raise CaptureRefused(f"{device.name}: {recording.refused}")
    return RecordedGraph(recording)


def replay(device, graph: RecordedGraph, copies: list, outputs: list) -> list:
    """The outputs of one run of the plan for the call's inputs (see the module)."""
    fixed = [buffer for _, buffer in copies]
    if graph.plan is None:
        graph.plan = _checked_plan(device, graph.recording, fixed, outputs)
    sources = [source for source, _ in copies]
    if graph.plan.accepts(sources):
        return graph.plan.run(sources)
    for source, buffer in copies:  # at other offsets: into the capture's own (contiguous) buffers
        cl.enqueue_copy(device.queue, buffer.base_data, source.base_data,
                        byte_count=source.nbytes, src_offset=source.offset,
                        dst_offset=buffer.offset)
    return graph.plan.run(fixed)


def _checked_plan(device, recording: Recording, fixed: list, outputs: list) -> Plan:
    """The recording's plan, run once on the capture's inputs (still in `fixed`): it must
    give the capture's `outputs` bit for bit, else CaptureRefused."""
    plan = Plan(device, recording, fixed, outputs)
    if plan.refused is None:
        download = device.download
        replayed = plan.run(fixed)
        if not all(np.array_equal(download(a), download(b), equal_nan=True)
                   for a, b in zip(outputs, replayed, strict=True)):
            plan.refused = "its replay differed from the recorded call"
    if plan.refused is not None:
        raise CaptureRefused(f"{device.name}: {plan.refused}")
    return plan
