"""Hypothesis strategies for op inputs, one per op family, in the manner of array-api-tests.

A strategy draws a `Case`: the host operands (numpy arrays, Python scalars or None),
the op's keyword parameters, and which operands to pass as strided views. Shapes
include empty and size-1 axes and broadcasting; floats include NaN and inf where the
op's semantics for them are fixed, and magnitudes far beyond [-5, 5] where the op's answer
there is fixed too (+-80 and +-1000 overflow exp, so a softmax that does not subtract the
row's max turns them into NaN; the dtype's largest values where IEEE arithmetic fixes the
result); FFT sizes include odd and prime lengths. `large_cases` adds a few deterministic
inputs of more than 1024 elements along the reduced axis for reductions and the
normalising composites (multi-stage and work-group reduction paths).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from .. import ops
from ..ops import shapes
from ..runtime import dtypes as dt


@dataclass
class Case:
    """One drawn input: operands, params, and operands passed as strided views."""

    args: list
    params: dict = field(default_factory=dict)
    views: tuple[int, ...] = ()
    origin: str = ""  # an expression that rebuilds the case (repros of large inputs use it)


_SMALL = dict(min_side=0, max_side=5)


def _elements(d: np.dtype, *, special: bool, big: tuple = (), lo: float = -10, hi: float = 10):
    if dt.is_bool(d):
        return st.booleans()
    if dt.is_integer(d):
        info = np.iinfo(d)
        within = st.integers(max(info.min, int(lo)), min(info.max, int(hi)))
        return st.one_of(within, st.sampled_from(big)) if big else within
    if dt.is_complex(d):
        part = st.floats(float(np.float32(lo)), float(np.float32(hi)), width=32)
        return st.builds(complex, part, part)
    width = 16 if d == dt.float16 else 32
    exact = np.float16 if width == 16 else np.float32
    finite = st.floats(float(exact(lo)), float(exact(hi)), width=width)
    extra = ([math.nan, math.inf, -math.inf, 0.0, -0.0] if special else []) + list(big)
    return st.one_of(finite, st.sampled_from(extra)) if extra else finite


def arrays(d: np.dtype, shape, *, special=False, big=(), lo=-10, hi=10):
    """Arrays of dtype d and shape (bfloat16 drawn as float32, then rounded).

    big: values drawn besides those in [lo, hi] (see `big_values`).
    """
    draw_dtype = dt.float32 if d == dt.bfloat16 else d
    elements = _elements(d, special=special, big=big, lo=lo, hi=hi)
    strategy = hnp.arrays(draw_dtype, shape, elements=elements)
    return strategy.map(lambda a: a.astype(d)) if d == dt.bfloat16 else strategy


def _views(n: int):
    """Which of n operands to pass as strided views (the kit slices them on the device)."""
    return st.lists(st.booleans(), min_size=n, max_size=n).map(
        lambda flags: tuple(i for i, f in enumerate(flags) if f))


_SPECIAL_OK = {"negative", "abs", "exp", "log", "sqrt", "sin", "cos", "tanh", "erf", "add",
               "subtract", "multiply", "divide", "maximum", "minimum", "equal", "less",
               "greater", "where", "max", "min"}
# Ops whose answer at the dtype's largest finite values IEEE arithmetic fixes (inf on
# overflow, exact comparisons and selections); integers get their full range in the exact
# ones (`_EXACT_INTEGERS`).
_EXTREME_OK = {"negative", "abs", "sqrt", "exp", "tanh", "sigmoid", "relu", "add", "subtract",
               "multiply", "divide", "maximum", "minimum", "equal", "less", "greater", "where",
               "max", "min"}
_EXACT_INTEGERS = {"maximum", "minimum", "equal", "less", "greater", "where", "max", "min"}
# Ops given +-80 and +-1000, beyond exp's range (exp(80) overflows float16, exp(1000) every
# float): a softmax without the max subtracted, or sigmoid/tanh as a ratio of
# exponentials, gives inf/inf = NaN there.
_BEYOND_EXP = _EXTREME_OK | {"log", "softmax", "log_softmax", "silu", "gelu"}


def big_values(name: str, d: np.dtype) -> tuple:
    """Large magnitudes op `name` must get right on dtype d, beside the usual [lo, hi] values."""
    if dt.is_integer(d):
        info = np.iinfo(d)
        return (int(info.min), int(info.max)) if name in _EXACT_INTEGERS else ()
    if dt.is_bool(d) or dt.is_complex(d) or name not in _BEYOND_EXP:
        return ()
    top = float(np.finfo(d).max)
    return (80.0, -80.0, 1000.0, -1000.0) + ((top, -top) if name in _EXTREME_OK else ())


@st.composite
def unary(draw, spec: ops.OpSpec, d: np.dtype) -> Case:
    """One tensor of any small shape."""
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, **_SMALL))
    special = spec.name in _SPECIAL_OK and not dt.is_complex(d)
    x = draw(arrays(d, shape, special=special, big=big_values(spec.name, d), lo=-5, hi=5))
    return Case([x], views=draw(_views(1)))


@st.composite
def binary(draw, spec: ops.OpSpec, d: np.dtype) -> Case:
    """Two mutually broadcastable tensors, or a tensor and a Python scalar."""
    shapes_ = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, **_SMALL))
    lo, hi = (-3, 3) if spec.name == "power" else (-10, 10)
    if spec.name == "power" and (dt.is_integer(d)):
        lo = 0
    if spec.name == "power" and d == dt.uint8:
        hi = 2
    special = spec.name in _SPECIAL_OK and not dt.is_complex(d)
    big = big_values(spec.name, d)
    a = draw(arrays(d, shapes_.input_shapes[0], special=special, big=big, lo=lo, hi=hi))
    b = draw(arrays(d, shapes_.input_shapes[1], special=special, big=big, lo=lo, hi=hi))
    if draw(st.booleans()) and b.ndim == 0 and not dt.is_bool(d) and d != dt.bfloat16:
        b = b.item()  # a weak Python scalar
    return Case([a, b], views=draw(_views(2)))


@st.composite
def where(draw, spec: ops.OpSpec, d: np.dtype) -> Case:
    """A bool condition and two operands, all mutually broadcastable."""
    s = draw(hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3, **_SMALL))
    cond = draw(arrays(dt.bool_, s.input_shapes[0]))
    big = big_values(spec.name, d)
    x = draw(arrays(d, s.input_shapes[1], special=not dt.is_complex(d), big=big))
    y = draw(arrays(d, s.input_shapes[2], special=not dt.is_complex(d), big=big))
    return Case([cond, x, y], views=draw(_views(3)))


@st.composite
def astype(draw, spec: ops.OpSpec, d: np.dtype, targets=dt.ALL) -> Case:
    """A tensor and a target dtype, values in the target's range (casts out of range are UB)."""
    choices = [t for t in targets if not (dt.is_complex(d) and not dt.is_complex(t))]
    target = draw(st.sampled_from(choices))
    lo, hi = (0, 100) if target in (dt.uint8,) or d == dt.uint8 else (-100, 100)
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, **_SMALL))
    x = draw(arrays(d, shape, lo=lo, hi=hi))
    return Case([x], {"dtype": target}, views=draw(_views(1)))


