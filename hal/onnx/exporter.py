"""hal graphs as ONNX models: every node to ONNX nodes, constants to initializers.

Composites map to the ONNX op that has their meaning (layer_norm to LayerNormalization,
softmax to Softmax, gelu to Gelu from opset 20, quantized_linear to the
DynamicQuantizeLinear/MatMulInteger/Cast/Mul chain ONNX Runtime's quantize_dynamic writes),
primitives to the obvious op; a fused node is exported as its body, inline. Every ONNX node
is named "n<index>.<hal op>/<ONNX op>[.k]" after the hal node it comes from.

A uint8 x int8 product (qmatmul, quantized_linear) is written in the form `int8_form` asks
for (default: `hal.ops.quant.int8_product_form` of the exporting CPU): uint8 x int8
MatMulInteger for a CPU with VNNI or AMX (summing pairs in int32; 5.5-8.6x faster there in
ONNX Runtime), else uint8 x uint8 (the weight and its zero point shifted by 128) except for
a constant weight within 7 bits, as ONNX Runtime's uint8 x int8 kernel saturates 16-bit
pair sums on x86-64 CPUs without VNNI.

Where ONNX and hal (numpy) semantics differ, the model computes hal's (NaN in max, min,
argmax and argmin; the NaN mean of nothing; floor_divide and remainder of floats; integer
floor_divide; casts of bool; stable sorts), except float to integer casts of values out of
range, undefined in both (ONNX Runtime and numpy give the same answers on x86-64). An int64
sum is a MatMul with ones: ONNX Runtime's int64 ReduceSum adds in float64 and saturates.
"""

from __future__ import annotations

import math

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from .. import ops
from ..compile import passes
from ..compile.graph import FUSED, Graph
from ..compile.jit import Jitted, jit
from ..ops import quant, shapes
from ..runtime import dtypes as dt
from ..runtime.errors import HalError, UnsupportedOp

OPSET = 20
"""The default ONNX opset; 17 and later are supported."""

_MIN_OPSET = 17
_INT64_MIN = -(1 << 63)


def export(fn_or_graph, *example_args, path=None, opset: int = OPSET, input_names=None,
           output_names=None, int8_form: str | None = None) -> onnx.ModelProto:
    """The ONNX model of a hal.Graph, a hal.jit function or a plain function of Tensors
    (traced on the example arguments), constants folded, common subexpressions and dead
    code removed, composites kept whole; written to `path` when given. `int8_form`: the
    MatMulInteger operand form (see to_onnx)."""
    if isinstance(fn_or_graph, Graph):
        graph = fn_or_graph
    elif isinstance(fn_or_graph, Jitted):
        graph = fn_or_graph.graph(*example_args)
    elif callable(fn_or_graph):
        graph = jit(fn_or_graph).graph(*example_args)
    else:
        raise HalError(f"hal.onnx.export: {type(fn_or_graph).__name__} is not a hal.Graph or "
                       "a function of Tensors; pass one (with example arguments)")
    name = getattr(fn_or_graph, "__name__", "hal_graph")
    model = to_onnx(passes.optimize(graph), opset=opset, input_names=input_names,
                    output_names=output_names, name=name, int8_form=int8_form)
    if path is not None:
        onnx.save(model, str(path))
    return model


def to_onnx(graph: Graph, *, opset: int = OPSET, input_names=None, output_names=None,
            name: str = "hal_graph", int8_form: str | None = None) -> onnx.ModelProto:
    """The ONNX model of a hal.Graph: static input and output shapes, constants as
    initializers; `onnx.checker.check_model` accepts it. UnsupportedOp for a node ONNX
    cannot express (complex tensors), naming the op and its source line. `int8_form`
    (quant.U8S8 or quant.U8U8; default: the form for this CPU) is how uint8 x int8
    products are written: exact in ONNX Runtime on a CPU whose form it is."""
    if not _MIN_OPSET <= opset <= onnx.defs.onnx_opset_version():
        raise HalError(f"hal.onnx.to_onnx: opset {opset} is not supported; use "
                       f"{_MIN_OPSET}..{onnx.defs.onnx_opset_version()}")
    int8_form = int8_form or quant.int8_product_form()
    if int8_form not in (quant.U8S8, quant.U8U8):
        raise HalError(f"hal.onnx.to_onnx: int8_form {int8_form!r} is not one of "
                       f"{quant.U8S8!r}, {quant.U8U8!r}")
    input_names = _names("input", input_names, len(graph.inputs))
    output_names = _names("output", output_names, len(graph.outputs))
    b = _Builder(opset, {*input_names, *output_names}, int8_form)
    values = _emit(b, graph, input_names, "")
    for name_, (_, dtype) in zip(input_names, graph.inputs):
        _check_real(dtype, f"input {name_!r}", "")
    b.name_outputs(values, output_names)
    outputs = [graph.meta(r) for r in graph.outputs]
    onnx_graph = helper.make_graph(
        b.nodes, name,
        [_value_info(n, s, d) for n, (s, d) in zip(input_names, graph.inputs)],
        [_value_info(n, s, d) for n, (s, d) in zip(output_names, outputs)],
        b.used_initializers())
    opsets = [helper.make_opsetid("", opset)]
    model = helper.make_model(onnx_graph, opset_imports=opsets, producer_name="hal",
                              ir_version=helper.find_min_ir_version_for(opsets))
    onnx.checker.check_model(model)
    return model


