"""What the OpenCL and CUDA backends' generated kernels for fused groups share.

`layout(body)` reads a fused group's body as a kernel sees it (the shape its work-items
cover, the output node, the reduced axes) or declines it; `offsets` writes the broadcast
index arithmetic specialised to the body's shapes. The arithmetic is a list of
assignments (name, expression) over non-negative integers with + * / %: valid C and
OpenCL C, and Python once / is read as //.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hal import dtypes as dt
from hal import shapes
from hal.graph import ELEMENTWISE, REDUCTIONS, Graph, Node


@dataclass(frozen=True)
class Layout:
    """A fused body as one kernel computes it.

    Every body value is computed at positions of `shape` (the output's shape, or the
    reduction's input shape for a reduce body): operands and smaller nodes broadcast to
    it. `reduction` is the final reduce node or None; `kept` and `reduced` split the axes
    of `shape` (all kept for an elementwise body).
    """

    shape: tuple
    reduction: Node | None
    kept: tuple[int, ...]
    reduced: tuple[int, ...]


def layout(body: Graph) -> Layout | None:
    """The layout of a fused body, or None for a body these kernels do not take: one node
    output that is the last node, elementwise nodes, at most a final sum/max/min, 0-d
    constants, shapes that broadcast to the computed shape, and integer powers only by a
    non-negative constant (the op refuses negative ones: a kernel could not say so)."""
    nodes = body.nodes
    if not nodes or body.outputs != [("node", len(nodes) - 1)]:
        return None
    if any(c.shape != () for c in body.constants):
        return None
    *chain, last = nodes
    if any(n.op not in ELEMENTWISE for n in chain) or last.op not in ELEMENTWISE | REDUCTIONS:
        return None
    if any(ref is None for n in nodes for ref in n.inputs):
        return None
    if any(n.op == "power" and dt.is_integer(n.dtype) and not _nonnegative_constant(body, n)
           for n in nodes):
        return None
    if last.op in REDUCTIONS:
        shape = body.meta(last.inputs[0])[0]
        reduced = shapes.axes(last.op, last.params.get("axis"), len(shape))
        kept = tuple(a for a in range(len(shape)) if a not in reduced)
        values = [*body.inputs, *((n.shape, n.dtype) for n in chain)]
        found = Layout(tuple(shape), last, kept, reduced)
    else:
        values = [*body.inputs, *((n.shape, n.dtype) for n in nodes)]
        found = Layout(tuple(last.shape), None, tuple(range(len(last.shape))), ())
    if not all(_broadcasts(s, found.shape) for s, _ in values):
        return None
    return found


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


def offsets(index: str, dims, strides, prefix: str) -> tuple[list[tuple[str, str]], list[str]]:
    """Each operand's flat element offset at flat position `index` of `dims`.

    strides[k] are operand k's element strides over dims. Size-1 axes are dropped and
    axes every operand steps through contiguously are merged, so an operand laid out as
    the index reads `index`, one read the same everywhere reads `0`, and only the rest
    use coordinates, assigned as `{prefix}c0`, `{prefix}c1`, ... from the index.
    Returns (assignments, offset expressions).
    """
    keep = [a for a, n in enumerate(dims) if n != 1]
    sizes = [dims[a] for a in keep]
    dense = list(broadcast_strides(sizes, sizes))
    rows = [dense, *([s[a] for a in keep] for s in strides)]
    a = len(sizes) - 1
    while a > 0:
        if all(s[a - 1] == s[a] * sizes[a] for s in rows):
            sizes[a - 1] *= sizes[a]
            del sizes[a]
            for s in rows:
                s[a - 1] = s[a]
                del s[a]
        a -= 1
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
    """The offsets of the body's inputs (their (shape, dtype) list) as (assignments once
    per work-item, assignments per reduced element, offset expressions): at flat position
    `i` of the shape for an elementwise body (no per-element assignments); at kept
    position `o` plus reduced position `r` for a reduce body (prefixes k and r)."""
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


def operand(body: Graph, ref, literal) -> str:
    """The text of an operand in generated code: input i is `x{i}`, node i is `v{i}`, a
    constant its literal (`literal(value: numpy scalar, dtype)`)."""
    kind, i = ref
    if kind == "const":
        value = body.constant_value(i)
        return literal(value[()], value.dtype)
    return f"{'x' if kind == 'input' else 'v'}{i}"
