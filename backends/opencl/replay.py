"""A jitted graph on OpenCL replayed as one prepared enqueue plan (`Backend.compile`'s answer).

hal's `Executable` already runs a graph without dispatch, but each node still costs a
kernel invocation from Python: every argument set again, output arrays made, plan and
cache lookups. `ReplayedExecutable` is that Executable with one more step: its second call
(the first checks every node) runs while a `Recording` watches pyopencl on this thread,
and what it saw becomes a `Plan`: one clone of each launched kernel with its arguments
set for good, the buffers of every intermediate value kept. A later call only rebinds
the input buffers and fresh output buffers (`Kernel.set_arg`) and enqueues the kernels
(`enqueue_nd_range_kernel`): no allocation but the outputs, no wait, no lookup.

The plan is checked before it is trusted: replayed once on the capture's inputs, it must
give the capture's outputs bit for bit. A call the plan cannot take (inputs at other
offsets or sharing a buffer, inside `hal.placement()`) runs the Executable, as does every
call after a replay that raised. A graph is
never planned (`declined` says why) when a node runs on the host, when the capture moved
data (copies, fills, reads: the op depends on host work), enqueued kernels behind
pyopencl's back (VkFFT, a bare enqueue), or returned a buffer no kernel writes.

Memory: the plan keeps every intermediate buffer of the capture, each its own (hal's
Executable shares buffers by liveness only among the fused groups it preallocates).
Like the Executable's shared buffers, a plan serves one call at a time: calls of one
jitted function from several threads at once need a lock.
"""

from __future__ import annotations

import threading

import numpy as np
import pyopencl as cl
import pyopencl._cl as _cl

from hal import Tensor, dispatch
from hal.compile.executable import Executable
from hal.compile.passes import optimize

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

    def __init__(self, device, recording: Recording, inputs: list, outputs: list,
                 constants: list):
        self.device, self.queue = device, device.queue
        self.launches = [(k, g, lo, off) for k, g, lo, off, _ in recording.launches]
        self.offsets = tuple(a.offset for a in inputs)
        position = {id(a.base_data): i for i, a in enumerate(inputs)}
        self.refused = None
        if len(position) < len(inputs):
            self.refused = "two inputs share a buffer"
        kept = {id(c.base_data) for c in constants}
        slots = {}  # id of an output buffer -> its index among the fresh ones
        self.outputs = []  # per output: (fresh buffer index, shape, dtype, strides, offset)
        self.sizes = []
        for a in outputs:
            key = id(a.base_data)
            if key in position or key in kept:
                self.refused = "an output is an input's or a constant's buffer"
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


class ReplayedExecutable(Executable):
    """hal's Executable of a graph on an OpenCL device, replayed from a `Plan` after its
    second call (see the module's docstring); `declined` says why a graph has none."""

    def __init__(self, graph, device):
        super().__init__(optimize(graph, device), device)
        self.plan: Plan | None = None
        self.declined: str | None = (
            "a node runs on the host (fallback)" if "fallback" in self.how else None)
        self.called = False  # the first call checks every node: the second is recorded

    def __call__(self, *inputs: Tensor) -> list[Tensor]:
        """Output Tensors for input Tensors: by the plan when it takes them."""
        plan, natives = self.plan, [t.native for t in inputs]
        if not dispatch.recording():
            if plan is not None and plan.accepts(natives):
                try:
                    return self._tensors(inputs, plan.run(natives))
                except cl.Error as e:  # the Executable runs it, naming the node that fails
                    self.plan, self.declined = None, f"its replay raised {type(e).__name__}: {e}"
            if plan is None and self.declined is None and self.called:
                return self._capture(inputs, natives)
        self.called = True
        return super().__call__(*inputs)

    def _capture(self, inputs, natives) -> list[Tensor]:
        """The call run while recording; the plan kept if its replay gives the same."""
        with Recording(self.device) as recording:
            outputs = super().__call__(*inputs)
        nodes = [t.native for r, t in zip(self.graph.outputs, outputs, strict=True)
                 if r[0] == "node"]
        plan = Plan(self.device, recording, natives, nodes,
                    [c.native for c in self.graph.constants])
        self.declined = recording.refused or plan.refused
        if self.declined is not None:
            return outputs
        replayed = plan.run(natives)
        download = self.device.download
        if all(np.array_equal(download(a), download(b), equal_nan=True)
               for a, b in zip(nodes, replayed, strict=True)):
            self.plan = plan
            return self._tensors(inputs, replayed)
        self.declined = "its replay differed from the recorded call"
        return outputs

    def _tensors(self, inputs, natives) -> list[Tensor]:
        device, made = self.device, iter(natives)
        return [inputs[r[1]] if r[0] == "input" else self.graph.constants[r[1]]
                if r[0] == "const" else Tensor.wrap(next(made), device)
                for r in self.graph.outputs]
