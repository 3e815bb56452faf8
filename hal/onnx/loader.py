"""ONNX models as hal graphs, specialised to the shapes of the inputs they are given.

`load` reads and checks a model; `Model.graph(x, mask)` walks its nodes once for those
input shapes. A node whose operands are all known at that point (initializers,
constants, the static shapes of the inputs: the Shape/Gather/Concat arithmetic of
exported models) is computed right away, on the host; any other becomes hal ops on the
symbolic inputs. So the graph has static shapes and tensor ops only, and runs where
hal graphs run: `Model(x, mask)` compiles it for x's device (`Backend.compile`).

ONNX semantics are kept where hal's differ: integer Div truncates, Mod follows `fmod`,
reductions keep integer dtypes, QuantizeLinear and DequantizeLinear default to axis 1.
"""

from __future__ import annotations

import itertools
import math
import os

import numpy as np
import onnx
from google.protobuf.message import DecodeError
from onnx import helper, numpy_helper

from .. import functions as F
from .. import nn
from ..compile import passes, pipeline
from ..compile.graph import Graph
from ..compile.trace import Trace, Tracer
from ..dispatch import interpret
from ..runtime import dtypes as dt
from ..runtime.errors import HalError, ShapeError, UnsupportedDType, UnsupportedOp
from ..runtime.registry import resolve_device
from ..tensor import Tensor

_MIN_OPSET = 11
"""The oldest ONNX opset `load` reads."""


def load(path_or_model) -> Model:
    """The model in an ONNX file (or a ModelProto), checked by onnx.checker."""
    if isinstance(path_or_model, onnx.ModelProto):
        proto, source = path_or_model, f"model {path_or_model.graph.name!r}"
    else:
        source = os.fspath(path_or_model)
        try:
            proto = onnx.load(source)
        except (OSError, ValueError, DecodeError) as e:
            raise HalError(f"{source}: cannot read it as an ONNX model ({type(e).__name__}: "
                           f"{e}); give the path of a .onnx file") from None
    try:
        onnx.checker.check_model(proto)
    except onnx.checker.ValidationError as e:
        message = str(e).strip().splitlines()[0]
        raise HalError(f"{source}: the ONNX checker rejects it: {message}; re-export the "
                       "model, or repair it (onnx.checker.check_model shows the problem)") \
            from None
    return Model(proto, source)


