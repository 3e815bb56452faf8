"""One generated OpenCL kernel per fused group of a graph (`compile_fused`).

An elementwise body becomes a kernel of one work-item per output element: each input is
read at its broadcast offset (index arithmetic specialised to the body's shapes:
`x[i]` for an input shaped as the output, `x[0]` for a 0-d one), the body's ops are the
C expressions the node-by-node kernels use (the op set's C table through elementwise.py:
the same NaN, integer-division and complex semantics), 0-d constants are literals, float16 values
are rounded to half after each op as the node-by-node kernels store them. A reduce body
(an elementwise prologue feeding one sum/max/min, maybe an elementwise epilogue after it)
becomes reduce.py's kernel with the prologue computed where it loads an element and the
epilogue applied to each output before it is stored: one work-item per output, a
work-group per output, or two stages (one work-item per chunk of an output writes
partials, then a kernel of the same kind reduces the partials and applies the epilogue).

A program is built once per body (PoCL caches its binary on disk) and the returned
callable only sets arguments and enqueues.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from hal import dtypes as dt
from hal import ops
from hal.compile.graph import REDUCTIONS, Graph, Node

from .. import fusion
from . import cltypes, elementwise, reduce

_HALF = """
inline float hal_half(float v) {  /* v rounded to the nearest half, as a store rounds */
  ushort h;
  vstore_half_rte(v, 0, (half *)&h);
  return vload_half(0, (const half *)&h);
}
"""
_HALF_FROM_DOUBLE = _HALF.replace("hal_half(float", "hal_half_d(double")


def compile_fused(device, body: Graph):
    """The prepared kernel of a fused body on an OpenCL device, or None to decline
    (an op, dtype or shape this generator does not take). Cached per body.key()."""
    key = ("fused", body.key())
    if key not in device.cache:
        device.cache[key] = _compile(device, body)
    return device.cache[key]


def _compile(device, body: Graph):
    found = fusion.layout(body)
    if found is None or not supported(body, set(device.backend.dtypes(device))):
        return None
    if found.reduction is None:
        source = elementwise_source(body, found)
        kernel = _kernel(device, source, len(body.inputs))
        return FusedKernel(device, kernel, _items(device, math.prod(found.shape)))
    return _reduce_kernel(device, body, found)


def supported(body: Graph, dtypes: set) -> bool:
    """True when every dtype the body holds is the device's and every op takes its
    operands' dtype (node dtypes come promoted; this guards against one that is not)."""
    held = [d for _, d in body.inputs] + [c.dtype for c in body.constants]
    held += [n.dtype for n in body.nodes]
    if not set(held) <= dtypes:
        return False
    for node in body.nodes:
        spec = ops.spec(node.op)
        if body.meta(node.inputs[spec.key])[1] not in spec.dtypes:
            return False
    return True


# -- source ------------------------------------------------------------------------------
def literal(value, d: np.dtype) -> str:
    """A 0-d constant as an OpenCL C literal of the compute type of d."""
    if dt.is_complex(d):
        r = dt.real_dtype(d)
        return f"{cltypes.cprefix(d)}_new({literal(value.real, r)}, {literal(value.imag, r)})"
    if dt.is_bool(d):
        return f"((uchar){int(value)})"
    if dt.is_integer(d):
        v = int(value)
        return "(LONG_MIN)" if v == -(2**63) else f"(({cltypes.storage(d)}){v}L)"
    v = float(value)
    if math.isfinite(v):
        return cltypes.literal(d, v)
    text = "NAN" if math.isnan(v) else "INFINITY" if v > 0 else "(-INFINITY)"
    return f"(({cltypes.compute(d)}){text})"


def _key_dtype(body: Graph, node) -> np.dtype:
    """The dtype of the operand that selects the node's expression (x, for where)."""
    return body.meta(node.inputs[ops.spec(node.op).key])[1]


def _helpers(body: Graph, more=()) -> str:
    """The helper functions the body's expressions call (and `more`), each once."""
    found = dict.fromkeys(more)  # ordered set
    for node in body.nodes:
        if node.op in REDUCTIONS:
            continue
        d = _key_dtype(body, node)
        operands = [f"a{i}" for i in range(len(node.inputs))]
        found[elementwise.expression(node.op, operands, d, node.dtype)[1]] = None
        if node.dtype == dt.float16:
            found[_HALF_FROM_DOUBLE if body.meta(node.inputs[0])[1] == dt.float64
                  else _HALF] = None
    return "".join(found)