@st.composite
def reduction(draw, spec: ops.OpSpec, d: np.dtype) -> Case:
    """A tensor, axes (None, one, several) and keepdims; non-empty axes for max/min/mean/var."""
    nonempty = spec.name in ("max", "min", "mean", "var")
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=1 if nonempty else 0,
                                  max_side=5))
    axis = draw(st.one_of(st.none(), st.lists(st.integers(0, max(len(shape) - 1, 0)),
                                              unique=True, max_size=len(shape)).map(tuple)))
    if axis is not None and len(axis) == 1 and draw(st.booleans()):
        axis = axis[0] - len(shape) if draw(st.booleans()) else axis[0]
    special = spec.name in _SPECIAL_OK and not dt.is_complex(d)
    x = draw(arrays(d, shape, special=special, big=big_values(spec.name, d), lo=-5, hi=5))
    params = {"axis": axis, "keepdims": draw(st.booleans())}
    if spec.name == "var":
        n = math.prod(shape[a] for a in shapes.axes("var", axis, len(shape)))
        params["correction"] = draw(st.sampled_from([0, 1] if n > 1 else [0]))
    return Case([x], params, views=draw(_views(1)))


@st.composite
def movement(draw, spec: ops.OpSpec, d: np.dtype) -> Case:
    """Inputs for reshape, permute_dims, broadcast_to, slice, concat, pad and roll."""
    shape = draw(hnp.array_shapes(min_dims=1 if spec.name == "concat" else 0, max_dims=3,
                                  **_SMALL))
    x = draw(arrays(d, shape))
    views = draw(_views(1))
    name = spec.name
    if name == "reshape":
        size = math.prod(shape)
        options = [(size,), (-1,), (1, size), shape[::-1], (*shape, 1)]
        if size and size % 2 == 0:
            options.append((2, -1))
        return Case([x], {"shape": draw(st.sampled_from(options))}, views)
    if name == "permute_dims":
        return Case([x], {"axes": tuple(draw(st.permutations(range(len(shape)))))}, views)
    if name == "broadcast_to":
        lead = draw(st.lists(st.integers(0, 3), max_size=2))
        target = tuple(lead) + tuple(draw(st.integers(0, 3)) if n == 1 else n for n in shape)
        return Case([x], {"shape": target}, views)
    if name == "slice":
        key = tuple(
            slice(draw(st.none() | st.integers(-6, 6)), draw(st.none() | st.integers(-6, 6)),
                  draw(st.sampled_from([None, 1, 2, 3, -1, -2])))
            for _ in shape)
        bounds, _, _ = shapes.index_bounds(shape, key)
        return Case([x], {"bounds": bounds}, views)
    if name == "concat":
        axis = draw(st.integers(0, len(shape) - 1))
        others = []
        for _ in range(draw(st.integers(0, 2))):
            s = list(shape)
            s[axis] = draw(st.integers(0, 4))
            others.append(draw(arrays(d, tuple(s))))
        return Case([x, *others], {"axis": axis - len(shape) * draw(st.integers(0, 1))}, views)
    if name == "pad":
        mode = draw(st.sampled_from(ops.PAD_MODES))
        width = []
        for n in shape:
            top = 0 if (mode != "constant" and n == 0) else (min(n, 2) if mode == "wrap" else 2)
            width.append((draw(st.integers(0, top)), draw(st.integers(0, top))))
        params = {"pad_width": tuple(width), "mode": mode}
        if mode == "constant" and not dt.is_bool(d):
            params["value"] = draw(st.integers(0, 3))
        return Case([x], params, views)
    if name == "roll":
        if not shape or draw(st.booleans()):
            return Case([x], {"shift": draw(st.integers(-7, 7)), "axis": None}, views)
        axes = tuple(draw(st.lists(st.integers(0, len(shape) - 1), min_size=1, unique=True)))
        shift = tuple(draw(st.integers(-7, 7)) for _ in axes)
        return Case([x], {"shift": shift, "axis": axes}, views)
    raise KeyError(name)