class Model:
    """A loaded ONNX model: its inputs and outputs, graphs per input shapes, and runs.

    `input_names`, `output_names`; `inputs`: (name, dims, dtype) with dims ints or the
    names of symbolic dims; `graph(*inputs)` the hal Graph for these shapes; calling
    the model (or `run`) compiles that graph on the inputs' device (cached) and runs it.
    """

    def __init__(self, proto: onnx.ModelProto, source: str):
        self.proto, self.source = proto, source
        graph = proto.graph
        self.opset = next((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")),
                          1)
        if self.opset < _MIN_OPSET:
            raise HalError(f"{source}: opset {self.opset} is older than hal.onnx reads "
                           f"({_MIN_OPSET} and later); convert the model with "
                           "onnx.version_converter.convert_version")
        self.initializers = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
        self.inputs = [(v.name, _dims(v), _dtype(v.type.tensor_type.elem_type,
                                                  f"{source}: input {v.name!r}"))
                       for v in graph.input if v.name not in self.initializers]
        self.input_names = [name for name, _, _ in self.inputs]
        self.output_names = [v.name for v in graph.output]
        for node in graph.node:
            if node.domain not in ("", "ai.onnx") or node.op_type not in _HANDLERS:
                domain = f" of domain {node.domain!r}" if node.domain not in ("", "ai.onnx") \
                    else ""
                raise UnsupportedOp(f"{source}: node {node.name or '(unnamed)'!r}: ONNX op "
                                    f"{node.op_type!r}{domain} is not supported; "
                                    "hal.onnx.SUPPORTED_OPS lists those that are")
        self._compiled: dict[tuple, object] = {}

    def __repr__(self) -> str:
        ins = ", ".join(f"{n}: {d.name}[{','.join(map(str, s))}]" for n, s, d in self.inputs)
        return f"<hal.onnx.Model {self.source} ({ins}) -> {', '.join(self.output_names)}>"

    def graph(self, *inputs, device=None) -> Graph:
        """The hal Graph of the model for inputs given as Tensors, numpy arrays or
        (shape, dtype) pairs; its constants live on `device` (default: the first Tensor's,
        else hal's default device)."""
        specs = self._specs(inputs)
        if device is None:
            device = next((x.device for x in inputs if isinstance(x, Tensor)), None)
        return _Import(self, resolve_device(device)).run(specs)

    def run(self, *inputs) -> list[Tensor]:
        """The outputs for these input Tensors (numpy arrays go to the first Tensor's
        device), through the graph compiled for their shapes, dtypes and device."""
        device = resolve_device(next((x.device for x in inputs if isinstance(x, Tensor)), None))
        tensors = [x if isinstance(x, Tensor) else Tensor.from_host(np.asarray(x), device)
                   for x in inputs]
        key = tuple((t.shape, t.dtype, t.device) for t in tensors)
        executable = self._compiled.get(key)
        if executable is None:
            if len({t.device for t in tensors}) > 1:
                raise HalError(f"{self.source}: inputs on several devices "
                               f"({', '.join(sorted({t.device.name for t in tensors}))}); "
                               "move them to one with .to(device)")
            graph = self.graph(*tensors, device=device)
            executable = self._compiled[key] = pipeline.compile(graph, device)
        return list(executable(*tensors))

    __call__ = run

    def _specs(self, inputs) -> list[tuple[tuple, np.dtype]]:
        """(shape, dtype) per input, checked against the declared dims and dtypes."""
        if len(inputs) != len(self.inputs):
            raise HalError(f"{self.source}: {len(inputs)} inputs given, the model takes "
                           f"{len(self.inputs)} ({', '.join(self.input_names)})")
        bound: dict[str, tuple[int, str]] = {}
        specs = []
        for x, (name, dims, dtype) in zip(inputs, self.inputs):
            if isinstance(x, (Tensor, np.ndarray)):
                shape, given = tuple(x.shape), x.dtype
            else:
                shape, given = tuple(x[0]), dt.dtype(x[1])
            if given != dtype:
                raise UnsupportedDType(f"{self.source}: input {name!r} is {dtype.name}, got "
                                       f"{np.dtype(given).name}; cast it with hal.astype")
            if len(shape) != len(dims):
                raise ShapeError(f"{self.source}: input {name!r} has {len(dims)} dims "
                                 f"{_text(dims)}, got shape {shape}")
            for dim, n in zip(dims, shape):
                if isinstance(dim, int) and dim != n:
                    raise ShapeError(f"{self.source}: input {name!r} has shape "
                                     f"{_text(dims)}, got {shape}")
                if isinstance(dim, str) and bound.setdefault(dim, (n, name))[0] != n:
                    raise ShapeError(f"{self.source}: dim {dim!r} is {bound[dim][0]} in input "
                                     f"{bound[dim][1]!r} but {n} in {name!r}")
            specs.append((shape, dtype))
        return specs


def _dims(value: onnx.ValueInfoProto) -> tuple:
    """Each dim an int, the name of a symbolic dim, or "?" (unnamed)."""
    return tuple(d.dim_value if d.HasField("dim_value") else d.dim_param or "?"
                 for d in value.type.tensor_type.shape.dim)


def _text(dims) -> str:
    return f"({', '.join(map(str, dims))})"


def _dtype(elem_type: int, what: str) -> np.dtype:
    try:
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(elem_type))
    except (KeyError, TypeError):
        dtype = None
    if dtype not in dt.ALL:
        raise UnsupportedDType(f"{what} is ONNX {onnx.TensorProto.DataType.Name(elem_type)}, "
                               f"which hal has no dtype for (it has {', '.join(dt.names(dt.ALL))})")
    return dtype


# -- the walk over the nodes ------------------------------------------------------------------
class _Import:
    """One specialisation of a model: values by name, each a numpy array (known now) or a
    Tracer (computed by the graph)."""

    def __init__(self, model: Model, device):
        self.model, self.device = model, device
        self.uploaded: dict[int, tuple[np.ndarray, Tensor]] = {}
        self.values: dict[str, object] = {}

    def run(self, specs) -> Graph:
        recorder = Trace()
        values = self.values = dict(self.model.initializers)
        for (name, _, _), (shape, dtype) in zip(self.model.inputs, specs):
            values[name] = recorder.input(shape, dtype, self.device)
        for node in self.model.proto.graph.node:
            self.node(node, values, recorder)
        outputs = [self.tensor(values[name]) for name in self.model.output_names]
        return passes.optimize(recorder.graph(outputs))

    def node(self, node: onnx.NodeProto, values: dict, recorder: Trace) -> None:
        where = f"{self.model.source}: node {node.name or '(unnamed)'!r} ({node.op_type})"
        handler = _HANDLERS[node.op_type]  # Model checked that there is one
        args = [values[n] if n else None for n in node.input]
        known = all(not isinstance(a, Tracer) for a in args)
        c = _Node(node, self.model.opset, _HOST if known else self)
        try:
            if known:  # every operand known: compute it now, on the host
                results = handler(c, *args)
            else:
                with interpret(recorder):
                    results = handler(c, *args)
        except HalError as e:
            raise type(e)(f"{where}: {e}") from None
        results = results if isinstance(results, tuple) else (results,)
        for name, value in zip(node.output, results):
            if name:
                values[name] = value.numpy() if known and isinstance(value, Tensor) else value

    def made_by(self, name: str) -> tuple[str | None, list]:
        """The op type of the node that computed value `name` and its operands' values
        (None and [] for a model input or initializer)."""
        node = next((n for n in self.model.proto.graph.node if name in n.output), None)
        return (None, []) if node is None else \
            (node.op_type, [self.values[i] if i else None for i in node.input])

    def tensor(self, value) -> Tensor:
        """value as a Tensor on the device (a numpy array uploaded once)."""
        if isinstance(value, Tensor):
            return value
        held = self.uploaded.get(id(value))
        if held is None:
            held = self.uploaded[id(value)] = (value, _upload(value, self.device))
        return held[1]