def _node_lines(body: Graph, nodes) -> list[str]:
    """`const T vK = ...;` for the nodes, float16 values rounded to half."""
    lines = []
    for k, node in nodes:
        args = [fusion.operand(body, ref, literal) for ref in node.inputs]
        expr = elementwise.expression(node.op, args, _key_dtype(body, node), node.dtype)[0]
        d, t = node.dtype, cltypes.compute(node.dtype)
        if d == dt.float16:
            double = body.meta(node.inputs[0])[1] == dt.float64
            expr = f"hal_half{'_d' if double else ''}({expr})"
        elif not dt.is_complex(d):
            expr = f"({t})({expr})"
        lines.append(f"const {t} v{k} = {expr};")
    return lines


def _signature(body: Graph, out_dtype: np.dtype) -> tuple[str, list[str]]:
    """The kernel's parameters (output, then inputs, each with its element offset) and
    the lines moving each pointer to its array's first element."""
    params = [f"__global {cltypes.storage(out_dtype)} *out", "long out_off"]
    moves = ["out += out_off;"]
    for k, (_, d) in enumerate(body.inputs):
        params += [f"__global const {cltypes.storage(d)} *p{k}", f"long p{k}_off"]
        moves.append(f"p{k} += p{k}_off;")
    return ", ".join(params), moves


def _loads(body: Graph, inputs, exprs: list[str]) -> list[str]:
    """`const T xK = ...;` for inputs K at their offset expressions."""
    lines = []
    for k, e in zip(inputs, exprs):
        d = body.inputs[k][1]
        lines.append(f"const {cltypes.compute(d)} x{k} = {cltypes.load(d, f'p{k}', e)};")
    return lines


def _program(body: Graph, params: str, lines: list[str], extra=(), attribute: str = "",
             helpers=()) -> str:
    dtypes = {d for _, d in body.inputs} | {n.dtype for n in body.nodes} | set(extra)
    return (cltypes.preamble(dtypes) + _helpers(body, helpers) + f"__kernel {attribute}void "
            "fused(" + params + ")\n{\n  " + "\n  ".join(lines) + "\n}\n")


def elementwise_source(body: Graph, found: fusion.Layout) -> str:
    """The OpenCL C of an elementwise body: work-item i computes output element i."""
    params, lines = _signature(body, body.nodes[-1].dtype)
    index_lines, _, exprs = fusion.input_offsets(found, [body.inputs[k] for k in found.loaded])
    lines += ["const long i = get_global_id(0);"]
    lines += [f"const long {name} = {e};" for name, e in index_lines]
    lines += _loads(body, found.loaded, exprs) + _node_lines(body, enumerate(body.nodes))
    lines.append(cltypes.store(body.nodes[-1].dtype, "out", "i", f"v{len(body.nodes) - 1}"))
    return _program(body, params, lines)