def _names(kind: str, given, count: int) -> list[str]:
    if given is None:
        return [f"{kind}_{i}" for i in range(count)]
    given = list(given)
    if len(given) != count or len(set(given)) != count:
        raise HalError(f"hal.onnx.to_onnx: {count} distinct {kind} names needed, got {given!r}")
    return given


def _value_info(name: str, shape, dtype) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, _onnx_type(dtype), list(shape))


def _onnx_type(dtype) -> int:
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def _check_real(dtype, what: str, where: str) -> None:
    if dt.is_complex(dtype):
        raise UnsupportedOp(f"hal.onnx: {what}{where} is {np.dtype(dtype).name}: ONNX has no "
                            "complex tensors; export the real-valued part of the computation")


class _Builder:
    """ONNX nodes and initializers in the making, under unique names."""

    def __init__(self, opset: int, reserved: set[str], int8_form: str = quant.U8U8):
        self.opset = opset
        self.int8_form = int8_form  # how uint8 x int8 products are written
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.taken = set(reserved)
        self.counts: dict[str, int] = {}  # hint -> the next suffix to try
        self.produced: set[str] = set()  # values made by nodes (renamable to outputs)
        self.constants: dict[str, np.ndarray] = {}  # initializer name -> its value
        self.scope = ""  # "n<index>.<op>" of the hal node being exported

    def used_initializers(self) -> list[onnx.TensorProto]:
        """The initializers some node reads (a weight exported in another form is not)."""
        used = {x for node in self.nodes for x in node.input}
        return [t for t in self.initializers if t.name in used]

    def fresh(self, hint: str) -> str:
        """A new unique name starting with hint."""
        k = self.counts.get(hint, 0)
        name = hint if k == 0 else f"{hint}.{k}"
        while name in self.taken:
            k += 1
            name = f"{hint}.{k}"
        self.counts[hint] = k + 1
        self.taken.add(name)
        return name

    def const(self, value, dtype=None) -> str:
        """An initializer holding value (of dtype when given)."""
        array = np.asarray(value, dtype=dtype)
        name = self.fresh(f"{self.scope}.c" if self.scope else "c")
        self.initializers.append(numpy_helper.from_array(array, name))
        self.constants[name] = array
        return name

    def ints(self, values) -> str:
        """An int64 1-d initializer (shapes, axes, pads)."""
        return self.const(np.asarray(values, dtype=np.int64).reshape(-1))

    def op(self, op_type: str, inputs, outputs: int = 1, **attrs):
        """Add one ONNX node; its output name (a tuple of names for several outputs).
        An input of None is an absent optional input."""
        inputs = ["" if x is None else x for x in inputs]
        while inputs and not inputs[-1]:
            inputs.pop()
        node_name = self.fresh(f"{self.scope}/{op_type}")
        names = [self.fresh(f"{node_name}:{k}") for k in range(outputs)]
        self.nodes.append(helper.make_node(op_type, inputs, names, name=node_name, **attrs))
        self.produced.update(names)
        return names[0] if outputs == 1 else tuple(names)

    def cast(self, x: str, src, dst) -> str:
        """x as dtype dst (no node when it has it)."""
        return x if np.dtype(src) == np.dtype(dst) else self.op("Cast", [x], to=_onnx_type(dst))

    def reduce(self, op_type: str, x: str, axes, keepdims: bool) -> str:
        """ReduceX over axes (none: x itself); axes an input from opset 18 (ReduceSum: 13)."""
        if not axes:
            return x
        if op_type == "ReduceSum" or self.opset >= 18:
            return self.op(op_type, [x, self.ints(axes)], keepdims=int(keepdims))
        return self.op(op_type, [x], axes=list(axes), keepdims=int(keepdims))

    def name_outputs(self, values: list[str], names: list[str]) -> None:
        """Give the graph outputs their names: a node's value is renamed, anything else
        (an input, an initializer, a value already an output) passes through Identity."""
        renamed: dict[str, str] = {}
        for value, name in zip(values, names):
            if value in self.produced and value not in renamed:
                for node in self.nodes:
                    node.input[:] = [name if x == value else x for x in node.input]
                    node.output[:] = [name if x == value else x for x in node.output]
                renamed[value] = name
            else:
                value = renamed.get(value, value)
                self.nodes.append(helper.make_node("Identity", [value], [name],
                                                   name=self.fresh(f"outputs/{name}")))


