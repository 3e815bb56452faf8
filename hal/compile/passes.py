"""Graph passes: each takes a Graph and returns a new one that computes the same outputs.

`optimize(graph, device)` runs them in order: `fold_batch_norm` (an inference batch norm
of a convolution's result becomes the convolution's weight and bias), `lower` (composites
the device has no kernel for become their traced decomposition, so their parts can fuse),
`fold_constants` (nodes of constants only are computed once, at compile time),
`eliminate_common` (common subexpressions: the same op of the same operands and
parameters), `eliminate_dead` (nodes no output needs) and `fuse` (groups of elementwise
nodes, optionally feeding one reduction, become one `FUSED` node whose body a backend
compiles as one kernel). Buffer reuse by liveness is the executable's (executable.py).
`split` cuts a graph in two run one after the other (a forward pass, then a backward
pass that needs a cotangent given later).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Collection, Sequence
from dataclasses import replace

import numpy as np

from .. import ops
from ..creation import asarray
from ..dispatch import EAGER, decomposition_of, interpret
from ..ops.collectives import P2P
from ..runtime import dtypes as dt
from ..runtime.errors import HalError, PluginWarning
from .graph import ELEMENTWISE, FUSED, REDUCTIONS, Graph, Node
from .trace import Trace

FOLD_LIMIT = 1 << 16
COMMUNICATING = ("collective", "p2p")  # op families a graph runs as they stand
"""Constant folding keeps results up to this many elements (or no larger than an operand)."""


def optimize(graph: Graph, device=None, fuse_groups: bool = True) -> Graph:
    """The passes in order; `lower` and `fuse` need the device the graph will run on."""
    g = graph
    if device is not None:
        g = lower(fold_batch_norm(g), device)
    g = eliminate_dead(eliminate_common(fold_constants(g)))
    if device is not None and fuse_groups:
        g = eliminate_dead(fuse(g, device))
    return g


class _Rebuild:
    """A new graph built from an old one's parts: node refs of the old graph are remapped."""

    def __init__(self, graph: Graph):
        self.old = graph
        self.nodes: list[Node] = []
        self.constants = list(graph.constants)
        self.map: dict[int, tuple] = {}  # old node index -> ref in the new graph

    def add(self, old_index: int, node: Node) -> None:
        """Append node (inputs remapped) as the new home of old node `old_index`."""
        self.nodes.append(replace(node, inputs=tuple(self._remap(r) for r in node.inputs)))
        self.map[old_index] = ("node", len(self.nodes) - 1)

    def _remap(self, r):
        return self.map[r[1]] if r is not None and r[0] == "node" else r

    def constant(self, tensor) -> tuple:
        """A ref to a (new) constant."""
        self.constants.append(tensor)
        return ("const", len(self.constants) - 1)

    def graph(self) -> Graph:
        """The rebuilt graph (outputs remapped)."""
        return Graph(list(self.old.inputs), self.nodes, self.constants,
                     [self._remap(r) for r in self.old.outputs])


# -- splitting -----------------------------------------------------------------------------------
def split(graph: Graph, later: Collection[int], first_outputs: Sequence[int],
          ) -> tuple[Graph, Graph]:
    """The graph as two that run one after the other, `first` before the inputs `later`
    exist: `first`, over the other inputs, runs only the nodes its outputs `first_outputs`
    need and returns those, then the residuals (the values of its nodes and inputs that
    `second` reads); `second`, over the residuals and then the `later` inputs, runs the
    other nodes and returns the other outputs. A forward pass split from its backward
    returns its value as soon as possible, and between them a caller holds only the
    residuals (the activations the backward reads). HalError for a first output that needs
    a later input."""
    later = sorted(set(later))
    needed: set[tuple] = set()
    for k in first_outputs:
        stack = [graph.outputs[k]]
        while stack:
            r = stack.pop()
            if r is None or r[0] == "const" or r in needed:
                continue
            if r[0] == "input":
                if r[1] in later:
                    raise HalError(f"split: output {k} needs input {r[1]}, a later one, so "
                                   "the first graph cannot return it; return it from the second")
                continue
            needed.add(r)
            stack.extend(graph.nodes[r[1]].inputs)
    firsts = [graph.outputs[k] for k in first_outputs]
    rest = [r for k, r in enumerate(graph.outputs) if k not in set(first_outputs)]
    read = [r for k, node in enumerate(graph.nodes) if ("node", k) not in needed
            for r in node.inputs]
    residuals = list(dict.fromkeys(
        r for r in read + rest
        if r is not None and (r in needed or (r[0] == "input" and r[1] not in later))))
    early = [("input", i) for i in range(len(graph.inputs)) if i not in later]
    return (_part(graph, early, lambda k: ("node", k) in needed, firsts + residuals),
            _part(graph, residuals + [("input", i) for i in later],
                  lambda k: ("node", k) not in needed, rest))