def reduce_source(body: Graph, found: fusion.Layout, alg, group: int, parts: int) -> str:
    """The OpenCL C of a reduce body, reduce.py's kernel with the prologue inlined and the
    epilogue applied to each output: with group 1, work-item g reduces chunk g % parts of
    output g / parts (a body with an epilogue takes parts 1); else work-group o reduces
    output o through a local-memory tree."""
    size = math.prod(found.shape[a] for a in found.reduced)
    chunk = -(-size // parts)
    acc_t = alg.ctype
    r = _reduction_index(body, found)
    out_dtype = body.nodes[-1].dtype if found.epilogue else alg.out
    params, lines = _signature(body, out_dtype)
    outer, inner, exprs = fusion.input_offsets(found, [body.inputs[k] for k in found.loaded])

    def combine(a, b):
        return alg.combine.replace("A", a).replace("B", b)

    if group == 1:
        lines += ["const long g = get_global_id(0);",
                  f"const long o = g / {parts}, first = (g % {parts}) * {chunk};",
                  f"const long last = min({size}L, first + {chunk});"]
        start, step, stop = "first", "1", "last"
    else:
        lines += ["const long o = get_group_id(0);", "const int lid = get_local_id(0);",
                  f"__local {acc_t} part[{group}];"]
        start, step, stop = "lid", str(group), f"{size}L"
    lines += [f"const long {name} = {e};" for name, e in outer]
    value = fusion.operand(body, found.reduction.inputs[0], literal)
    loop = [f"const long {name} = {e};" for name, e in inner] + _loads(body, found.loaded, exprs)
    loop += _node_lines(body, enumerate(body.nodes[:r]))
    loop.append(f"acc = {combine('acc', alg.map.replace('V', value))};")
    lines += [f"{acc_t} acc = {alg.identity};",
              f"for (long r = {start}; r < {stop}; r += {step}) {{",
              *("  " + s for s in loop), "}"]
    if group > 1:
        lines += ["part[lid] = acc;", "barrier(CLK_LOCAL_MEM_FENCE);",
                  f"for (int s = {group // 2}; s > 0; s >>= 1) {{",
                  f"  if (lid < s) part[lid] = {combine('part[lid]', 'part[lid + s]')};",
                  "  barrier(CLK_LOCAL_MEM_FENCE);", "}", "acc = part[0];"]
    finish, result, helpers = _epilogue_lines(body, found, alg) if found.epilogue else (
        [], alg.final("acc"), ())
    finish.append(cltypes.store(out_dtype, "out", "g" if group == 1 else "o", result))
    lines += finish if group == 1 else ["if (lid == 0) {", *("  " + s for s in finish), "}"]
    attribute = f"__attribute__((reqd_work_group_size({group}, 1, 1))) " if group > 1 else ""
    return _program(body, params, lines, (alg.acc, alg.out), attribute, helpers)


def _reduction_index(body: Graph, found: fusion.Layout) -> int:
    return found.epilogue[0] - 1 if found.epilogue else len(body.nodes) - 1


def _epilogue_lines(body: Graph, found: fusion.Layout, alg) -> tuple[list[str], str, tuple]:
    """The lines computing the epilogue of output `o` from the accumulator `acc`: the
    reduction's value (rounded to its dtype), the epilogue's inputs at the output, its
    nodes. Returns (lines, the output's value, the helper functions they call)."""
    red = found.reduction
    t, value, helpers = cltypes.compute(red.dtype), alg.final("acc"), ()
    if red.dtype == dt.float16:
        helpers = (_HALF_FROM_DOUBLE if alg.double else _HALF,)
        value = f"hal_half{'_d' if alg.double else ''}({value})"
    elif not dt.is_complex(red.dtype):
        value = f"({t})({value})"
    lines = [f"const {t} v{_reduction_index(body, found)} = {value};"]
    inputs = found.epilogue_loaded
    assignments, exprs = fusion.epilogue_offsets(found, [body.inputs[k] for k in inputs])
    lines += [f"const long {name} = {e};" for name, e in assignments]
    lines += _loads(body, inputs, exprs)
    lines += _node_lines(body, ((k, body.nodes[k]) for k in found.epilogue))
    return lines, f"v{len(body.nodes) - 1}", helpers


# -- building and launching ------------------------------------------------------------------
def _kernel(device, source: str, inputs: int):
    """The built kernel, its arguments declared once: (buffer, long offset) per array."""
    kernel = device.build("fused", source, "fused")
    kernel.set_scalar_arg_dtypes([None, np.int64] * (inputs + 1))
    return kernel


def _items(device, total: int, group: int | None = None) -> list[tuple]:
    """OpenCLDevice.run_items's launches over `total` work-items, worked out once, as
    (global size, local size, global offset): whole work-groups, then the remainder."""
    from .device import SMALL_RANGE

    group = group or device.group_size()
    main = total - total % group
    if total == 0:
        return []
    if main == 0 or (total < SMALL_RANGE and main != total):
        return [((total,), None, None)]
    rest = [((total - main,), None, (main,))] if main != total else []
    return [((main,), (group,), None), *rest]


class FusedKernel:
    """A fused group's prepared kernel: `fn(*arrays, out=out)` writes out and returns it.

    Each call sets the arguments (each array's buffer and element offset) and enqueues;
    it neither waits nor allocates.
    """

    takes_out = True

    def __init__(self, device, kernel, launches: list[tuple]):
        self.queue = device.queue
        self.kernel = kernel
        self.launches = launches

    def __call__(self, *arrays, out):
        args = [out.base_data, out.offset // out.dtype.itemsize]
        for a in arrays:
            args += (a.base_data, a.offset // a.dtype.itemsize)
        for global_size, local_size, offset in self.launches:
            self.kernel(self.queue, global_size, local_size, *args, global_offset=offset)
        return out


class TwoStageReduce:
    """A reduce body with few outputs over many elements: the first kernel reduces
    contiguous chunks to partials in the accumulator type (one work-item each), the second
    reduces the partials and applies the epilogue. `fn(*arrays, out=out)` writes out and
    returns it."""

    takes_out = True

    def __init__(self, device, first, second, partial_shape, partial_dtype):
        self.device, self.first, self.second = device, first, second
        self.partial_shape, self.partial_dtype = partial_shape, partial_dtype

    def __call__(self, *arrays, out):
        partial = self.device.empty(self.partial_shape, self.partial_dtype)
        self.first(*arrays, out=partial)
        return self.second(partial, *arrays, out=out)


def _reduce_kernel(device, body: Graph, found: fusion.Layout):
    """The prepared kernel of a reduce body, with reduce.py's choice of work split."""
    last = found.reduction
    kind, d = last.op, body.meta(last.inputs[0])[1]
    size = math.prod(found.shape[a] for a in found.reduced)
    n_out = math.prod(found.shape[a] for a in found.kept)
    acc = reduce.acc_type(device, kind, d)
    if n_out < 64 and size >= 1 << 15:  # reduce.py's two-stage rule
        return _two_stages(device, body, found, acc, min(256, size // 4096))
    many = n_out >= (16 * device.cl_device.max_compute_units if device.is_cpu else 1024)
    group = 1 if size <= 64 or many else device.group_size()
    source = reduce_source(body, found, reduce.Algebra(kind, d, acc, last.dtype), group, 1)
    kernel = _kernel(device, source, len(body.inputs))
    if group == 1:
        return FusedKernel(device, kernel, _items(device, n_out))
    return FusedKernel(device, kernel, [((n_out * group,), (group,), None)] if n_out else [])


def _two_stages(device, body: Graph, found: fusion.Layout, acc: np.dtype, parts: int):
    """The body reduced in two stages: its prologue and reduction over `parts` chunks of
    each output into partials, then `_partials_body` (the partials reduced, the epilogue)."""
    last, r = found.reduction, _reduction_index(body, found)
    n_out = math.prod(last.shape)
    head = Graph(body.inputs, body.nodes[:r + 1], body.constants, [("node", r)])
    alg = reduce.Algebra(last.op, body.meta(last.inputs[0])[1], acc, acc)
    source = reduce_source(head, fusion.layout(head), alg, 1, parts)
    first = FusedKernel(device, _kernel(device, source, len(body.inputs)),
                        _items(device, n_out * parts))
    tail = _partials_body(body, r, parts, acc)
    second = _reduce_kernel(device, tail, fusion.layout(tail))
    return TwoStageReduce(device, first, second, (n_out, parts), acc)


def _partials_body(body: Graph, r: int, parts: int, acc: np.dtype) -> Graph:
    """A two-stage reduction's second stage as a reduce body: input 0 the partials (the
    result's shape and an axis of `parts`) reduced over their last axis, the body's
    inputs after it, then the body's epilogue (refs renumbered)."""
    last = body.nodes[r]

    def moved(ref):
        kind, i = ref
        return ("input", i + 1) if kind == "input" else ("node", i - r) if kind == "node" \
            else ref

    nodes = [Node(last.op, (("input", 0),), {"axis": (len(last.shape),), "keepdims": False},
                  last.shape, last.dtype)]
    nodes += [replace(n, inputs=tuple(moved(ref) for ref in n.inputs))
              for n in body.nodes[r + 1:]]
    return Graph([((*last.shape, parts), acc), *body.inputs], nodes, body.constants,
                 [("node", len(nodes) - 1)])