def _emit(b: _Builder, graph: Graph, inputs: list[str], scope: str) -> list[str]:
    """Export graph's nodes given the names of its inputs; the names of its outputs."""
    consts = {}
    values: list[str] = []

    def name(ref):
        if ref is None:
            return None
        kind, i = ref
        if kind == "input":
            return inputs[i]
        if kind == "node":
            return values[i]
        if i not in consts:
            b.scope = scope or "constants"
            array = graph.constant_value(i)
            _check_real(array.dtype, "a constant", "")
            consts[i] = b.const(array)
        return consts[i]

    for i, node in enumerate(graph.nodes):
        args = [name(r) for r in node.inputs]
        metas = [None if r is None else graph.meta(r) for r in node.inputs]
        b.scope = f"{scope}n{i}.{node.op}"
        if node.op == FUSED:
            values.append(_emit(b, node.params["body"], args, b.scope + ".")[0])
            continue
        where = f" (node {i}{', ' + node.where if node.where else ''})"
        for _, dtype in [(node.shape, node.dtype), *filter(None, metas)]:
            _check_real(dtype, f"op {node.op!r}", where)
        handler = _HANDLERS.get(node.op)
        if handler is None:
            raise UnsupportedOp(f"hal.onnx: op {node.op!r}{where} has no ONNX export")
        values.append(handler(b, node, args, metas))
    return [name(r) for r in graph.outputs]


# -- handlers: (builder, node, operand names, operand (shape, dtype)s) -> result name ---------
_HANDLERS = {}


def _handles(*names):
    def register(fn):
        for n in names:
            _HANDLERS[n] = fn
        return fn

    return register


_SAME_NAME = {"exp": "Exp", "log": "Log", "sqrt": "Sqrt", "sin": "Sin", "cos": "Cos",
              "tanh": "Tanh", "erf": "Erf", "abs": "Abs", "sigmoid": "Sigmoid",
              "add": "Add", "subtract": "Sub", "multiply": "Mul", "divide": "Div",
              "power": "Pow", "maximum": "Max", "minimum": "Min", "equal": "Equal",
              "less": "Less", "greater": "Greater", "where": "Where",
              "asin": "Asin", "acos": "Acos", "atan": "Atan", "tan": "Tan", "sinh": "Sinh",
              "cosh": "Cosh", "asinh": "Asinh", "acosh": "Acosh", "atanh": "Atanh",
              "sign": "Sign", "bitwise_and": "BitwiseAnd", "bitwise_or": "BitwiseOr",
              "bitwise_xor": "BitwiseXor", "bitwise_invert": "BitwiseNot",
              "logical_and": "And", "logical_or": "Or", "logical_xor": "Xor"}


@_handles(*_SAME_NAME)
def _same_name(b, node, x, meta):
    return b.op(_SAME_NAME[node.op], x)


@_handles("floor", "ceil", "round")
def _rounding(b, node, x, meta):
    """ONNX Floor, Ceil and Round (half to even) take floats; an integer is its own."""
    if not dt.is_floating(node.dtype):
        return b.op("Identity", x)
    return b.op(node.op.capitalize(), x)


@_handles("negative")
def _negative(b, node, x, meta):
    if node.dtype == dt.uint8:  # ONNX Neg has no unsigned types; wraps as numpy does
        return b.op("Sub", [b.const(0, dt.uint8), x[0]])
    return b.op("Neg", x)


@_handles("relu")
def _relu(b, node, x, meta):
    if dt.is_floating(node.dtype):
        return b.op("Relu", x)
    return b.op("Max", [x[0], b.const(0, node.dtype)])  # ONNX Runtime's Relu: floats only


@_handles("silu")
def _silu(b, node, x, meta):
    return b.op("Mul", [x[0], b.op("Sigmoid", x)])


@_handles("astype")
def _astype(b, node, x, meta):
    return b.op("Cast", x, to=_onnx_type(node.dtype))


# -- reductions ---------------------------------------------------------------------------
def _axes(node, meta) -> tuple[int, ...]:
    return shapes.axes(node.op, node.params.get("axis"), len(meta[0][0]))


@_handles("sum")
def _sum(b, node, x, meta):
    v = b.cast(x[0], meta[0][1], node.dtype)
    axes, keepdims = _axes(node, meta), node.params.get("keepdims", False)
    if node.dtype != dt.int64 or not axes:
        return b.reduce("ReduceSum", v, axes, keepdims)
    # ONNX Runtime's int64 ReduceSum adds in float64 (inexact past 2**53, saturating):
    # a product with ones adds in int64 and wraps as numpy does
    shape = meta[0][0]
    kept = [a for a in range(len(shape)) if a not in axes]
    if kept + list(axes) != list(range(len(shape))):
        v = b.op("Transpose", [v], perm=kept + list(axes))
    rows = [shape[a] for a in kept] + [math.prod(shape[a] for a in axes)]
    v = b.op("Reshape", [v, b.ints(rows)], allowzero=int(0 in rows))
    v = b.op("MatMul", [v, b.const(np.ones(rows[-1], np.int64))])
    return b.op("Reshape", [v, b.ints(node.shape)], allowzero=int(0 in node.shape))


