"""Graphs: the ops a traced function runs, as data that passes rewrite and backends compile.

A `Graph` holds its inputs' (shape, dtype), a list of `Node`s in execution order, the
concrete tensors it captured (`constants`) and the refs of its outputs. A node names
an op of the set, its operands as refs (("input", i), ("node", i), ("const", i) or None
for an absent option), its keyword parameters and the (shape, dtype) of its result.

The fusion pass (`hal.compile.passes.fuse`) replaces groups of elementwise nodes with one node
of op `FUSED` whose `params["body"]` is a Graph of its own: the group's nodes, its
operands as the body's inputs (in the fused node's operand order), 0-d scalars as
body constants, and one output. A backend compiles a body with `Backend.compile_fused`.

    import hal
    g = hal.jit(f).graph(x)
    print(g)                  # readable text, one line per node (as a jaxpr)
    hal.Graph.from_json(g.to_json(), device=x.device)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from .. import ops
from ..dispatch import call
from ..runtime import dtypes as dt
from ..runtime.errors import HalError
from ..runtime.registry import resolve_device
from ..tensor import Tensor

FUSED = "fused"
"""The op name of a fused group: params["body"] is its Graph, params["kind"] says what
it is: "elementwise" (every body node elementwise) or "reduce" (one reduction, sum, max
or min, after the elementwise nodes it reads and before any that read its result)."""

ELEMENTWISE = frozenset(
    s.name for s in ops.specs()
    if s.family in ("unary", "binary", "where", "cast", "complex") and s.kind != ops.COMPOSITE
)
"""Ops that map operand elements to result elements one to one (operands broadcast)."""

REDUCTIONS = frozenset(("sum", "max", "min"))
"""Reductions a fused group may end with (params: axis, a tuple of ints or None; keepdims)."""

Ref = tuple  # ("input" | "node" | "const", index)


@dataclass(frozen=True)
class Node:
    """One op of a graph: operand refs, keyword parameters, result shape and dtype.

    `where` is the user's source line that called the op ("file.py:12"), for messages.
    """

    op: str
    inputs: tuple[Ref | None, ...]
    params: dict
    shape: tuple
    dtype: np.dtype
    where: str = field(default="", compare=False)


@dataclass
class Graph:
    """A function as data: inputs (shape, dtype), nodes in order, constants, output refs."""

    inputs: list[tuple[tuple, np.dtype]]
    nodes: list[Node]
    constants: list[Tensor]
    outputs: list[Ref]

    # -- reading ----------------------------------------------------------------------
    def meta(self, ref: Ref) -> tuple[tuple, np.dtype]:
        """(shape, dtype) of the value a ref names."""
        kind, i = ref
        if kind == "input":
            return self.inputs[i]
        if kind == "node":
            return self.nodes[i].shape, self.nodes[i].dtype
        c = self.constants[i]
        return tuple(c.shape), c.dtype

    def constant_value(self, i: int) -> np.ndarray:
        """Constant i as a host numpy array (a 0-d one for a scalar: inline it as a literal)."""
        return self.constants[i].numpy()

    def users(self) -> list[list[int]]:
        """For each node, the indices of the nodes that read its result."""
        found: list[list[int]] = [[] for _ in self.nodes]
        for j, node in enumerate(self.nodes):
            for ref in node.inputs:
                if ref is not None and ref[0] == "node":
                    found[ref[1]].append(j)
        return found

    def op_counts(self) -> dict[str, int]:
        """Nodes per op (a fused node counted as "fused")."""
        counts: dict[str, int] = {}
        for node in self.nodes:
            counts[node.op] = counts.get(node.op, 0) + 1
        return counts

    def key(self) -> str:
        """A hash of what the graph computes (ops, params, shapes, dtypes, constant values):
        equal keys compile to the same code."""
        import hashlib  # here, not at import: hashlib's OpenSSL is ~3 MB of start-up

        data = self._to_dict()
        for n in data["nodes"]:
            n.pop("where")
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:24]

    # -- running ----------------------------------------------------------------------
    def run(self, *inputs: Tensor) -> list[Tensor]:
        """The outputs, computed op by op through hal's dispatch (every interpreter on the
        stack sees each op: autodiff differentiates it, a trace records it)."""
        if len(inputs) != len(self.inputs):
            raise HalError(f"graph: {len(inputs)} inputs given, it takes {len(self.inputs)}")
        values: list = []

        def get(ref):
            if ref is None:
                return None
            kind, i = ref
            return inputs[i] if kind == "input" else values[i] if kind == "node" \
                else self.constants[i]

        for node in self.nodes:
            args = [get(r) for r in node.inputs]
            if node.op == FUSED:
                values.append(node.params["body"].run(*args)[0])
            else:
                values.append(call(ops.spec(node.op), *args, **node.params))
        return [get(r) for r in self.outputs]

    # -- text -------------------------------------------------------------------------
    def __str__(self) -> str:
        return "\n".join(self._lines(""))

    def _lines(self, indent: str) -> list[str]:
        args = ", ".join(f"{_name(('input', i))}:{_type(s, d)}"
                         for i, (s, d) in enumerate(self.inputs))
        lines = [f"{indent}graph({args}) {{"]
        for i, c in enumerate(self.constants):
            lines.append(f"{indent}  {_name(('const', i))}:{_type(c.shape, c.dtype)} = "
                         f"{_short(c)}")
        for i, node in enumerate(self.nodes):
            operands = ", ".join("None" if r is None else _name(r) for r in node.inputs)
            params = {k: v for k, v in node.params.items() if k != "body"}
            shown = "".join(f", {k}={_param_text(v)}" for k, v in params.items())
            lines.append(f"{indent}  {_name(('node', i))}:{_type(node.shape, node.dtype)} = "
                         f"{node.op}({operands}{shown})")
            if "body" in node.params:
                lines.extend(node.params["body"]._lines(indent + "    "))
        lines.append(f"{indent}  return {', '.join(_name(r) for r in self.outputs)}")
        lines.append(f"{indent}}}")
        return lines

    # -- JSON -------------------------------------------------------------------------
    def to_json(self) -> str:
        """The graph as JSON text (constants base64-encoded); `from_json` reads it back."""
        return json.dumps(self._to_dict(), separators=(",", ":"))

    def _to_dict(self) -> dict:
        return {
            "format": "hal.graph/1",
            "inputs": [[list(s), d.name] for s, d in self.inputs],
            "constants": [_encode(c.numpy()) for c in self.constants],
            "nodes": [{"op": n.op, "inputs": [None if r is None else list(r) for r in n.inputs],
                       "params": {k: _param_json(v) for k, v in n.params.items()},
                       "shape": list(n.shape), "dtype": n.dtype.name, "where": n.where}
                      for n in self.nodes],
            "outputs": [list(r) for r in self.outputs],
        }

    @classmethod
    def from_json(cls, text: str, device) -> Graph:
        """A graph written by `to_json`, its constants uploaded to `device`."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise HalError(f"graph JSON: not JSON ({e}); write it with Graph.to_json") from None
        if not isinstance(data, dict) or data.get("format") != "hal.graph/1":
            raise HalError("graph JSON: no 'format': 'hal.graph/1' field; write it with "
                           "Graph.to_json")
        return cls._from_dict(data, device)

    @classmethod
    def _from_dict(cls, data: dict, device) -> Graph:
        device = resolve_device(device)
        try:
            nodes = []
            for n in data["nodes"]:
                if n["op"] != FUSED:
                    ops.spec(n["op"])
                params = {k: _param_from_json(v, device) for k, v in n["params"].items()}
                nodes.append(Node(n["op"], tuple(None if r is None else tuple(r)
                                                 for r in n["inputs"]), params,
                                  tuple(n["shape"]), dt.dtype(n["dtype"]), n.get("where", "")))
            return cls([(tuple(s), dt.dtype(d)) for s, d in data["inputs"]], nodes,
                       [Tensor.from_host(_decode(c), device) for c in data["constants"]],
                       [tuple(r) for r in data["outputs"]])
        except (KeyError, TypeError, ValueError) as e:
            raise HalError(f"graph JSON: malformed ({type(e).__name__}: {e}); write it with "
                           "Graph.to_json") from None