class _Host:
    """Where known operands are computed: hal's CPU device, right away."""

    def tensor(self, value) -> Tensor:
        """value as a CPU Tensor."""
        return value if isinstance(value, Tensor) else _upload(value, resolve_device("cpu"))


_HOST = _Host()


def _upload(value: np.ndarray, device) -> Tensor:
    if value.dtype not in dt.ALL:
        raise UnsupportedDType(f"a constant of dtype {value.dtype.name}, which hal has no "
                               f"dtype for (it has {', '.join(dt.names(dt.ALL))})")
    return Tensor.from_host(np.require(value, requirements="C"), device)


class _Node:
    """What a handler sees of its node: attributes, opset, and how to make operands
    tensors (`tensor`) or read them as static values (`static`, `ints`, `axes`)."""

    def __init__(self, node: onnx.NodeProto, opset: int, home):
        self.node, self.opset, self.home = node, opset, home
        self.attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}

    def attr(self, name: str, default=None):
        """An attribute's value (bytes decoded), or default."""
        value = self.attrs.get(name, default)
        return value.decode() if isinstance(value, bytes) else value

    def tensor(self, value) -> Tensor | None:
        """An operand as a Tensor (None stays None)."""
        return None if value is None else self.home.tensor(value)

    def static(self, value, what: str) -> np.ndarray:
        """An operand whose value the graph's shapes depend on: known now, or an error."""
        if isinstance(value, Tracer):
            raise HalError(f"its {what} is computed from the model's inputs, but hal graphs "
                           "need it known when the graph is built (static shapes)")
        return np.asarray(value)

    def ints(self, value, what: str) -> list[int]:
        """A static operand as a list of Python ints."""
        return [int(v) for v in self.static(value, what).reshape(-1)]

    def axes(self, value, what="axes") -> list[int] | None:
        """Axes from the attribute (older opsets) or the input; None when neither."""
        if "axes" in self.attrs:
            return list(self.attrs["axes"])
        return None if value is None else self.ints(value, what)


# -- handlers: (node, *operands) -> result or tuple of results --------------------------------
_HANDLERS: dict = {}


def _handles(*names):
    def register(fn):
        for n in names:
            _HANDLERS[n] = fn
        return fn

    return register


_ELEMENTWISE = {
    "Identity": lambda x: x, "Neg": F.negative, "Abs": F.abs, "Exp": F.exp, "Log": F.log,
    "Sqrt": F.sqrt, "Sin": F.sin, "Cos": F.cos, "Tanh": F.tanh, "Erf": F.erf,
    "Relu": nn.relu, "Sigmoid": nn.sigmoid, "Not": F.logical_not, "IsNaN": F.isnan,
    "Add": F.add, "Sub": F.subtract, "Mul": F.multiply, "Equal": F.equal, "Less": F.less,
    "Greater": F.greater, "LessOrEqual": F.less_equal, "GreaterOrEqual": F.greater_equal,
    "Where": F.where, "MatMul": F.matmul,
    "And": lambda a, b: F.where(a, b, a), "Or": lambda a, b: F.where(a, a, b),
    "Xor": F.not_equal,
    "Asin": F.asin, "Acos": F.acos, "Atan": F.atan, "Tan": F.tan, "Sinh": F.sinh,
    "Cosh": F.cosh, "Asinh": F.asinh, "Acosh": F.acosh, "Atanh": F.atanh, "Sign": F.sign,
    "Floor": F.floor, "Ceil": F.ceil, "Round": F.round, "BitwiseAnd": F.bitwise_and,
    "BitwiseOr": F.bitwise_or, "BitwiseXor": F.bitwise_xor, "BitwiseNot": F.bitwise_invert,
}


@_handles(*_ELEMENTWISE)
def _elementwise(c, *xs):
    return _ELEMENTWISE[c.node.op_type](*(c.tensor(x) for x in xs))