def _part(graph: Graph, inputs: list[tuple], keep, outputs: list[tuple]) -> Graph:
    """A graph over the values `inputs` (refs of `graph`, in order) that runs the nodes
    `keep(k)` selects and returns the values `outputs` (refs of `graph`)."""
    new = {r: ("input", j) for j, r in enumerate(inputs)}

    def remap(r):
        return r if r is None or r[0] == "const" else new[r]

    nodes = []
    for k, node in enumerate(graph.nodes):
        if keep(k):
            nodes.append(replace(node, inputs=tuple(remap(r) for r in node.inputs)))
            new[("node", k)] = ("node", len(nodes) - 1)
    return Graph([graph.meta(r) for r in inputs], nodes, list(graph.constants),
                 [remap(r) for r in outputs])


# -- lowering ------------------------------------------------------------------------------------
def lower(graph: Graph, device) -> Graph:
    """Composites the device has no kernel for, replaced by their traced decompositions."""
    if not any(_needs_lowering(graph, n, device) for n in graph.nodes):
        return graph
    out = _Rebuild(graph)
    for i, node in enumerate(graph.nodes):
        if not _needs_lowering(graph, node, device):
            out.add(i, node)
            continue
        sub = lower(_trace_decomposition(graph, node, device), device)
        local: dict[tuple, tuple] = {}
        operands = [out._remap(r) for r in node.inputs if r is not None]
        for k in range(len(sub.inputs)):
            local[("input", k)] = operands[k]
        for k, c in enumerate(sub.constants):
            local[("const", k)] = out.constant(c)
        for k, n in enumerate(sub.nodes):
            out.nodes.append(replace(n, inputs=tuple(
                None if r is None else local[r] for r in n.inputs), where=node.where))
            local[("node", k)] = ("node", len(out.nodes) - 1)
        out.map[i] = local[sub.outputs[0]]
    return out.graph()


def _needs_lowering(graph: Graph, node: Node, device) -> bool:
    if node.op == FUSED or decomposition_of(node.op) is None:
        return False
    spec = ops.spec(node.op)
    key = node.inputs[spec.key]
    return device.kernel(node.op, graph.meta(key)[1]) is None \
        and node.op not in device.capabilities.unsupported


def _trace_decomposition(graph: Graph, node: Node, device) -> Graph:
    recorder = Trace()
    operands = [None if r is None else recorder.input(*graph.meta(r), device)
                for r in node.inputs]
    with interpret(recorder):
        result = decomposition_of(node.op)(*operands, **node.params)
    return recorder.graph([result])


# -- batch norm into convolution -----------------------------------------------------------------
def fold_batch_norm(graph: Graph) -> Graph:
    """Each batch_norm whose input is a conv read by nothing else, with the conv's weight and
    bias and the norm's statistics, weight and bias all constants (inference mode), folded
    into the conv: weight * s and (bias - mean) * s + beta per channel, s = gamma /
    sqrt(var + eps), computed in float64 and rounded once to the weight's dtype."""
    users, returned = graph.users(), {r[1] for r in graph.outputs if r[0] == "node"}
    folds = {}  # batch_norm index -> conv index
    for j, node in enumerate(graph.nodes):
        source = node.inputs[0] if node.op == "batch_norm" else None
        if source is None or source[0] != "node":
            continue
        i = source[1]
        conv = graph.nodes[i]
        if conv.op == "conv" and users[i] == [j] and i not in returned \
                and dt.is_floating(conv.dtype) and len(conv.inputs) == 3 \
                and conv.params.get("layout") == node.params.get("layout") \
                and all(r is None or r[0] == "const" for r in (*conv.inputs[1:], *node.inputs[1:])):
            folds[j] = i
    if not folds:
        return graph
    out, convs = _Rebuild(graph), set(folds.values())
    for k, node in enumerate(graph.nodes):
        if k in folds:
            conv = graph.nodes[folds[k]]
            weight, bias = _folded(graph, conv, node)
            out.add(k, replace(conv, inputs=(conv.inputs[0], out.constant(weight),
                                              out.constant(bias))))
        elif k not in convs:
            out.add(k, node)
    return eliminate_dead(out.graph())


def _folded(graph: Graph, conv: Node, norm: Node) -> tuple:
    """The (weight, bias) Tensors of conv with norm folded in."""
    w = graph.constants[conv.inputs[1][1]]
    value = [None if r is None else graph.constant_value(r[1]).astype(np.float64)
             for r in (conv.inputs[2], *norm.inputs[1:])]
    bias, mean, var, gamma, beta = value + [None] * (5 - len(value))
    channels = w.shape[0]
    scale = (1.0 if gamma is None else gamma) / np.sqrt(var + norm.params.get("eps", 1e-5))
    shift = ((0.0 if bias is None else bias) - mean) * scale + (0.0 if beta is None else beta)
    weight = w.numpy().astype(np.float64) * scale.reshape(channels, *[1] * (w.ndim - 1))
    return (asarray(weight.astype(w.dtype), device=w.device),
            asarray(np.broadcast_to(shift, (channels,)).astype(w.dtype), device=w.device))