def _any_nan(b, x: str, axes, keepdims: bool) -> str:
    """Where x has a NaN over axes (bool, reduced as a ReduceX over axes is)."""
    nans = b.cast(b.op("IsNaN", [x]), dt.bool_, dt.uint8)
    return b.cast(b.reduce("ReduceMax", nans, axes, keepdims), dt.uint8, dt.bool_)


@_handles("max", "min")
def _max_min(b, node, x, meta):
    op_type = "ReduceMax" if node.op == "max" else "ReduceMin"
    axes, keepdims = _axes(node, meta), node.params.get("keepdims", False)
    if node.dtype == dt.bool_:
        v = b.reduce(op_type, b.cast(x[0], dt.bool_, dt.uint8), axes, keepdims)
        return b.cast(v, dt.uint8, dt.bool_)
    out = b.reduce(op_type, x[0], axes, keepdims)
    if not dt.is_floating(node.dtype):
        return out
    # hal's max and min propagate NaN; ONNX Runtime's ReduceMax/ReduceMin may skip it
    nan = b.const(np.nan, node.dtype)
    return b.op("Where", [_any_nan(b, x[0], axes, keepdims), nan, out])


@_handles("all", "any")
def _all_any(b, node, x, meta):
    truth = b.cast(x[0], meta[0][1], dt.bool_)
    op_type = "ReduceMin" if node.op == "all" else "ReduceMax"
    v = b.reduce(op_type, b.cast(truth, dt.bool_, dt.uint8), _axes(node, meta),
                 node.params.get("keepdims", False))
    return b.cast(v, dt.uint8, dt.bool_)


@_handles("mean")
def _mean(b, node, x, meta):
    axes = _axes(node, meta)
    if axes and not math.prod(meta[0][0][a] for a in axes):  # ONNX Runtime answers 0
        return b.op("Expand", [b.const(np.nan, node.dtype), b.ints(node.shape)])
    return b.reduce("ReduceMean", x[0], axes, node.params.get("keepdims", False))


@_handles("var")
def _var(b, node, x, meta):
    axes, keepdims = _axes(node, meta), node.params.get("keepdims", False)
    shape, dtype = meta[0]
    # numpy divides by max(N - correction, 0): inf (NaN for a constant input) at or beyond N
    count = max(math.prod(shape[a] for a in axes) - node.params.get("correction", 0), 0)
    centred = b.op("Sub", [x[0], b.reduce("ReduceMean", x[0], axes, True)])
    squares = b.reduce("ReduceSum", b.op("Mul", [centred, centred]), axes, keepdims)
    return b.op("Div", [squares, b.const(count, dtype)])


@_handles("argmax", "argmin")
def _arg_extreme(b, node, x, meta):
    shape, dtype = meta[0]
    axis, keepdims = node.params.get("axis"), node.params.get("keepdims", False)

    def first(op_type, v):
        if axis is None:
            flat = b.op(op_type, [b.op("Reshape", [v, b.ints([-1])])], axis=0, keepdims=0,
                        select_last_index=0)
            return b.op("Reshape", [flat, b.ints(node.shape)])
        return b.op(op_type, [v], axis=shapes.axis(node.op, axis, len(shape)),
                    keepdims=int(keepdims), select_last_index=0)

    v = b.cast(x[0], dtype, dt.uint8) if dtype == dt.bool_ else x[0]
    out = first("ArgMax" if node.op == "argmax" else "ArgMin", v)
    if not dt.is_floating(dtype):
        return out
    # numpy answers the first NaN; ONNX Runtime's ArgMax/ArgMin skip NaN
    first_nan = first("ArgMax", b.cast(b.op("IsNaN", [x[0]]), dt.bool_, dt.uint8))
    return b.op("Where", [_any_nan(b, x[0], _axes(node, meta), keepdims), first_nan, out])


@_handles("cumulative_sum")
def _cumulative_sum(b, node, x, meta):
    shape, dtype = meta[0]
    axis = shapes.axis(node.op, node.params.get("axis") or 0, len(shape))
    v = b.op("CumSum", [b.cast(x[0], dtype, node.dtype), b.const(axis, np.int64)])
    if not node.params.get("include_initial", False):
        return v
    before = [int(a == axis) for a in range(len(shape))]
    return b.op("Pad", [v, b.ints(before + [0] * len(shape))])


@_handles("sort", "argsort")
def _sort(b, node, x, meta):
    shape, dtype = meta[0]
    axis = shapes.axis(node.op, node.params.get("axis", -1), len(shape))
    v_dtype = dt.uint8 if dtype == dt.bool_ else dtype  # TopK has no bool
    v = b.cast(x[0], dtype, v_dtype)
    values, indices = b.op("TopK", [v, b.ints([shape[axis]])], outputs=2, axis=axis,
                           largest=int(node.params.get("descending", False)), sorted=1)
    return indices if node.op == "argsort" else b.cast(values, v_dtype, dtype)


# -- movement -----------------------------------------------------------------------------
@_handles("reshape")
def _reshape(b, node, x, meta):
    return b.op("Reshape", [x[0], b.ints(node.shape)], allowzero=int(0 in node.shape))