# -- text and JSON helpers ----------------------------------------------------------------
_PREFIX = {"input": "%in", "node": "%", "const": "%c"}


def _name(ref: Ref) -> str:
    return f"{_PREFIX[ref[0]]}{ref[1]}"


def _type(shape, dtype) -> str:
    return f"{dtype.name}[{','.join(map(str, shape))}]"


def _short(c: Tensor) -> str:
    if c.size <= 4:
        return np.array2string(c.numpy().reshape(-1), separator=",")
    return f"<{c.size} values>"


def _param_text(v) -> str:
    return v.name if isinstance(v, np.dtype) else repr(v)


def _param_json(v):
    if isinstance(v, Graph):
        return {"graph": v._to_dict()}
    if isinstance(v, np.dtype):
        return {"dtype": v.name}
    if isinstance(v, tuple):
        return {"tuple": [_param_json(x) for x in v]}
    return v


def _param_from_json(v, device):
    if isinstance(v, dict):
        if "graph" in v:
            return Graph._from_dict(v["graph"], device)
        if "dtype" in v:
            return dt.dtype(v["dtype"])
        if "tuple" in v:
            return tuple(_param_from_json(x, device) for x in v["tuple"])
    if isinstance(v, list):
        return [_param_from_json(x, device) for x in v]
    return v


def _encode(a: np.ndarray) -> dict:
    import base64

    data = np.ascontiguousarray(a).view(np.uint8).tobytes() if a.size else b""
    return {"dtype": a.dtype.name, "shape": list(a.shape),
            "data": base64.b64encode(data).decode("ascii")}


def _decode(c: dict) -> np.ndarray:
    import base64

    raw = base64.b64decode(c["data"])
    dtype = dt.dtype(c["dtype"])
    return np.frombuffer(raw, dtype=dtype).reshape(c["shape"]).copy()