@st.composite
def matmul(draw, spec: ops.OpSpec, d: np.dtype) -> Case:
    """numpy.matmul operand shapes: batched, broadcasting, 1-d on either side."""
    m, k, n = (draw(st.integers(1, 6)) for _ in range(3))
    batch = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2, min_side=1,
                                                   max_side=3))
    a_shape = (*batch.input_shapes[0], m, k) if draw(st.integers(0, 4)) else (k,)
    b_shape = (*batch.input_shapes[1], k, n) if draw(st.integers(0, 4)) else (k,)
    lo, hi = (-3, 3) if dt.is_integer(d) else (-2, 2)
    a = draw(arrays(d, a_shape, lo=lo if d != dt.uint8 else 0, hi=hi))
    b = draw(arrays(d, b_shape, lo=lo if d != dt.uint8 else 0, hi=hi))
    return Case([a, b], views=draw(_views(2)))


@st.composite
def complex_parts(draw, spec: ops.OpSpec, d: np.dtype) -> Case:
    """Inputs for real, imag, conj (complex) and complex (two reals)."""
    if spec.name == "complex":
        s = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, **_SMALL))
        return Case([draw(arrays(d, s.input_shapes[0])), draw(arrays(d, s.input_shapes[1]))],
                    views=draw(_views(2)))
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, **_SMALL))
    return Case([draw(arrays(d, shape))], views=draw(_views(1)))


_FFT_SIZES = st.sampled_from([1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 15, 16, 17, 25, 31, 32])


