"""What the OpenCL and CUDA backends' generated kernels for fused groups share.

`layout(body)` reads a fused group's body as a kernel sees it (the shape its work-items
cover, the reduction and its axes, the epilogue after it) or declines it; `offsets`
writes the broadcast index arithmetic specialised to the body's shapes. The arithmetic
is a list of assignments (name, expression) over non-negative integers with + * / %:
valid C and OpenCL C, and Python once / is read as //.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hal import dtypes as dt
from hal import shapes
from hal.compile.graph import ELEMENTWISE, REDUCTIONS, Graph, Node


@dataclass(frozen=True)
class Layout:
    """A fused body as one kernel computes it.

    Every value up to the reduction is computed at positions of `shape` (the output's
    shape, or the reduction's input shape for a reduce body): operands and smaller nodes
    broadcast to it. `reduction` is the reduce node or None; `kept` and `reduced` split
    the axes of `shape` (all kept for an elementwise body). `epilogue` are the indices of
    the nodes after the reduction, computed once per output element at the reduction's
    result shape from its value, each other and inputs broadcasting to that shape.
    `loaded` and `epilogue_loaded` are the inputs read at positions of `shape` and of the
    result.
    """

    shape: tuple
    reduction: Node | None
    kept: tuple[int, ...]
    reduced: tuple[int, ...]
    epilogue: tuple[int, ...]
    loaded: tuple[int, ...]
    epilogue_loaded: tuple[int, ...]


def layout(body: Graph) -> Layout | None:
    """The layout of a fused body, or None for a body these kernels do not take: one node
    output that is the last node, elementwise nodes and at most one sum/max/min (an
    epilogue after it reading no node before it and of the reduction's result shape), 0-d
    constants, shapes that broadcast to where they are computed, and integer powers only by
    a non-negative constant (the op refuses negative ones: a kernel could not say so)."""
    nodes = body.nodes
    if not nodes or body.outputs != [("node", len(nodes) - 1)]:
        return None
    if any(c.shape != () for c in body.constants):
        return None
    at = [k for k, n in enumerate(nodes) if n.op in REDUCTIONS]
    if len(at) > 1 or any(n.op not in ELEMENTWISE | REDUCTIONS for n in nodes):
        return None
    if any(ref is None for n in nodes for ref in n.inputs):
        return None
    if any(n.op == "power" and dt.is_integer(n.dtype) and not _nonnegative_constant(body, n)
           for n in nodes):
        return None
    if not at:
        shape = tuple(nodes[-1].shape)
        every = tuple(range(len(body.inputs)))
        found = Layout(shape, None, tuple(range(len(shape))), (), (), every, ())
        return found if _computable(body, nodes, found.loaded, shape) else None
    r = at[0]
    last, epilogue = nodes[r], nodes[r + 1:]
    shape = tuple(body.meta(last.inputs[0])[0])
    reduced = shapes.axes(last.op, last.params.get("axis"), len(shape))
    kept = tuple(a for a in range(len(shape)) if a not in reduced)
    found = Layout(shape, last, kept, reduced, tuple(range(r + 1, len(nodes))),
                   _reads(nodes[:r + 1]), _reads(epilogue))
    if not _computable(body, nodes[:r], found.loaded, shape):
        return None
    if epilogue and (nodes[-1].shape != last.shape or any(
            ref[0] == "node" and ref[1] < r for n in epilogue for ref in n.inputs)):
        return None
    return found if _computable(body, epilogue, found.epilogue_loaded, last.shape) else None


def _reads(nodes) -> tuple[int, ...]:
    """The inputs the nodes read, in order."""
    return tuple(sorted({ref[1] for n in nodes for ref in n.inputs if ref[0] == "input"}))


def _computable(body: Graph, nodes, inputs, shape) -> bool:
    """True when the nodes and the inputs all broadcast to `shape`."""
    return all(_broadcasts(s, shape) for s in [*(n.shape for n in nodes),
                                               *(body.inputs[k][0] for k in inputs)])


def _nonnegative_constant(body: Graph, node: Node) -> bool:
    kind, i = node.inputs[1]
    return kind == "const" and body.constant_value(i) >= 0


def _broadcasts(shape, target) -> bool:
    try:
        return np.broadcast_shapes(tuple(shape), target) == target
    except ValueError:
        return False


def broadcast_strides(shape, target) -> tuple[int, ...]:
    """Element strides of a C-contiguous array of `shape` seen over `target` (numpy
    broadcasting: 0 on the axes it is repeated along)."""
    own, step = [], 1
    for n in reversed(shape):
        own.append(step)
        step *= n
    own.reverse()
    lead = len(target) - len(shape)
    return (0,) * lead + tuple(0 if n == 1 else s for n, s in zip(shape, own))


def collapse(shape, strides) -> tuple[list[int], list[list[int]]]:
    """(dims, strides) with size-1 axes dropped and the axes every operand steps through
    contiguously merged: the fewest axes an index walk over `shape` needs."""
    keep = [a for a, n in enumerate(shape) if n != 1]
    dims = [shape[a] for a in keep]
    rows = [[st[a] for a in keep] for st in strides]
    a = len(dims) - 1
    while a > 0:
        if all(s[a - 1] == s[a] * dims[a] for s in rows):
            dims[a - 1] *= dims[a]
            del dims[a]
            for s in rows:
                s[a - 1] = s[a]
                del s[a]
        a -= 1
    return dims, rows


def offsets(index: str, dims, strides, prefix: str) -> tuple[list[tuple[str, str]], list[str]]:
    """Each operand's flat element offset at flat position `index` of `dims`.

    strides[k] are operand k's element strides over dims. Size-1 axes are dropped and
    axes every operand steps through contiguously are merged, so an operand laid out as
    the index reads `index`, one read the same everywhere reads `0`, and only the rest
    use coordinates, assigned as `{prefix}c0`, `{prefix}c1`, ... from the index.
    Returns (assignments, offset expressions).
    """
    sizes, rows = collapse(dims, [broadcast_strides(dims, dims), *strides])
    exprs = []
    for s in rows[1:]:
        if not any(s):
            exprs.append("0")
        elif s == rows[0]:
            exprs.append(index)
        else:
            exprs.append(" + ".join(f"{prefix}c{a}" if x == 1 else f"{prefix}c{a} * {x}"
                                    for a, x in enumerate(s) if x))
    assignments: list[tuple[str, str]] = []
    if any(e not in ("0", index) for e in exprs):
        q = index
        for a in range(len(sizes) - 1, 0, -1):
            assignments += [(f"{prefix}c{a}", f"{q} % {sizes[a]}"),
                            (f"{prefix}q{a}", f"{q} / {sizes[a]}")]
            q = f"{prefix}q{a}"
        assignments.append((f"{prefix}c0", q))
    return assignments, exprs


def input_offsets(found: Layout, inputs) -> tuple[list, list, list[str]]:
    """The offsets of inputs (their (shape, dtype) list) read at positions of the layout's
    shape, as (assignments once per work-item, assignments per reduced element, offset
    expressions): at flat position `i` of the shape for an elementwise body (no
    per-element assignments); at kept position `o` plus reduced position `r` for a reduce
    body (prefixes k and r)."""
    full = [broadcast_strides(s, found.shape) for s, _ in inputs]
    if found.reduction is None:
        lines, exprs = offsets("i", found.shape, full, "")
        return lines, [], exprs
    kept_lines, kept = offsets("o", [found.shape[a] for a in found.kept],
                               [[s[a] for a in found.kept] for s in full], "k")
    red_lines, red = offsets("r", [found.shape[a] for a in found.reduced],
                             [[s[a] for a in found.reduced] for s in full], "r")
    both = [k if r == "0" else r if k == "0" else f"{k} + {r}" for k, r in zip(kept, red)]
    return kept_lines, red_lines, both


def epilogue_offsets(found: Layout, inputs) -> tuple[list, list[str]]:
    """The offsets of inputs (their (shape, dtype) list) that an epilogue reads at output
    position `o` of the reduction's result, as (assignments, offset expressions; prefix
    e). The kept axes of `shape` and the result's axes number the outputs alike."""
    result = tuple(found.reduction.shape)
    return offsets("o", result, [broadcast_strides(s, result) for s, _ in inputs], "e")


def operand(body: Graph, ref, literal) -> str:
    """The text of an operand in generated code: input i is `x{i}`, node i is `v{i}`, a
    constant its literal (`literal(value: numpy scalar, dtype)`)."""
    kind, i = ref
    if kind == "const":
        value = body.constant_value(i)
        return literal(value[()], value.dtype)
    return f"{'x' if kind == 'input' else 'v'}{i}"
