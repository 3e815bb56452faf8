"""Tracing: run a Python function over symbolic values and record the ops it calls.

`trace(fn, *args)` pushes a `Trace` interpreter on the dispatch stack and calls fn with
`Tracer`s in place of its tensor arguments. Every op fn calls is prepared as usual
(devices, promotion, the op's shape/dtype rule) and then recorded as a `graph.Node`
instead of run; its result is a Tracer that carries only shape, dtype and device.
Composites are recorded whole (a backend may fuse or decompose them later). Concrete
tensors fn touches (captured values, scalar constants) become the trace's constants.
`Trace.graph(outputs)` is the recorded function as a `graph.Graph`.

A Tracer has no values: converting one to numpy, a Python number or a bool (`if x > 0:`)
is a HalError naming the op that made it and the source lines involved, since the branch
taken would depend on data the trace does not have.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field

from .. import ops
from ..dispatch import Interpreter, interpret
from ..runtime.errors import HalError
from ..tensor import Tensor
from .graph import Graph, Node

_OWN = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # hal/


def user_line() -> str:
    """'file.py:12' of the innermost caller outside the hal package ('' if none)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_OWN):
        frame = frame.f_back
    if frame is None:
        return ""
    return f"{os.path.relpath(frame.f_code.co_filename)}:{frame.f_lineno}"


class Tracer(Tensor):
    """A symbolic tensor of a trace: shape, dtype and device, and the node that makes it."""

    __slots__ = ("node", "trace")

    @classmethod
    def _make(cls, trace: Trace, node: int, shape: tuple, dtype, device) -> Tracer:
        t = object.__new__(cls)
        t.native = None
        t.trace, t.node = trace, node
        t.shape, t.dtype, t.device = shape, dtype, device
        return t

    def numpy(self):
        """Refused: a traced value has no data while the function is being traced."""
        if self.node < 0:
            made_by = "an input"
        else:
            node = self.trace.nodes[self.node]
            made_by = f"op {node.op!r}" + (f" at {node.where}" if node.where else "")
        here = user_line()
        raise HalError(
            f"a traced {self.dtype.name} value of shape {self.shape} (made by {made_by}) has "
            f"no data while the function is traced{f' (used at {here})' if here else ''}: "
            "Python control flow, .numpy(), .item() or bool() on it cannot be recorded; use "
            "hal.where for data-dependent choices, or mark the argument static "
            "(hal.jit(f, static_argnums=...))"
        )

    def __repr__(self) -> str:
        return f"Tracer({self.dtype.name}{self.shape}, device={self.device.name})"


@dataclass(eq=False)
class Trace(Interpreter):
    """Records every op as a Node and answers with Tracers (the innermost interpreter)."""

    inputs: list[Tracer] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)
    constants: list[Tensor] = field(default_factory=list)

    def input(self, shape: tuple, dtype, device) -> Tracer:
        """A new symbolic input of the traced function."""
        tracer = Tracer._make(self, -1 - len(self.inputs), tuple(shape), dtype, device)
        self.inputs.append(tracer)
        return tracer

    def process(self, spec: ops.OpSpec, device, args, params, out):
        """Record the op and return a Tracer of the shape and dtype its rule computed."""
        refs = tuple(None if a is None else self.ref(a) for a in args)
        self.nodes.append(Node(spec.name, refs, dict(params), tuple(out[0]), out[1],
                               user_line()))
        return Tracer._make(self, len(self.nodes) - 1, tuple(out[0]), out[1], device), "traced"

    def ref(self, value: Tensor) -> tuple[str, int]:
        """How nodes refer to a value: an input, a node's result, or a (concrete) constant."""
        if isinstance(value, Tracer) and value.trace is self:
            return ("input", -1 - value.node) if value.node < 0 else ("node", value.node)
        if isinstance(value, Tracer):
            raise HalError(f"a value of another trace ({value!r}) reached this one; a traced "
                           "function must not keep tracers between calls")
        for i, c in enumerate(self.constants):
            if c is value:
                return ("const", i)
        self.constants.append(value)
        return ("const", len(self.constants) - 1)

    def graph(self, outputs: list[Tensor]) -> Graph:
        """The recorded function as a Graph returning `outputs` (tracers or concrete tensors)."""
        refs = [self.ref(o) for o in outputs]
        return Graph([(t.shape, t.dtype) for t in self.inputs], list(self.nodes),
                     list(self.constants), refs)


def trace(fn, *args, **kwargs) -> tuple[Trace, object]:
    """Trace fn over the Tensor arguments: (the Trace, fn's result with Tracers in it).

    Tensor arguments become symbolic inputs (same shape, dtype and device); other
    arguments are passed as they are.
    """
    recorder = Trace()
    symbolic = [recorder.input(a.shape, a.dtype, a.device) if isinstance(a, Tensor) else a
                for a in args]
    with interpret(recorder):
        result = fn(*symbolic, **kwargs)
    return recorder, result