@st.composite
def fft(draw, spec: ops.OpSpec, d: np.dtype) -> Case:
    """Batched transforms over a chosen subset of axes; odd and prime sizes; every norm."""
    ndim = draw(st.integers(1, 3))
    shape = [draw(_FFT_SIZES) if draw(st.booleans()) else draw(st.integers(1, 4))
             for _ in range(ndim)]
    axes = tuple(draw(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim,
                               unique=True)))
    params = {"axes": axes, "norm": draw(st.sampled_from(["backward", "ortho", "forward"]))}
    if spec.name == "irfftn":
        n = draw(_FFT_SIZES)
        shape[axes[-1]] = n // 2 + 1
        params["n"] = n
    return Case([draw(arrays(d, tuple(shape), lo=-1, hi=1))], params, draw(_views(1)))


_QSIZES = st.integers(1, 8) | st.sampled_from([16, 32])


@st.composite
def quant(draw, spec: ops.OpSpec, d: np.dtype) -> Case:
    """quantize/dequantize (per tensor or per channel), qmatmul and quantized_linear inputs
    (sizes include multiples of 4 and 16, the int8 dot-product instructions' blocks)."""
    if spec.name == "quantized_linear":
        batch = draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=4))
        k, n = draw(_QSIZES), draw(_QSIZES)
        x = draw(arrays(d, (*batch, k), lo=-4, hi=4))
        w = draw(arrays(dt.int8, (k, n), lo=-127, hi=127))
        scale = draw(arrays(dt.float32, (n,), lo=0.01, hi=0.1).filter(lambda s: np.all(s > 0)))
        b = draw(st.none() | arrays(dt.float32, (n,), lo=-1, hi=1))
        return Case([x, w, scale, b], {}, draw(_views(1)))
    if spec.name == "qmatmul":
        m, k, n = draw(st.integers(1, 8)), draw(_QSIZES), draw(_QSIZES)
        a = draw(arrays(d, (m, k), lo=-128, hi=255))
        b = draw(arrays(dt.int8, (k, n), lo=-128, hi=127))
        info = np.iinfo(d)
        params = {"a_zero_point": draw(st.integers(info.min, info.max)),
                  "b_zero_point": draw(st.integers(-128, 127))}
        return Case([a, b], params, draw(_views(2)))
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    per_channel = draw(st.booleans())
    pshape = (shape[axis],) if per_channel else ()
    zdtype = d if spec.name == "dequantize_linear" else draw(st.sampled_from([dt.int8,
                                                                             dt.uint8]))
    scale = draw(arrays(dt.float32, pshape, lo=0.01, hi=2).filter(lambda s: np.all(s > 0)))
    zero = draw(arrays(zdtype, pshape, lo=-128, hi=255))
    lo, hi = (-300, 300) if spec.name == "quantize_linear" else (-128, 255)
    x = draw(arrays(d, shape, lo=lo, hi=hi))
    return Case([x, scale, zero], {"axis": axis}, draw(_views(1)))


@st.composite
def nn(draw, spec: ops.OpSpec, d: np.dtype) -> Case:
    """Inputs for the composites: softmax, layer_norm, gelu, linear, attention, ..."""
    name = spec.name
    if name in ("softmax", "log_softmax"):
        shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=6))
        axis = draw(st.integers(-len(shape), len(shape) - 1))
        x = draw(arrays(d, shape, big=big_values(name, d), lo=-5, hi=5))
        return Case([x], {"axis": axis}, draw(_views(1)))
    if name == "layer_norm":
        shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=2, max_side=8))
        x = draw(arrays(d, shape, lo=-5, hi=5).filter(lambda a: np.all(np.ptp(
            a.astype(np.float64), axis=-1) > 0.5)))
        w = draw(st.none() | arrays(d, shape[-1:], lo=-2, hi=2))
        b = draw(st.none() | arrays(d, shape[-1:], lo=-2, hi=2))
        return Case([x, w, b], {"eps": 1e-5}, draw(_views(1)))
    if name == "linear":
        batch = draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=4))
        k, n = draw(st.integers(1, 8)), draw(st.integers(1, 8))
        x = draw(arrays(d, (*batch, k), lo=-2, hi=2))
        w = draw(arrays(d, (k, n), lo=-2, hi=2))
        b = draw(st.none() | arrays(d, (n,), lo=-2, hi=2))
        activation = draw(st.sampled_from(list(ops.ACTIVATIONS)))
        return Case([x, w, b], {"activation": activation}, draw(_views(1)))
    if name == "scaled_dot_product_attention":
        batch = draw(hnp.array_shapes(min_dims=1, max_dims=2, min_side=1, max_side=3))
        lq, lk, e, ev = (draw(st.integers(1, 6)) for _ in range(4))
        q = draw(arrays(d, (*batch, lq, e), lo=-2, hi=2))
        k = draw(arrays(d, (*batch, lk, e), lo=-2, hi=2))
        v = draw(arrays(d, (*batch, lk, ev), lo=-2, hi=2))
        causal = draw(st.booleans()) and lq <= lk
        return Case([q, k, v], {"causal": causal}, draw(_views(3)))
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, **_SMALL))
    params = {"approximate": draw(st.sampled_from(ops.GELU_APPROXIMATIONS))} if name == "gelu" \
        else {}
    x = draw(arrays(d, shape, big=big_values(name, d), lo=-6, hi=6))
    return Case([x], params, draw(_views(1)))