@_handles("Max", "Min", "Sum")
def _variadic(c, *xs):
    fn = {"Max": F.maximum, "Min": F.minimum, "Sum": F.add}[c.node.op_type]
    out = c.tensor(xs[0])
    for x in xs[1:]:
        out = fn(out, c.tensor(x))
    return out


def _one(x: Tensor, value) -> Tensor:
    """A 0-d tensor of value in x's dtype, on x's device."""
    return Tensor.from_host(np.asarray(value, dtype=x.dtype), x.device)


@_handles("Div")
def _div(c, a, b):
    a, b = c.tensor(a), c.tensor(b)
    if dt.is_floating(a.dtype):
        return F.divide(a, b)
    # integers: ONNX truncates toward zero, hal's floor_divide rounds down
    q = F.floor_divide(a, b)
    inexact = F.not_equal(F.remainder(a, b), _one(a, 0))
    signs_differ = F.not_equal(F.less(a, _one(a, 0)), F.less(b, _one(b, 0)))
    return F.add(q, F.astype(F.where(inexact, signs_differ, inexact), q.dtype))


@_handles("Mod")
def _mod(c, a, b):
    a, b = c.tensor(a), c.tensor(b)
    r = F.remainder(a, b)  # the sign of b; fmod=1 wants the sign of a
    if not c.attr("fmod", 0):
        return r
    zero = _one(a, 0)
    nonzero = F.not_equal(r, zero)
    moved = F.where(nonzero, F.not_equal(F.less(r, zero), F.less(a, zero)), nonzero)
    return F.where(moved, F.subtract(r, b), r)


@_handles("Pow")
def _pow(c, x, y):
    x = c.tensor(x)
    if isinstance(y, np.ndarray) and y.shape == () and y == 2:
        return F.multiply(x, x)
    return F.power(x, F.astype(c.tensor(y), x.dtype))


@_handles("Reciprocal")
def _reciprocal(c, x):
    x = c.tensor(x)
    return F.divide(_one(x, 1), x)


@_handles("IsInf")
def _isinf(c, x):
    x = c.tensor(x)
    out = F.isinf(x)
    if not c.attr("detect_negative", 1):
        out = F.where(out, F.greater(x, _one(x, 0)), out)
    if not c.attr("detect_positive", 1):
        out = F.where(out, F.less(x, _one(x, 0)), out)
    return out


@_handles("Cast")
def _cast(c, x):
    return F.astype(c.tensor(x), _dtype(c.attr("to"), "its target type"))


@_handles("Clip")
def _clip(c, x, lo=None, hi=None):
    return F.clip(c.tensor(x), c.tensor(lo), c.tensor(hi))


@_handles("Dropout")
def _dropout(c, x, ratio=None, training_mode=None):
    if training_mode is not None and bool(c.static(training_mode, "training_mode")):
        raise UnsupportedOp("Dropout in training mode is not supported (inference only)")
    return x, np.ones(c.tensor(x).shape, dtype=bool)


# -- shapes and constants -----------------------------------------------------------------
@_handles("Constant")
def _constant(c):
    (name, value), = c.attrs.items()
    if name == "value":
        return numpy_helper.to_array(value)
    kinds = {"value_float": np.float32, "value_floats": np.float32, "value_int": np.int64,
             "value_ints": np.int64}
    if name not in kinds:
        raise UnsupportedOp(f"Constant with {name!r} is not supported")
    return np.asarray(value, dtype=kinds[name])


@_handles("Shape")
def _shape(c, x):
    shape = c.tensor(x).shape
    return np.asarray(shape[c.attr("start", 0):c.attr("end", len(shape))], dtype=np.int64)


@_handles("Size")
def _size(c, x):
    return np.asarray(math.prod(c.tensor(x).shape), dtype=np.int64)


@_handles("ConstantOfShape")
def _constant_of_shape(c, shape):
    value = c.attr("value")
    fill = numpy_helper.to_array(value).reshape(-1) if value is not None \
        else np.zeros(1, np.float32)
    return np.full(c.ints(shape, "shape"), fill[0], dtype=fill.dtype)


@_handles("Range")
def _range(c, start, limit, delta):
    start, limit, delta = (c.static(v, n) for v, n in
                           ((start, "start"), (limit, "limit"), (delta, "delta")))
    return np.arange(start, limit, delta, dtype=start.dtype)


@_handles("Reshape")
def _reshape(c, x, shape):
    x = c.tensor(x)
    target = c.ints(shape, "shape")
    if not c.attr("allowzero", 0):
        target = [x.shape[i] if n == 0 else n for i, n in enumerate(target)]
    return F.reshape(x, target)