@_handles("permute_dims")
def _permute_dims(b, node, x, meta):
    ndim = len(meta[0][0])
    if not ndim:  # ONNX cannot write an empty perm
        return x[0]
    return b.op("Transpose", x, perm=[a % ndim for a in node.params["axes"]])


@_handles("broadcast_to")
def _broadcast_to(b, node, x, meta):
    return b.op("Expand", [x[0], b.ints(node.shape)])


@_handles("concat")
def _concat(b, node, x, meta):
    return b.op("Concat", x, axis=shapes.axis("concat", node.params.get("axis", 0),
                                              len(node.shape)))


@_handles("slice")
def _slice(b, node, x, meta):
    axes, starts, ends, steps = [], [], [], []
    for a, ((start, step, count), n) in enumerate(zip(node.params["bounds"], meta[0][0])):
        if (start, step, count) == (0, 1, n):
            continue
        end = start + step * count
        axes.append(a)
        starts.append(start)
        ends.append(_INT64_MIN if end < 0 else end)
        steps.append(step)
    if not axes:
        return x[0]
    return b.op("Slice", [x[0], b.ints(starts), b.ints(ends), b.ints(axes), b.ints(steps)])


def _part(b, x: str, axis: int, start: int, stop: int) -> str:
    return b.op("Slice", [x, b.ints([start]), b.ints([stop]), b.ints([axis])])


def _rotate(b, x: str, axis: int, n: int, shift: int) -> str:
    """x rolled by shift along axis of size n (numpy.roll)."""
    shift %= n
    if shift == 0:
        return x
    return b.op("Concat", [_part(b, x, axis, n - shift, n), _part(b, x, axis, 0, n - shift)],
                axis=axis)


@_handles("roll")
def _roll(b, node, x, meta):
    shape = meta[0][0]
    axis, shift = node.params.get("axis"), node.params["shift"]
    if not math.prod(shape):  # nothing to move
        return x[0]
    if axis is None:
        flat = b.op("Reshape", [x[0], b.ints([-1])])
        rolled = _rotate(b, flat, 0, math.prod(shape), sum(np.atleast_1d(shift)))
        return b.op("Reshape", [rolled, b.ints(shape)])
    v = x[0]
    for a, s in zip(np.atleast_1d(axis), np.atleast_1d(shift)):
        a = shapes.axis("roll", int(a), len(shape))
        v = _rotate(b, v, a, shape[a], int(s))
    return v


@_handles("pad")
def _pad(b, node, x, meta):
    shape, dtype = meta[0]
    width, mode = node.params["pad_width"], node.params.get("mode", "constant")
    if not shape or not any(sum(p) for p in width):
        return x[0]
    if mode == "wrap":  # tiles of the axis itself: [end part, x, start part]
        v = x[0]
        for a, (before, after) in enumerate(width):
            n = shape[a]
            parts = ([_part(b, v, a, n - before, n)] if before else []) + [v] + \
                    ([_part(b, v, a, 0, after)] if after else [])
            v = b.op("Concat", parts, axis=a) if len(parts) > 1 else v
        return v
    pads = b.ints([p[0] for p in width] + [p[1] for p in width])
    if mode == "edge":
        return b.op("Pad", [x[0], pads], mode="edge")
    value = b.const(node.params.get("value", 0), dtype)
    return b.op("Pad", [x[0], pads, value], mode="constant")


@_handles("take")
def _take(b, node, x, meta):
    data, indices = x
    if meta[1][1] not in (dt.int32, dt.int64):
        indices = b.cast(indices, meta[1][1], dt.int64)
    axis = node.params.get("axis")
    if axis is None:
        return b.op("Gather", [b.op("Reshape", [data, b.ints([-1])]), indices], axis=0)
    return b.op("Gather", [data, indices], axis=shapes.axis("take", axis, len(meta[0][0])))


@_handles("dynamic_update_slice")
def _dynamic_update_slice(b, node, x, meta):
    """ScatterND of the update's rows over the leading axes it does not cover whole (k),
    at the clamped starts plus each row's offset."""
    (shape, _), (size, _), (_, index_dtype) = meta
    if math.prod(size) == 0:
        return b.op("Identity", [x[0]])
    k = max((a + 1 for a in range(len(shape)) if size[a] != shape[a]), default=1)
    starts = b.op("Slice", [b.cast(x[2], index_dtype, dt.int64), b.ints([0]), b.ints([k])])
    clamped = b.op("Min", [b.op("Max", [starts, b.ints([0])]),
                           b.ints([n - u for n, u in zip(shape[:k], size[:k])])])
    offsets = np.stack(np.meshgrid(*[np.arange(u) for u in size[:k]], indexing="ij"), -1)
    indices = b.op("Add", [b.const(offsets, np.int64), clamped])
    return b.op("ScatterND", [x[0], indices, x[1]])