# -- constant folding, CSE, DCE ------------------------------------------------------------------
def fold_constants(graph: Graph) -> Graph:
    """Nodes whose operands are all constants computed now, on the constants' device.

    Collectives and sends/recvs are never folded: they run when the graph runs, on every
    rank together.
    """
    out = _Rebuild(graph)
    for i, node in enumerate(graph.nodes):
        refs = [out._remap(r) for r in node.inputs]
        if node.op == FUSED or not refs or any(r is not None and r[0] != "const" for r in refs) \
                or ops.spec(node.op).family in COMMUNICATING:
            out.add(i, node)
            continue
        args = [None if r is None else out.constants[r[1]] for r in refs]
        largest = max(a.size for a in args if a is not None)
        if math.prod(node.shape) > max(FOLD_LIMIT, largest):
            out.add(i, node)
            continue
        spec = ops.spec(node.op)
        device = next(a.device for a in args if a is not None)
        value, _ = EAGER.process(spec, device, tuple(args), node.params, (node.shape, node.dtype))
        out.map[i] = out.constant(value)
    return out.graph()


def _freeze(params: dict) -> str:
    return repr(sorted(params.items()))


def eliminate_common(graph: Graph) -> Graph:
    """Repeated subexpressions (same op, operands and parameters) computed once; equal 0-d
    constants shared."""
    same_const: dict[tuple, int] = {}
    const_map: dict[int, int] = {}
    for i, c in enumerate(graph.constants):
        if c.ndim == 0:
            key = (c.dtype.name, c.numpy().tobytes())
            const_map[i] = same_const.setdefault(key, i)

    def rename(r):
        if r is not None and r[0] == "const" and r[1] in const_map:
            return ("const", const_map[r[1]])
        return r

    out = _Rebuild(graph)
    seen: dict[tuple, tuple] = {}
    for i, node in enumerate(graph.nodes):
        node = replace(node, inputs=tuple(rename(r) for r in node.inputs))
        key = (node.op, tuple(out._remap(r) for r in node.inputs), _freeze(node.params))
        if node.op in P2P:  # each send and recv is a message of its own
            out.add(i, node)
            continue
        if key in seen:
            out.map[i] = seen[key]
            continue
        out.add(i, node)
        seen[key] = out.map[i]
    rebuilt = out.graph()
    rebuilt.outputs = [rename(r) for r in rebuilt.outputs]
    return rebuilt


def eliminate_dead(graph: Graph) -> Graph:
    """Only the nodes and constants the outputs depend on, and the sends and recvs (they
    communicate whether or not their results are read); inputs stay: they are the
    signature."""
    live = set()
    stack = [r[1] for r in graph.outputs if r[0] == "node"]
    stack += [i for i, node in enumerate(graph.nodes) if node.op in P2P]
    while stack:
        i = stack.pop()
        if i not in live:
            live.add(i)
            stack.extend(r[1] for r in graph.nodes[i].inputs if r is not None and r[0] == "node")
    used_consts = sorted({r[1] for i in live for r in graph.nodes[i].inputs
                          if r is not None and r[0] == "const"}
                         | {r[1] for r in graph.outputs if r[0] == "const"})
    const_index = {old: new for new, old in enumerate(used_consts)}
    node_index: dict[int, int] = {}

    def rename(r):
        if r is None or r[0] == "input":
            return r
        if r[0] == "const":
            return ("const", const_index[r[1]])
        return ("node", node_index[r[1]])

    nodes = []
    for i, node in enumerate(graph.nodes):
        if i in live:
            nodes.append(replace(node, inputs=tuple(rename(r) for r in node.inputs)))
            node_index[i] = len(nodes) - 1
    return Graph(list(graph.inputs), nodes, [graph.constants[i] for i in used_consts],
                 [rename(r) for r in graph.outputs])


