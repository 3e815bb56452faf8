"""A hal graph's ONNX model whose float16 values round between nodes as eager rounds them.

ONNX Runtime's CPU EP has float16 kernels for few ops: it runs the others in float32
between Casts it inserts, then removes every Cast pair between two such nodes (its
InsertCastTransformer), so a chain of float16 nodes computes in float32 and rounds once at
its end. Eager runs each node as a one-node session that rounds its result to float16, so
a value that overflows or rounds between two nodes would differ (inf against a finite
number, argmax ties). No session option turns that removal off, and it sees through any
Cast or float op put between the nodes; it does not see through BitCast (opset 26). So
each float16 value one hal node passes to another goes through a BitCast to int16 and
back, where ONNX Runtime must hold it as float16. An onnxruntime older than opset 26 has
no BitCast: such a graph is refused (UnsupportedOp, saying why), and the backend replays
it node by node, each one-node session rounding its float16 result as eager does.
"""

from __future__ import annotations

import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

import hal
from hal import dtypes as dt
from hal.compile.graph import Graph
from hal.onnx import OPSET as DEFAULT_OPSET
from hal.onnx import to_onnx

from . import formats

OPSET = 26  # the first with BitCast


def export(graph: Graph) -> onnx.ModelProto:
    """The graph's ONNX model (`hal.onnx.to_onnx`, at an opset the installed onnxruntime
    loads), each float16 value that one node passes to another rounded to float16 on the way
    (at opset 26 when there is one; UnsupportedOp where onnxruntime has no opset 26)."""
    passed = _passed_on(graph)
    accepted = formats.accepted()
    if not passed:
        return to_onnx(graph, opset=min(DEFAULT_OPSET, accepted.opset))
    if accepted.opset < OPSET:
        raise hal.UnsupportedOp(
            f"onnxruntime {ort.__version__} loads opset {accepted.opset} at most: no BitCast "
            f"(opset {OPSET}) to round the float16 values this graph passes between nodes, "
            "which one session would otherwise keep in float32; each node runs as its own "
            "session instead (an onnxruntime that loads opset 26 runs it as one session)")
    model = to_onnx(graph, opset=OPSET)
    _round_between(model.graph, passed)
    return model


def _passed_on(graph: Graph) -> set[int]:
    """The indices of the float16 nodes whose result another node reads."""
    return {i for node in graph.nodes for kind, i in filter(None, node.inputs)
            if kind == "node" and graph.nodes[i].dtype == dt.float16}


def _hal_node(onnx_node: onnx.NodeProto) -> int | None:
    """The index of the hal node an ONNX node was exported from ("n<index>.<op>/..."), or
    None (graph outputs' Identity nodes)."""
    scope = onnx_node.name.split("/")[0]
    head = scope.split(".")[0]
    return int(head[1:]) if head[:1] == "n" and head[1:].isdigit() else None


def _round_between(graph: onnx.GraphProto, passed: set[int]) -> None:
    """Route every value a node of `passed` gives to another hal node's ONNX nodes through
    BitCast to int16 and back, inserted right after the node that makes the value."""
    made_by = {value: _hal_node(node) for node in graph.node for value in node.output}
    nodes, rounded = list(graph.node), {}
    for node in nodes:
        here = _hal_node(node)
        for k, value in enumerate(node.input):
            source = made_by.get(value)
            if here is None or source not in passed or source == here:
                continue
            if value not in rounded:
                bits, back = f"{value}.bits", f"{value}.rounded"
                rounded[value] = [
                    helper.make_node("BitCast", [value], [bits], to=TensorProto.INT16,
                                     name=f"n{source}.round/BitCast"),
                    helper.make_node("BitCast", [bits], [back], to=TensorProto.FLOAT16,
                                     name=f"n{source}.round/BitCast.1")]
            node.input[k] = rounded[value][-1].output[0]
    order = []
    for node in nodes:
        order.append(node)
        order.extend(pair for value in node.output for pair in rounded.get(value, ()))
    del graph.node[:]
    graph.node.extend(order)