@_handles("Flatten")
def _flatten(c, x):
    x = c.tensor(x)
    axis = c.attr("axis", 1) % (x.ndim + 1) if x.ndim else 0
    return F.reshape(x, (math.prod(x.shape[:axis]), math.prod(x.shape[axis:])))


@_handles("Unsqueeze")
def _unsqueeze(c, x, axes=None):
    x = c.tensor(x)
    ndim = x.ndim + len(c.axes(axes))
    new = sorted(a % ndim for a in c.axes(axes))
    dims = iter(x.shape)
    return F.reshape(x, [1 if i in new else next(dims) for i in range(ndim)])


@_handles("Squeeze")
def _squeeze(c, x, axes=None):
    x = c.tensor(x)
    axes = c.axes(axes)
    if axes is None:
        axes = [i for i, n in enumerate(x.shape) if n == 1]
    return F.squeeze(x, tuple(axes))


@_handles("Transpose")
def _transpose(c, x):
    x = c.tensor(x)
    return F.permute_dims(x, c.attr("perm", list(reversed(range(x.ndim)))))


@_handles("Expand")
def _expand(c, x, shape):
    x = c.tensor(x)
    return F.broadcast_to(x, np.broadcast_shapes(x.shape, tuple(c.ints(shape, "shape"))))


@_handles("Concat")
def _concat(c, *xs):
    return F.concat([c.tensor(x) for x in xs], axis=c.attr("axis"))


def _bounds(shape, picks: dict) -> tuple:
    """hal slice bounds from Python slices per axis."""
    bounds = []
    for a, n in enumerate(shape):
        start, stop, step = picks.get(a, slice(None)).indices(n)
        bounds.append((start, step, len(range(start, stop, step))))
    return tuple(bounds)


def _sliced(x: Tensor, picks: dict) -> Tensor:
    bounds = _bounds(x.shape, picks)
    return x if bounds == tuple((0, 1, n) for n in x.shape) else F.slice(x, bounds)


@_handles("Slice")
def _slice(c, x, starts, ends, axes=None, steps=None):
    x = c.tensor(x)
    starts, ends = c.ints(starts, "starts"), c.ints(ends, "ends")
    axes = range(len(starts)) if axes is None else c.ints(axes, "axes")
    steps = [1] * len(starts) if steps is None else c.ints(steps, "steps")
    return _sliced(x, {a % x.ndim: slice(b, e, s)
                       for a, b, e, s in zip(axes, starts, ends, steps)})