# -- fusion --------------------------------------------------------------------------------------
def fuse(graph: Graph, device=None) -> Graph:
    """Elementwise nodes merged into their only consumer's group; a group is one FUSED node.

    A group is a tree of elementwise nodes whose inner results nothing else reads, rooted
    at an elementwise node or at a reduction (sum/max/min) of one (the prologue). A
    reduction read only by an elementwise group of its own result's shape joins that
    group as well (the epilogue: `sum(x * x) / n`), its prologue with it. Graph outputs and
    values read twice end a group. 0-d constants move into the body. Given a device, a
    group its backend declines to compile (`Backend.compile_fused` gives None) is tried
    without its epilogue, and stays as its nodes if declined again.
    """
    users = graph.users()
    outputs = {r[1] for r in graph.outputs if r[0] == "node"}
    root_of: list[int | None] = [None] * len(graph.nodes)
    for i in reversed(range(len(graph.nodes))):
        node = graph.nodes[i]
        if node.op in ELEMENTWISE:
            readers = set(users[i])
            if i not in outputs and len(readers) == 1:
                (j,) = readers
                if root_of[j] is not None:
                    root_of[i] = root_of[j]
                    continue
            root_of[i] = i
        elif node.op in REDUCTIONS and _prologue(graph, node, users, outputs):
            root_of[i] = i
    reduction_of = _epilogues(graph, root_of, users, outputs)
    members: dict[int, list[int]] = {}
    for k, root in enumerate(root_of):
        if root is not None:
            members.setdefault(root, []).append(k)
    out = _Rebuild(graph)

    def group(nodes: list[int], root: Node) -> bool:
        body, operands = _body(graph, nodes, out)
        if device is not None and compiled_group(body, device) is None:
            return False
        kind = "reduce" if any(n.op in REDUCTIONS for n in body.nodes) else "elementwise"
        out.nodes.append(Node(FUSED, tuple(operands), {"kind": kind, "body": body},
                              root.shape, root.dtype, root.where))
        out.map[nodes[-1]] = ("node", len(out.nodes) - 1)
        return True

    absorbed = set(reduction_of.values())
    for i, node in enumerate(graph.nodes):
        if i in absorbed:
            continue  # built with the group whose epilogue reads it
        if root_of[i] is None:
            out.add(i, node)
        elif root_of[i] == i:
            r = reduction_of.get(i)
            if r is not None and group(members.get(r, [r]) + members[i], node):
                continue
            parts = ([] if r is None else [members.get(r, [r])]) + [members[i]]
            for part in parts:
                lone_reduction = len(part) == 1 and graph.nodes[part[0]].op in REDUCTIONS
                if lone_reduction or not group(part, graph.nodes[part[-1]]):
                    for k in part:
                        out.add(k, graph.nodes[k])
    return out.graph()


def _epilogues(graph: Graph, root_of: list, users, outputs) -> dict[int, int]:
    """Elementwise group root -> the reduction its group reads as an epilogue."""
    found: dict[int, int] = {}
    for r, node in enumerate(graph.nodes):
        if node.op not in REDUCTIONS or r in outputs or root_of[r] not in (None, r):
            continue
        readers = set(users[r])
        if len(readers) != 1:
            continue
        g = root_of[readers.pop()]
        if g is not None and g not in found and graph.nodes[g].op in ELEMENTWISE \
                and graph.nodes[g].shape == node.shape:
            found[g] = r
    return found


def compiled_group(body: Graph, device):
    """The backend's compiled function for a fused body, or None: declined, or the backend's
    compiler failed (a PluginWarning naming it; the group's nodes then run one by one)."""
    try:
        return device.backend.compile_fused(body, device)
    except Exception as e:
        ops_ = ",".join(n.op for n in body.nodes)
        warnings.warn(f"{device.backend.name}: compile_fused failed for the group ({ops_}) "
                      f"with {type(e).__name__}: {e}; its nodes run one by one (a fault of "
                      "the backend)", PluginWarning, stacklevel=2)
        return None


def _prologue(graph: Graph, node: Node, users, outputs) -> bool:
    r = node.inputs[0]
    if r[0] != "node":
        return False
    k = r[1]
    return graph.nodes[k].op in ELEMENTWISE and k not in outputs and len(set(users[k])) == 1


def _body(graph: Graph, members: list[int], out: _Rebuild) -> tuple[Graph, list]:
    """The body graph of a group and the fused node's operands (refs of the new graph)."""
    inside = {k: n for n, k in enumerate(members)}
    operands: list = []
    inputs: list = []
    constants: list = []
    seen: dict[tuple, tuple] = {}
    nodes = []
    for k in members:
        node = graph.nodes[k]
        refs = []
        for r in node.inputs:
            if r is None:
                refs.append(None)
            elif r[0] == "node" and r[1] in inside:
                refs.append(("node", inside[r[1]]))
            elif r in seen:
                refs.append(seen[r])
            elif r[0] == "const" and graph.constants[r[1]].ndim == 0:
                constants.append(graph.constants[r[1]])
                refs.append(seen.setdefault(r, ("const", len(constants) - 1)))
            else:
                operands.append(out._remap(r))
                inputs.append(graph.meta(r))
                refs.append(seen.setdefault(r, ("input", len(inputs) - 1)))
        nodes.append(replace(node, inputs=tuple(refs)))
    return Graph(inputs, nodes, constants, [("node", len(nodes) - 1)]), operands