@st.composite
def collective(draw, spec: ops.OpSpec, d: np.dtype) -> Case:
    """A tensor of at least one axis, over the one-rank group "self" (real groups are
    tested under mpiexec: tests/frontends/parallel)."""
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, **_SMALL))
    params = {"group": "self"}
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    if spec.name == "all_to_all":
        params.update(split_axis=axis, concat_axis=draw(st.integers(0, len(shape) - 1)))
    elif spec.name not in ("all_reduce", "copy_to_group"):
        params["axis"] = axis
    return Case([draw(arrays(d, shape, lo=-5, hi=5))], params, draw(_views(1)))


FAMILIES = {
    "unary": unary, "binary": binary, "where": where, "cast": astype,
    "reduction": reduction, "movement": movement, "matmul": matmul,
    "complex": complex_parts, "fft": fft, "quant": quant, "nn": nn,
    "collective": collective,
}


def cases(spec: ops.OpSpec, d: np.dtype, device_dtypes=dt.ALL):
    """The strategy of Cases for an op on a dtype."""
    family = FAMILIES[spec.family]
    if family is astype:
        return astype(spec, d, targets=tuple(t for t in device_dtypes))
    return family(spec, d)


# -- large inputs ---------------------------------------------------------------------------
# (shape, axis, keepdims): 4099 and 1500 elements pass one work-group's 1024, along the
# contiguous axis and across rows; the ragged tails of 3 and 220 after blocks of 256.
_LARGE_REDUCTIONS = (((4099,), None, False), ((2, 1500), -1, False), ((1500, 2), 0, True))


def large_cases(spec: ops.OpSpec, d: np.dtype) -> list[Case]:
    """A few deterministic inputs of over 1024 elements along the reduced axis for the
    reductions, softmax/log_softmax and layer_norm ([] for the other ops).

    Multi-stage and work-group reductions run on them. Each reduction's last elements
    hold its extremes, so a kernel that drops the ragged tail misses them; softmax rows
    are shifted by +-1000 or scaled by 80, beyond exp's range.
    """
    rng = np.random.default_rng(0)
    origin = f"large_cases(hal.ops.spec({spec.name!r}), hal.dtype({d.name!r}))"
    found: list[Case] = []
    if spec.name in ("sum", "max", "min", "mean", "var"):
        for shape, axis, keepdims in _LARGE_REDUCTIONS:
            x = _uniform(rng, d, shape, 5)
            if not dt.is_bool(d):
                reduced_last = np.moveaxis(x, 0 if axis == 0 else -1, -1)  # a view of x
                reduced_last[..., -2:] = (0, 200) if d == dt.uint8 else (-50, 50)
            params = {"axis": axis, "keepdims": keepdims}
            if spec.name == "var":
                params["correction"] = 1
            found.append(Case([x], params, views=(0,) if axis == 0 else ()))
    elif spec.name in ("softmax", "log_softmax"):
        u = _uniform(rng, dt.float32, (2, 1500), 5)
        found.append(Case([np.stack([u[0] + 1000, u[1] * 80]).astype(d)], {"axis": -1}))
        found.append(Case([(_uniform(rng, dt.float32, (1100, 3), 5) - 1000).astype(d)],
                          {"axis": 0}, views=(0,)))
    elif spec.name == "layer_norm":
        w, b = _uniform(rng, d, (1500,), 2), _uniform(rng, d, (1500,), 2)
        found.append(Case([_uniform(rng, d, (2, 1500), 5), w, b], {"eps": 1e-5}))
        found.append(Case([_uniform(rng, d, (4099,), 5), None, None], {"eps": 1e-5}))
    for i, case in enumerate(found):
        case.origin = f"{origin}[{i}]"
    return found