# -- matmul, nn composites ----------------------------------------------------------------
@_handles("matmul")
def _matmul(b, node, x, meta):
    if node.dtype not in (dt.int8, dt.uint8):
        return b.op("MatMul", x)
    # ONNX MatMul has no 8-bit types: int32 products wrap back to 8 bits as numpy's do
    wide = [b.cast(v, node.dtype, dt.int32) for v in x]
    return b.cast(b.op("MatMul", wide), dt.int32, node.dtype)


def _activation(b, y: str, activation, dtype) -> str:
    if activation is None:
        return y
    if activation in ("gelu", "gelu_tanh"):
        return _gelu_of(b, y, "tanh" if activation == "gelu_tanh" else "none", dtype)
    if activation == "silu":
        return b.op("Mul", [y, b.op("Sigmoid", [y])])
    return b.op({"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh"}[activation], [y])


@_handles("linear")
def _linear(b, node, x, meta):
    y = b.op("MatMul", x[:2])
    if len(x) > 2 and x[2] is not None:
        y = b.op("Add", [y, x[2]])
    return _activation(b, y, node.params.get("activation"), node.dtype)


def _gelu_of(b, x: str, approximate: str, dtype) -> str:
    """Gelu from opset 20, its erf or tanh formula before."""
    if b.opset >= 20:
        return b.op("Gelu", [x], approximate=approximate)

    def c(v):
        return b.const(v, dtype)

    if approximate == "tanh":
        cube = b.op("Mul", [b.op("Mul", [x, x]), x])
        inner = b.op("Mul", [c(math.sqrt(2 / math.pi)),
                             b.op("Add", [x, b.op("Mul", [c(0.044715), cube])])])
        curve = b.op("Tanh", [inner])
    else:
        curve = b.op("Erf", [b.op("Div", [x, c(math.sqrt(2))])])
    return b.op("Mul", [b.op("Mul", [c(0.5), x]), b.op("Add", [c(1.0), curve])])


@_handles("gelu")
def _gelu(b, node, x, meta):
    return _gelu_of(b, x[0], node.params.get("approximate", "none"), node.dtype)


def _on_vector(b, node, x, meta, make):
    """make(x) for a 0-d x made 1-d (Softmax and friends need an axis)."""
    if meta[0][0]:
        return make(x[0])
    return b.op("Reshape", [make(b.op("Reshape", [x[0], b.ints([1])])), b.ints([])])


@_handles("softmax", "log_softmax")
def _softmax(b, node, x, meta):
    op_type = "Softmax" if node.op == "softmax" else "LogSoftmax"
    ndim = max(len(meta[0][0]), 1)
    axis = node.params.get("axis", -1) % ndim
    return _on_vector(b, node, x, meta, lambda v: b.op(op_type, [v], axis=axis))


@_handles("layer_norm")
def _layer_norm(b, node, x, meta):
    shape, dtype = meta[0]
    weight = x[1] if len(x) > 1 and x[1] is not None else b.const(np.ones(shape[-1:]), dtype)
    bias = x[2] if len(x) > 2 else None
    return b.op("LayerNormalization", [x[0], weight, bias], axis=-1,
                epsilon=float(node.params.get("eps", 1e-5)))


# -- convolution and pooling (ONNX takes channels first: channels_last is transposed) -------
def _channels_first(b, node, x: str, rank: int, build) -> str:
    """build(x channels first) -> y, with Transposes around it for channels_last."""
    if node.params.get("layout", "channels_first") == "channels_first":
        return build(x)
    x = b.op("Transpose", [x], perm=[0, rank - 1, *range(1, rank - 1)])
    return b.op("Transpose", [build(x)], perm=[0, *range(2, rank), 1])


def _window_attrs(node, r: int, kernel=None) -> dict:
    """ONNX kernel_shape, strides and pads (all befores, then all afters) of a node."""
    from ..ops import conv as C

    pads = C.pads(node.op, node.params.get("padding", 0), r)
    attrs = {"pads": [lo for lo, _ in pads] + [hi for _, hi in pads]}
    if kernel is None:
        kernel = C.per_axis(node.op, "kernel", node.params["kernel"], r, 1)
    attrs["kernel_shape"] = list(kernel)
    stride = node.params.get("stride", 1)
    attrs["strides"] = list(kernel) if stride is None else \
        list(C.per_axis(node.op, "stride", stride, r, 1))
    return attrs


@_handles("conv", "conv_transpose")
def _conv(b, node, x, meta):
    from ..ops import conv as C

    rank = len(meta[0][0])
    attrs = _window_attrs(node, rank - 2, meta[1][0][2:])
    attrs["dilations"] = list(C.per_axis(node.op, "dilation", node.params.get("dilation", 1),
                                         rank - 2, 1))
    op_type = "Conv"
    if node.op == "conv_transpose":
        op_type = "ConvTranspose"
        attrs["output_padding"] = list(C.transpose_arguments(rank - 2, node.params)[3])
    inputs = x[1:3] if len(x) > 2 else x[1:2]
    return _channels_first(b, node, x[0], rank, lambda v: b.op(
        op_type, [v, *inputs], group=int(node.params.get("groups", 1)), **attrs))


