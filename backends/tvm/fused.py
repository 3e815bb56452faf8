"""Fused groups of a graph as one TE kernel each (`TVMBackend.compile_fused`).

An elementwise body becomes one expression per output element: each node the expression
its own kernel computes (elementwise.py, rounding to the node's dtype as it does), the
inputs read under numpy broadcasting, 0-d constants as literals, each node bound by a Let
so that it is computed once. A reduce body's elementwise prologue becomes one stage that
reduce.py's reduction reads; the default schedule inlines it into the reduction's loop.
Its epilogue (the nodes after the reduction) is one more stage over the reduction's
result, computed after the reduction (a vectorised loop of its own) in the same kernel.
Kernels compile through the device's Compiler: cached in memory and as shared libraries
on disk under the body's key, this backend's source and the target.

Declined (None: the group runs node by node): dtypes the device lacks (complex), ops
without an element expression, (op, dtype) pairs without a kernel (integer power),
bodies whose operand dtypes are not already promoted, a second reduction, and an
epilogue that reads the prologue.
"""

from __future__ import annotations

from collections.abc import Callable

from tvm import te, tirx

from hal import ops, shapes
from hal.compile.graph import REDUCTIONS, Graph, Node

from . import elementwise as ew
from . import reduce
from . import te_util as tu

ELEMENTWISE = frozenset((*ew.UNARY, *ew.BINARY, "where", "astype"))
"""Body ops with an element expression."""


class Body:
    """A body as a kernel parameter: equal, hashed and printed as its key."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.key = graph.key()

    def __eq__(self, other) -> bool:
        return isinstance(other, Body) and other.key == self.key

    def __hash__(self) -> int:
        return hash(self.key)

    def __repr__(self) -> str:
        return f"Body({self.key})"


def compile_fused(graph: Graph, device) -> Callable | None:
    """One compiled kernel for a fused group on a TVM device, or None to decline.

    The function takes the operands' native arrays and writes the result into `out`
    (allocated when not given).
    """
    if not fusable(graph, device):
        return None
    compiled = device.compiler.kernel("fused", build, tuple(graph.inputs),
                                      (("body", Body(graph)),))
    function, shape, dtype = compiled.function, compiled.shape, compiled.dtype

    def fused(*arrays, out=None):
        if out is None:
            out = device.empty(shape, dtype)
        function(*[a.tensor for a in arrays], out.tensor)
        return out

    fused.takes_out = True
    return fused


def fusable(graph: Graph, device) -> bool:
    """True if every value's dtype lives on the device, every node has an expression and a
    kernel for its dtype, operand dtypes are promoted, the body's one output is its last
    node, and a reduction is its only one, its epilogue reading no node before it."""
    last = len(graph.nodes) - 1
    if graph.outputs != [("node", last)] or any(c.shape != () for c in graph.constants):
        return False
    values = [*graph.inputs, *((n.shape, n.dtype) for n in graph.nodes),
              *((c.shape, c.dtype) for c in graph.constants)]
    if not all(device.supports_dtype(d) for _, d in values):
        return False
    at = reduction_index(graph)
    for k, node in enumerate(graph.nodes):
        if not (node.op in ELEMENTWISE or k == at):
            return False
        if any(r is None or (r[0] == "node" and r[1] >= k) for r in node.inputs):
            return False
        if at is not None and k > at and any(r[0] == "node" and r[1] < at for r in node.inputs):
            return False
        operands = [graph.meta(r)[1] for r in node.inputs]
        if device.kernel(node.op, operands[ops.spec(node.op).key]) is None:
            return False
        if not _promoted(node, operands):
            return False
    return True


def _promoted(node: Node, operands: list) -> bool:
    """True if the node's operand and result dtypes are as its expression expects."""
    if node.op in ew.BINARY:
        result = "bool" if node.op in ew.COMPARISONS else operands[0].name
        return operands[0] == operands[1] and node.dtype.name == result
    if node.op == "where":
        return operands[0].name == "bool" and operands[1] == operands[2] == node.dtype
    if node.op == "astype":
        return node.params["dtype"] == node.dtype
    return node.op in REDUCTIONS or operands[0] == node.dtype


def reduction_index(graph: Graph) -> int | None:
    """The index of the body's (first) reduction node, or None."""
    return next((k for k, n in enumerate(graph.nodes) if n.op in REDUCTIONS), None)


def build(*holders: te.Tensor, body: Body) -> te.Tensor:
    """The TE of a body over placeholders for its inputs."""
    graph = body.graph
    last, at = graph.nodes[-1], reduction_index(graph)
    out = ("node", len(graph.nodes) - 1)
    if at is None:
        return te.compute(last.shape, lambda *i: element(graph, out, holders, i, last.shape),
                          name="out")
    red = graph.nodes[at]
    (ref,) = red.inputs
    shape = graph.meta(ref)[0]
    x = te.compute(shape, lambda *i: element(graph, ref, holders, i, shape), name="prologue")
    axes = shapes.axes(red.op, red.params.get("axis"), len(shape))
    total = reduce.reduction(x, op=red.op, axes=tuple(sorted(axes)),
                             keepdims=red.params.get("keepdims", False), out=red.dtype.name)
    if at == len(graph.nodes) - 1:
        return total
    return te.compute(last.shape, lambda *i: element(graph, out, holders, i, last.shape,
                                                     (at, total)), name="epilogue")


def element(graph: Graph, ref, holders, index: tuple, shape: tuple, reduced=None):
    """The expression of `ref`'s element at `index` of `shape` (the shape every value it
    reads broadcasts to): each node before it bound by a Let, so that an expression that
    reads its operand twice (maximum, tanh) computes it once. For an epilogue's node,
    `reduced` is (the reduction's index, its result tensor): the nodes from there on."""
    first, total = reduced if reduced is not None else (0, None)
    upto = ref[1] + 1 if ref[0] == "node" else 0
    lets = {}

    def value(r):
        kind, i = r
        if kind == "input":
            return tu.at(holders[i], index, shape)
        if kind == "const":
            return tirx.const(graph.constant_value(i).item(), graph.constants[i].dtype.name)
        return lets[i][0]

    for k in range(first, upto):
        node = graph.nodes[k]
        expr = tu.at(total, index, shape) if k == first and total is not None else \
            _node_value(node, [value(r) for r in node.inputs])
        lets[k] = (tirx.Var(f"v{k}", node.dtype.name), expr)
    result = value(ref)
    for var, expr in reversed(lets.values()):
        result = tirx.Let(var, expr, result)
    return result


def _node_value(node: Node, operands: list):
    if node.op in ew.UNARY:
        return ew.unary_value(node.op, *operands)
    if node.op in ew.BINARY:
        return ew.binary_value(node.op, *operands)
    if node.op == "where":
        return ew.where_value(*operands)
    return ew.astype_value(operands[0], node.dtype.name)