def _uniform(rng: np.random.Generator, d: np.dtype, shape: tuple, limit: int) -> np.ndarray:
    """Uniform values in [-limit, limit] ([0, 2 * limit] for uint8) of dtype d."""
    if dt.is_bool(d):
        return rng.random(shape) < 0.5
    if dt.is_integer(d):
        lo = 0 if d == dt.uint8 else -limit
        return rng.integers(lo, lo + 2 * limit, shape, endpoint=True).astype(d)
    return rng.uniform(-limit, limit, shape).astype(d)


# -- Array API additions (predicates, search, sort, scan, take, clip): input families -----
_SPECIAL_OK |= {"isnan", "isinf", "isfinite", "all", "any", "argmax", "argmin", "sort",
                "argsort", "cumulative_sum", "clip"}


def _axis_of(draw, ndim: int, *, optional: bool):
    """An axis of an ndim-d tensor, negative or not; None too when optional."""
    axis = draw(st.integers(-ndim, ndim - 1))
    return None if optional and draw(st.booleans()) else axis


@st.composite
def search(draw, spec: ops.OpSpec, d: np.dtype) -> Case:
    """argmax/argmin: a non-empty tensor, one axis or None, keepdims; ties and NaN drawn."""
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=5))
    axis = _axis_of(draw, len(shape), optional=True) if shape else None
    x = draw(arrays(d, shape, special=True, lo=-3, hi=3))
    return Case([x], {"axis": axis, "keepdims": draw(st.booleans())}, views=draw(_views(1)))


@st.composite
def scan(draw, spec: ops.OpSpec, d: np.dtype) -> Case:
    """cumulative_sum: a 1-3-d tensor, its axis (optional when 1-d), include_initial."""
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, **_SMALL))
    axis = _axis_of(draw, len(shape), optional=len(shape) == 1)
    x = draw(arrays(d, shape, special=not dt.is_complex(d), lo=-5, hi=5))
    return Case([x], {"axis": axis, "include_initial": draw(st.booleans())},
                views=draw(_views(1)))


@st.composite
def sort(draw, spec: ops.OpSpec, d: np.dtype) -> Case:
    """sort/argsort: a 1-3-d tensor with ties (few distinct values), axis, descending."""
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, **_SMALL))
    x = draw(arrays(d, shape, special=True, lo=-2, hi=2))
    params = {"axis": _axis_of(draw, len(shape), optional=False),
              "descending": draw(st.booleans())}
    return Case([x], params, views=draw(_views(1)))


@st.composite
def take(draw, spec: ops.OpSpec, d: np.dtype) -> Case:
    """take: a tensor and int32/int64 indices (negative too, any shape) in range of an axis."""
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5))
    axis = _axis_of(draw, len(shape), optional=len(shape) == 1)
    n = shape[0 if axis is None else axis]
    ishape = draw(hnp.array_shapes(min_dims=0, max_dims=2, **_SMALL))
    idtype = draw(st.sampled_from([dt.int32, dt.int64]))
    indices = draw(hnp.arrays(idtype, ishape, elements=st.integers(-n, n - 1)))
    x = draw(arrays(d, shape, special=not dt.is_complex(d)))
    return Case([x, indices], {"axis": axis}, views=draw(_views(1)))


@st.composite
def clip(draw, spec: ops.OpSpec, d: np.dtype) -> Case:
    """clip: x and bounds of x's dtype that broadcast with it, either of them absent."""
    s = draw(hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3, **_SMALL))
    x = draw(arrays(d, s.input_shapes[0], special=True, big=big_values("maximum", d)))
    lo, hi = (draw(st.one_of(st.none(), arrays(d, shape, lo=-5, hi=5)))
              for shape in s.input_shapes[1:])
    return Case([x, lo, hi], views=draw(_views(1)))


FAMILIES.update(search=search, scan=scan, sort=sort, take=take, clip=clip)