@_handles("max_pool", "avg_pool")
def _pool(b, node, x, meta):
    rank = len(meta[0][0])
    attrs = _window_attrs(node, rank - 2)
    if node.op == "avg_pool":
        attrs["count_include_pad"] = int(node.params.get("count_include_pad", False))
    op_type = "MaxPool" if node.op == "max_pool" else "AveragePool"
    return _channels_first(b, node, x[0], rank, lambda v: b.op(op_type, [v], **attrs))


@_handles("batch_norm")
def _batch_norm(b, node, x, meta):
    dtype, rank = meta[0][1], len(meta[0][0])
    c = meta[1][0]
    weight = x[3] if len(x) > 3 and x[3] is not None else b.const(np.ones(c), dtype)
    bias = x[4] if len(x) > 4 and x[4] is not None else b.const(np.zeros(c), dtype)
    return _channels_first(b, node, x[0], rank, lambda v: b.op(
        "BatchNormalization", [v, weight, bias, x[1], x[2]],
        epsilon=float(node.params.get("eps", 1e-5))))


@_handles("rms_norm")
def _rms_norm(b, node, x, meta):
    """RMSNormalization from opset 23, its formula before."""
    (shape, dtype), eps = meta[0], float(node.params.get("eps", 1e-6))
    weight = x[1] if len(x) > 1 and x[1] is not None else None
    if b.opset >= 23:
        weight = weight or b.const(np.ones(shape[-1:]), dtype)
        return b.op("RMSNormalization", [x[0], weight], axis=-1, epsilon=eps)
    square = b.reduce("ReduceMean", b.op("Mul", [x[0], x[0]]), [len(shape) - 1], True)
    y = b.op("Div", [x[0], b.op("Sqrt", [b.op("Add", [square, b.const(eps, dtype)])])])
    return y if weight is None else b.op("Mul", [y, weight])


@_handles("rope")
def _rope(b, node, x, meta):
    """Slices, products and a Concat (ONNX's RotaryEmbedding takes its own input layouts)."""
    (shape, _), rank = meta[0], len(meta[0][0])
    half = shape[-1] // 2
    if node.params.get("interleaved", False):
        pairs = b.op("Reshape", [x[0], b.ints([*shape[:-1], half, 2])])
        first, second = b.op("Split", [pairs, b.ints([1, 1])], outputs=2, axis=rank)
        a, c = (b.op("Squeeze", [v, b.ints([rank])]) for v in (first, second))
    else:
        a, c = b.op("Split", [x[0], b.ints([half, half])], outputs=2, axis=rank - 1)
    cos, sin = x[1], x[2]
    y1 = b.op("Sub", [b.op("Mul", [a, cos]), b.op("Mul", [c, sin])])
    y2 = b.op("Add", [b.op("Mul", [c, cos]), b.op("Mul", [a, sin])])
    if node.params.get("interleaved", False):
        y1, y2 = (b.op("Unsqueeze", [v, b.ints([rank])]) for v in (y1, y2))
        return b.op("Reshape", [b.op("Concat", [y1, y2], axis=rank), b.ints(list(shape))])
    return b.op("Concat", [y1, y2], axis=rank - 1)


@_handles("scaled_dot_product_attention")
def _attention(b, node, x, meta):
    q, k, v = x
    (q_shape, dtype), (k_shape, _) = meta[0], meta[1]
    rank = len(k_shape)
    scale = node.params.get("scale")
    scale = 1 / math.sqrt(q_shape[-1]) if scale is None else scale
    swap = [*range(rank - 2), rank - 1, rank - 2]
    scores = b.op("MatMul", [q, b.op("Transpose", [k], perm=swap)])
    scores = b.op("Mul", [scores, b.const(scale, dtype)])
    if node.params.get("causal", False):
        mask = b.const(ops.causal_mask(q_shape[-2], k_shape[-2]))
        scores = b.op("Where", [mask, scores, b.const(-np.inf, dtype)])
    return b.op("MatMul", [b.op("Softmax", [scores], axis=-1), v])


# -- predicates, integer division, clip -----------------------------------------------------
@_handles("isnan", "isinf", "isfinite")
def _predicate(b, node, x, meta):
    if not dt.is_floating(meta[0][1]):  # integers are never NaN or infinite
        fill = helper.make_tensor("value", TensorProto.BOOL, [1], [node.op == "isfinite"])
        return b.op("ConstantOfShape", [b.ints(node.shape)], value=fill)
    if node.op == "isnan":
        return b.op("IsNaN", x)
    if node.op == "isinf":
        return b.op("IsInf", x)
    return b.op("Not", [b.op("Or", [b.op("IsNaN", x), b.op("IsInf", x)])])


def _fmod_moved(b, x, dtype):
    """(C's fmod of the operands, where numpy moves it by the divisor: it is nonzero and
    its sign differs from the divisor's)."""
    r = b.op("Mod", x, fmod=1)
    zero = b.const(0, dtype)
    signs_differ = b.op("Xor", [b.op("Less", [r, zero]), b.op("Less", [x[1], zero])])
    return r, b.op("And", [b.op("Not", [b.op("Equal", [r, zero])]), signs_differ])