@_handles("Split")
def _split(c, x, split=None):
    x = c.tensor(x)
    axis, count = c.attr("axis", 0) % x.ndim, len(c.node.output)
    if split is not None or "split" in c.attrs:
        sizes = c.attrs["split"] if "split" in c.attrs else c.ints(split, "split")
    else:
        each = -(-x.shape[axis] // count)
        sizes = [min(each, x.shape[axis] - each * i) for i in range(count)]
    starts = np.cumsum([0, *sizes])
    return tuple(_sliced(x, {axis: slice(int(a), int(b))})
                 for a, b in itertools.pairwise(starts))


@_handles("Gather")
def _gather(c, data, indices):
    data = c.tensor(data)
    return F.take(data, c.tensor(indices), axis=c.attr("axis", 0) % max(data.ndim, 1))


@_handles("ScatterND")
def _scatter_nd(c, data, indices, updates):
    """A block write (hal.dynamic_update_slice), the ScatterND hal's exporter writes: indices
    (*block, k) holding start + each position of the block, known now or Add(grid, start)."""
    data, updates = c.tensor(data), c.tensor(updates)
    block, k = tuple(indices.shape[:-1]), indices.shape[-1]
    if 0 in block:
        return data  # nothing is written
    reduction = c.attr("reduction", "none")
    start = _block_start(c, indices, block, data.shape[:k]) \
        if reduction == "none" and len(block) == k else None
    if start is None:
        raise UnsupportedOp(
            f"ScatterND with reduction {reduction!r} and indices of shape {indices.shape} into "
            f"data of shape {data.shape} is not a block write; hal has no general scatter and "
            "imports ScatterND as hal.dynamic_update_slice only: reduction 'none', indices of "
            "shape (*block, k) with k block axes, each row start + its position in the block "
            "(known when the graph is built, or computed as Add(grid, start) as hal.onnx.export "
            "writes them)")
    zeros = np.zeros(data.ndim - k, np.int64)
    return F.dynamic_update_slice(data, updates, F.concat([c.tensor(start), c.tensor(zeros)]))


def _block_start(c, indices, block: tuple, dims: tuple):
    """The start of a ScatterND's indices when they cover a block inside dims, else None."""
    grid = np.moveaxis(np.indices(block), 0, -1)
    if isinstance(indices, Tracer):  # hal.onnx.export's Add(grid, clamped start)
        op, operands = c.home.made_by(c.node.input[1])
        pairs = (operands, operands[::-1]) if op == "Add" else ()
        return next((start for g, start in pairs if isinstance(g, np.ndarray)
                     and np.array_equal(g, grid) and tuple(start.shape) == (len(dims),)), None)
    indices = np.where(indices < 0, indices + dims, indices)  # ONNX's negative indices
    start = indices[(0,) * len(block)]
    inside = (start >= 0).all() and (start + block <= dims).all()
    return start if inside and np.array_equal(indices, start + grid) else None


@_handles("Pad")
def _pad(c, x, pads, value=None, axes=None):
    x = c.tensor(x)
    mode = c.attr("mode", "constant")
    if mode not in ("constant", "edge", "wrap"):
        raise UnsupportedOp(f"Pad mode {mode!r} is not supported (constant, edge, wrap are)")
    pads = c.ints(pads, "pads")
    axes = range(x.ndim) if axes is None else [a % x.ndim for a in c.ints(axes, "axes")]
    width = [[0, 0] for _ in range(x.ndim)]
    for k, a in enumerate(axes):
        width[a] = [pads[k], pads[k + len(axes)]]
    fill = 0 if value is None else c.static(value, "constant_value").item()
    out = F.pad(x, [(max(b, 0), max(e, 0)) for b, e in width], mode=mode, value=fill)
    return _sliced(out, {a: slice(max(-b, 0), out.shape[a] - max(-e, 0))
                         for a, (b, e) in enumerate(width) if min(b, e) < 0})


# -- reductions, scans, sorting ---------------------------------------------------------------
@_handles("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin")
def _reduce(c, x, axes=None):
    x = c.tensor(x)
    axes = c.axes(axes)
    if not axes:
        if c.attr("noop_with_empty_axes", 0):
            return x
        axes = range(x.ndim)
    fn = {"ReduceSum": F.sum, "ReduceMean": nn.mean, "ReduceMax": F.max,
          "ReduceMin": F.min}[c.node.op_type]
    keepdims = bool(c.attr("keepdims", 1))
    return F.astype(fn(x, axis=tuple(a % x.ndim for a in axes), keepdims=keepdims), x.dtype)


@_handles("ArgMax", "ArgMin")
def _arg_extreme(c, x):
    x = c.tensor(x)
    axis, keepdims = c.attr("axis", 0) % x.ndim, bool(c.attr("keepdims", 1))
    fn = F.argmax if c.node.op_type == "ArgMax" else F.argmin
    if not c.attr("select_last_index", 0):
        return fn(x, axis=axis, keepdims=keepdims)
    n = x.shape[axis]
    last = fn(_sliced(x, {axis: slice(None, None, -1)}), axis=axis, keepdims=keepdims)
    return F.subtract(_one(last, n - 1), last)


@_handles("CumSum")
def _cumsum(c, x, axis):
    x = c.tensor(x)
    a = c.ints(axis, "axis")[0] % x.ndim
    reverse = bool(c.attr("reverse", 0))
    flip = {a: slice(None, None, -1)}
    v = _sliced(x, flip) if reverse else x
    out = F.cumulative_sum(v, axis=a, include_initial=bool(c.attr("exclusive", 0)))
    out = _sliced(out, {a: slice(0, x.shape[a])})
    return F.astype(_sliced(out, flip) if reverse else out, x.dtype)


@_handles("TopK")
def _topk(c, x, k):
    x = c.tensor(x)
    axis, k = c.attr("axis", -1) % x.ndim, c.ints(k, "K")[0]
    descending = bool(c.attr("largest", 1))
    keep = {axis: slice(0, k)}
    return (_sliced(F.sort(x, axis=axis, descending=descending), keep),
            _sliced(F.argsort(x, axis=axis, descending=descending), keep))


# -- nn -----------------------------------------------------------------------------------
@_handles("Softmax", "LogSoftmax")
def _softmax(c, x):
    x = c.tensor(x)
    fn = nn.softmax if c.node.op_type == "Softmax" else nn.log_softmax
    if c.opset >= 13:
        return fn(x, axis=c.attr("axis", -1))
    axis = c.attr("axis", 1) % x.ndim  # before opset 13: over the axes from axis on
    flat = F.reshape(x, (math.prod(x.shape[:axis]), math.prod(x.shape[axis:])))
    return F.reshape(fn(flat, axis=-1), x.shape)


@_handles("LayerNormalization")
def _layer_norm(c, x, scale, bias=None):
    if any(c.node.output[1:]):
        raise UnsupportedOp("LayerNormalization's Mean and InvStdDev outputs are not "
                            "supported")
    x, scale, bias = c.tensor(x), c.tensor(scale), c.tensor(bias)
    axis = c.attr("axis", -1) % x.ndim
    eps = c.attr("epsilon", 1e-5)
    if axis == x.ndim - 1:
        return nn.layer_norm(x, scale, bias, eps=eps)
    size = math.prod(x.shape[axis:])  # normalise the trailing axes as one
    flat = [None if p is None else F.reshape(p, (size,)) for p in (scale, bias)]
    y = nn.layer_norm(F.reshape(x, (*x.shape[:axis], size)), *flat, eps=eps)
    return F.reshape(y, x.shape)


@_handles("RMSNormalization")
def _rms_norm(c, x, scale):
    x, scale = c.tensor(x), c.tensor(scale)
    axis = c.attr("axis", -1) % x.ndim
    eps = c.attr("epsilon", 1e-5)
    size = math.prod(x.shape[axis:])  # normalise the trailing axes as one
    y = nn.rms_norm(F.reshape(x, (*x.shape[:axis], size)), eps=eps)
    return F.multiply(F.reshape(y, x.shape), scale)


@_handles("Gelu")
def _gelu(c, x):
    return nn.gelu(c.tensor(x), approximate=c.attr("approximate", "none"))


@_handles("Gemm")
def _gemm(c, a, b, bias=None):
    a, b, bias = c.tensor(a), c.tensor(b), c.tensor(bias)
    a = F.matrix_transpose(a) if c.attr("transA", 0) else a
    b = F.matrix_transpose(b) if c.attr("transB", 0) else b
    alpha, beta = c.attr("alpha", 1.0), c.attr("beta", 1.0)
    if alpha == beta == 1.0 and dt.is_floating(a.dtype) and \
            (bias is None or bias.shape == (b.shape[1],)):
        return nn.linear(a, b, bias)
    y = F.matmul(a, b)
    y = y if alpha == 1.0 else F.multiply(y, _one(y, alpha))
    return y if bias is None else F.add(y, bias if beta == 1.0 else
                                        F.multiply(bias, _one(bias, beta)))


# -- convolution and pooling ----------------------------------------------------------------
def _window(c, x: Tensor, what: str, kernel=None) -> dict:
    """hal's stride and padding (and kernel) of a Conv/MaxPool/AveragePool node."""
    if c.attr("auto_pad", "NOTSET") != "NOTSET":
        raise UnsupportedOp(f"{what}: auto_pad={c.attr('auto_pad')!r} is not supported; "
                            "export the model with explicit pads")
    if c.attr("ceil_mode", 0):
        raise UnsupportedOp(f"{what}: ceil_mode=1 is not supported; pad the input instead")
    r = x.ndim - 2
    kernel = list(c.attr("kernel_shape", kernel))
    pads = list(c.attr("pads", [0] * 2 * r))
    return {"kernel": tuple(kernel), "stride": tuple(c.attr("strides", [1] * r)),
            "padding": tuple(zip(pads[:r], pads[r:], strict=True))}


@_handles("Conv")
def _conv(c, x, weight, bias=None):
    x, weight, bias = c.tensor(x), c.tensor(weight), c.tensor(bias)
    window = _window(c, x, "Conv", weight.shape[2:])
    if tuple(window["kernel"]) != tuple(weight.shape[2:]):
        raise ShapeError(f"Conv: kernel_shape {window['kernel']} differs from the weight's "
                         f"{tuple(weight.shape[2:])}")
    return nn.conv(x, weight, bias, stride=window["stride"], padding=window["padding"],
                   dilation=tuple(c.attr("dilations", [1] * (x.ndim - 2))),
                   groups=c.attr("group", 1))


@_handles("ConvTranspose")
def _conv_transpose(c, x, weight, bias=None):
    if c.attr("output_shape") is not None:
        raise UnsupportedOp("ConvTranspose: output_shape is not supported; give pads and "
                            "output_padding instead")
    x, weight, bias = c.tensor(x), c.tensor(weight), c.tensor(bias)
    window = _window(c, x, "ConvTranspose", weight.shape[2:])
    r = x.ndim - 2
    return nn.conv_transpose(x, weight, bias, stride=window["stride"],
                             padding=window["padding"],
                             output_padding=tuple(c.attr("output_padding", [0] * r)),
                             dilation=tuple(c.attr("dilations", [1] * r)),
                             groups=c.attr("group", 1))


@_handles("MaxPool", "AveragePool")
def _pool(c, x):
    if c.node.op_type == "MaxPool" and (any(c.node.output[1:]) or
                                        set(c.attr("dilations", [1])) != {1}):
        raise UnsupportedOp("MaxPool: the Indices output and dilations are not supported")
    x = c.tensor(x)
    w = _window(c, x, c.node.op_type)
    if c.node.op_type == "MaxPool":
        return nn.max_pool(x, w["kernel"], stride=w["stride"], padding=w["padding"])
    return nn.avg_pool(x, w["kernel"], stride=w["stride"], padding=w["padding"],
                       count_include_pad=bool(c.attr("count_include_pad", 0)))


@_handles("BatchNormalization")
def _batch_norm(c, x, scale, bias, mean, var):
    if c.attr("training_mode", 0) or any(c.node.output[1:]):
        raise UnsupportedOp("BatchNormalization: training mode (running statistics as "
                            "outputs) is not supported; export the model in inference mode")
    x, scale, bias, mean, var = (c.tensor(v) for v in (x, scale, bias, mean, var))
    return nn.batch_norm(x, mean, var, scale, bias, eps=c.attr("epsilon", 1e-5))


# -- int8 ---------------------------------------------------------------------------------
def _zero_point(c, zero_point, dtype):
    return c.tensor(np.zeros((), dtype) if zero_point is None else zero_point)


@_handles("QuantizeLinear")
def _quantize(c, x, scale, zero_point=None):
    x, scale = c.tensor(x), c.tensor(scale)
    zero_point = _zero_point(c, zero_point, np.uint8)
    return F.quantize_linear(x, scale, zero_point, axis=c.attr("axis", 1) % max(x.ndim, 1))


@_handles("DequantizeLinear")
def _dequantize(c, x, scale, zero_point=None):
    x, scale = c.tensor(x), c.tensor(scale)
    zero_point = _zero_point(c, zero_point, x.dtype)
    axis = c.attr("axis", 1) % max(x.ndim, 1)
    if x.dtype in (dt.int8, dt.uint8):
        return F.dequantize_linear(x, scale, zero_point, axis=axis)
    # int32 (biases): (x - zero_point) * scale, per channel along axis
    shape = [1] * x.ndim
    if scale.ndim:
        shape[axis] = -1
    centred = F.astype(F.subtract(x, F.reshape(zero_point, shape)), scale.dtype)
    return F.multiply(centred, F.reshape(scale, shape))


@_handles("DynamicQuantizeLinear")
def _dynamic_quantize(c, x):
    """uint8 x with the scale and zero point of its range widened to hold 0
    (hal.ops.dynamic_qparams): computed in the graph, as x changes per call."""
    x = c.tensor(x)
    zero = _one(x, 0)
    lo = F.minimum(F.min(x), zero)
    hi = F.maximum(F.max(x), zero)
    scale = F.divide(F.subtract(hi, lo), _one(x, 255))
    scale = F.where(F.equal(scale, zero), _one(x, 1), scale)
    zero_point = F.quantize_linear(F.negative(lo), scale, Tensor.from_host(
        np.zeros((), np.uint8), x.device))
    return F.quantize_linear(x, scale, zero_point), scale, zero_point


def _fixed(c, zero_point) -> int | None:
    """A zero point known now and the same for every row or column: that int, else None."""
    if zero_point is None:
        return 0
    if isinstance(zero_point, Tracer):
        return None
    values = np.unique(c.static(zero_point, "zero point"))
    return int(values[0]) if values.size == 1 else None


@_handles("MatMulInteger")
def _matmul_integer(c, a, b, a_zero=None, b_zero=None):
    """hal.qmatmul where b is int8 and b's zero point is fixed; a's zero point may be a
    graph value (DynamicQuantizeLinear's): then (a - za) @ (b - zb) is computed as
    a @ (b - zb) - za * colsum(b - zb). Other cases in int32 arithmetic."""
    za, zb = _fixed(c, a_zero), _fixed(c, b_zero)
    a, b = c.tensor(a), c.tensor(b)
    if b.dtype != dt.int8 or zb is None:
        za_t = F.astype(_zero_point(c, a_zero, a.dtype), dt.int32)
        if za_t.ndim == 1:  # per row of a
            za_t = F.reshape(za_t, (-1, 1))
        zb_t = F.astype(_zero_point(c, b_zero, b.dtype), dt.int32)  # per column of b
        return F.matmul(F.subtract(F.astype(a, dt.int32), za_t),
                        F.subtract(F.astype(b, dt.int32), zb_t))
    acc = F.qmatmul(a, b, a_zero_point=0 if za is None else za, b_zero_point=zb)
    if za is not None:
        return acc
    colsum = F.sum(F.subtract(F.astype(b, dt.int32), _one(acc, zb)), axis=-2, keepdims=True)
    return F.subtract(acc, F.multiply(F.astype(c.tensor(a_zero), dt.int32),
                                      F.astype(colsum, dt.int32)))


SUPPORTED_OPS = frozenset(_HANDLERS)
"""The ONNX op types (default domain) that `load` turns into hal ops."""