@_handles("remainder")
def _remainder(b, node, x, meta):
    if not dt.is_floating(node.dtype):
        return b.op("Mod", x, fmod=0)  # integers: the sign of the divisor, as numpy
    r, moved = _fmod_moved(b, x, node.dtype)
    return b.op("Where", [moved, b.op("Add", [r, x[1]]), r])


@_handles("floor_divide")
def _floor_divide(b, node, x, meta):
    if not dt.is_floating(node.dtype):
        # integers: ONNX Div truncates; a - (a mod b) is an exact multiple of b
        return b.op("Div", [b.op("Sub", [x[0], b.op("Mod", x, fmod=0)]), x[1]])
    # floats as numpy computes them: (a - fmod(a, b)) / b, less one where the remainder
    # moves, rounded to the nearest integer; a / b where b is 0 (so inf // 2 is NaN)
    r, moved = _fmod_moved(b, x, node.dtype)
    one = b.const(1, node.dtype)
    quotient = b.op("Div", [b.op("Sub", [x[0], r]), x[1]])
    quotient = b.op("Where", [moved, b.op("Sub", [quotient, one]), quotient])
    down = b.op("Floor", [quotient])
    up = b.op("Greater", [b.op("Sub", [quotient, down]), b.const(0.5, node.dtype)])
    rounded = b.op("Where", [up, b.op("Add", [down, one]), down])
    by_zero = b.op("Equal", [x[1], b.const(0, node.dtype)])
    return b.op("Where", [by_zero, b.op("Div", x), rounded])


@_handles("clip")
def _clip(b, node, x, meta):
    v = x[0]
    if len(x) > 1 and x[1] is not None:
        v = b.op("Max", [v, x[1]])
    if len(x) > 2 and x[2] is not None:
        v = b.op("Min", [v, x[2]])
    return v


# -- int8 ---------------------------------------------------------------------------------
@_handles("quantize_linear")
def _quantize_linear(b, node, x, meta):
    v = b.cast(x[0], meta[0][1], dt.float32)  # ONNX takes x in scale's dtype
    return b.op("QuantizeLinear", [v, x[1], x[2]], axis=node.params.get("axis", -1))


@_handles("dequantize_linear")
def _dequantize_linear(b, node, x, meta):
    return b.op("DequantizeLinear", x, axis=node.params.get("axis", -1))


_EXACT_INT8 = 64
"""uint8 x int8 pair sums stay within 16 bits for int8 values of at most this magnitude."""


def _uint8_weight(b, w: str, zero_point: int) -> tuple[str, str]:
    """The int8 right operand of a uint8 x int8 MatMulInteger and its zero point: as they
    are in the U8S8 form; in the U8U8 form as uint8 (w + 128, zero_point + 128: the same
    differences), unless w is a constant within 7 bits (kept as the int8 that
    quantize_dynamic writes)."""
    if b.int8_form == quant.U8S8:
        return w, b.const(zero_point, dt.int8)
    value = b.constants.get(w)
    if value is not None and np.abs(value.astype(np.int16)).max(initial=0) <= _EXACT_INT8:
        return w, b.const(zero_point, dt.int8)
    if value is not None:
        shifted = b.const((value.astype(np.int16) + 128).astype(np.uint8))
    else:
        wide = b.op("Add", [b.cast(w, dt.int8, dt.int32), b.const(128, dt.int32)])
        shifted = b.cast(wide, dt.int32, dt.uint8)
    return shifted, b.const(zero_point + 128, dt.uint8)


@_handles("qmatmul")
def _qmatmul(b, node, x, meta):
    a_zero = b.const(node.params.get("a_zero_point", 0), meta[0][1])
    w_zero = node.params.get("b_zero_point", 0)
    if meta[0][1] == dt.uint8:
        w, w_zero = _uint8_weight(b, x[1], w_zero)
    else:  # int8 x int8 is exact
        w, w_zero = x[1], b.const(w_zero, dt.int8)
    return b.op("MatMulInteger", [x[0], w, a_zero, w_zero])


@_handles("quantized_linear")
def _quantized_linear(b, node, x, meta):
    """As ONNX Runtime's quantize_dynamic writes a MatMul: x quantized to uint8 at run time,
    integer product, scaled back by x's scale times the weight's per-column scales."""
    xq, x_scale, x_zero = b.op("DynamicQuantizeLinear", [x[0]], outputs=3)
    w, w_zero = _uint8_weight(b, x[1], 0)
    acc = b.op("MatMulInteger", [xq, w, x_zero, w_zero])
    scale = b.op("Mul", [x_scale, x[2]])
    y = b.op("Mul", [b.op("Cast", [acc], to=TensorProto.FLOAT), scale])
    return b.op("Add", [y, x[3]]) if len(x) > 3 and x[3] is not None else y

