"""Hypothesis strategies for op inputs, in the manner of array-api-tests, chosen per op.

A strategy draws a `Case` (`inputs.py`): the host operands (numpy arrays, Python scalars
or None), the op's keyword parameters, and which operands to pass as strided views. It is
registered with `@strategy` under op names, or as the default of an op family, with the
parameters it draws those ops' inputs by: whether NaN and inf are drawn (where the op's
semantics for them are fixed), how far magnitudes reach beyond [-5, 5] (`Reach`: +-80 and
+-1000 overflow exp, so a softmax that does not subtract the row's max turns them into
NaN; the dtype's largest values where IEEE arithmetic fixes the result), which axes and
parameters are drawn. `strategy_for(spec)` looks an op up by name, then by family. Shapes
include empty and size-1 axes and broadcasting; FFT sizes include odd and prime lengths.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from .. import ops
from ..ops import shapes
from ..runtime import dtypes as dt
from ..runtime.errors import HalError
from .collectives import all_to_all, collective, recv, send
from .inputs import (
    SMALL_SIDES,
    Case,
    Reach,
    arrays,
    axis_of,
    big_values,
    small_shapes,
    strided_views,
)

_BY_OP: dict[str, Callable] = {}  # op name -> (spec, dtype) -> strategy of Cases
_BY_FAMILY: dict[str, Callable] = {}  # op family -> the same, for its ops not named above


def strategy(*names: str, family: str | None = None, **params) -> Callable:
    """Register the decorated strategy (spec, dtype, **params) -> Cases for the ops named,
    or as the default of `family`'s ops, called with these declared params."""
    families = {s.family for s in ops.specs()}
    if family is not None and family not in families:
        raise HalError(f"strategy: no op of the hal op set is of family {family!r}; the "
                       f"families are {', '.join(sorted(families))}")
    unknown = [name for name in names if name not in ops.names()]
    if unknown:
        raise HalError(f"strategy: {', '.join(map(repr, unknown))} not in the hal op set; "
                       "`hal.ops.names()` lists its ops")

    def register(draw_case: Callable) -> Callable:
        bound = partial(draw_case, **params) if params else draw_case
        for name in names:
            _claim(_BY_OP, name, bound)
        if family is not None:
            _claim(_BY_FAMILY, family, bound)
        return draw_case

    return register


def _claim(table: dict[str, Callable], key: str, draw_case: Callable) -> None:
    if key in table:
        raise HalError(f"strategy: {key!r} already has an input strategy; register each op "
                       "or family once")
    table[key] = draw_case


def strategy_for(spec: ops.OpSpec) -> Callable:
    """The strategy registered for the op's name, else its family's: (spec, dtype) -> Cases."""
    found = _BY_OP.get(spec.name) or _BY_FAMILY.get(spec.family)
    if found is None:
        raise HalError(f"conformance: op {spec.name!r} (family {spec.family!r}) has no input "
                       "strategy; register one with @strategy in hal/conformance/strategies.py")
    return found


def cases(spec: ops.OpSpec, d: np.dtype, device_dtypes=dt.ALL):
    """The strategy of Cases for an op on a dtype (a cast's targets: the device's dtypes)."""
    draw_case = strategy_for(spec)
    if spec.family == "cast":
        return draw_case(spec, d, targets=tuple(t for t in device_dtypes))
    return draw_case(spec, d)


# -- elementwise ----------------------------------------------------------------------------
@strategy(family="unary")
@st.composite
def unary(draw, spec: ops.OpSpec, d: np.dtype, *, special: bool = False,
          big: Reach = Reach.NONE, lo: float = -5, hi: float = 5) -> Case:
    """One tensor of any small shape with values in [lo, hi] (special: NaN, inf and signed
    zeros too, but not for complex dtypes; big: how far magnitudes reach)."""
    shape = draw(small_shapes())
    x = draw(arrays(d, shape, special=special and not dt.is_complex(d), big=big_values(big, d),
                    lo=lo, hi=hi))
    return Case([x], views=draw(strided_views(1)))


strategy("sin", "cos", "erf", "isnan", "isinf", "isfinite", special=True)(unary)
strategy("log", special=True, big=Reach.BEYOND_EXP)(unary)
strategy("negative", "abs", "exp", "sqrt", "tanh", special=True, big=Reach.FLOAT_MAX)(unary)
strategy("atan", "tan", "sinh", "cosh", "asinh", "expm1", "floor", "ceil", "trunc", "round",
         "sign", "signbit", "bitwise_invert", special=True)(unary)
strategy("log2", "log10", special=True, big=Reach.BEYOND_EXP)(unary)
# the domains: asin, acos in [-1, 1]; atanh in [-1, 1] (+-inf at the ends); acosh >= 1;
# log1p >= -1 (NaN beyond, which special values still reach)
strategy("asin", "acos", "atanh", special=True, lo=-1, hi=1)(unary)
strategy("acosh", special=True, lo=1, hi=10)(unary)
strategy("log1p", special=True, lo=-1, hi=5)(unary)


def _two_operands(draw, d: np.dtype, *, special: bool, big: Reach, lo: int, hi: int) -> Case:
    """Two mutually broadcastable tensors in [lo, hi], or a tensor and a Python scalar."""
    shapes_ = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, **SMALL_SIDES))
    special = special and not dt.is_complex(d)
    values = big_values(big, d)
    a = draw(arrays(d, shapes_.input_shapes[0], special=special, big=values, lo=lo, hi=hi))
    b = draw(arrays(d, shapes_.input_shapes[1], special=special, big=values, lo=lo, hi=hi))
    if draw(st.booleans()) and b.ndim == 0 and not dt.is_bool(d) and d != dt.bfloat16:
        b = b.item()  # a weak Python scalar
    return Case([a, b], views=draw(strided_views(2)))


@strategy(family="binary")
@st.composite
def binary(draw, spec: ops.OpSpec, d: np.dtype, *, special: bool = False,
           big: Reach = Reach.NONE) -> Case:
    """Two mutually broadcastable tensors in [-10, 10], or a tensor and a Python scalar."""
    return _two_operands(draw, d, special=special, big=big, lo=-10, hi=10)


strategy("add", "subtract", "multiply", "divide", special=True, big=Reach.FLOAT_MAX)(binary)
strategy("maximum", "minimum", "equal", "less", "greater", special=True,
         big=Reach.INT_RANGE)(binary)


strategy("atan2", "hypot", "copysign", "logaddexp", special=True)(binary)


@strategy("bitwise_left_shift", "bitwise_right_shift")
@st.composite
def shift(draw, spec: ops.OpSpec, d: np.dtype) -> Case:
    """Integers of the dtype's range shifted by counts in [0, its width]: the width itself
    shifts every bit out (numpy's 0, or -1 for a negative value shifted right)."""
    s = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, **SMALL_SIDES))
    info = np.iinfo(d)
    a = draw(arrays(d, s.input_shapes[0], lo=int(info.min), hi=int(info.max)))
    b = draw(arrays(d, s.input_shapes[1], lo=0, hi=8 * d.itemsize))
    return Case([a, b], views=draw(strided_views(2)))


@strategy("power")
@st.composite
def power(draw, spec: ops.OpSpec, d: np.dtype) -> Case:
    """Bases and exponents in [-3, 3]: none negative for integers (no integer negative
    powers), at most 2 for uint8 (3 ** 3 wraps it)."""
    lo = 0 if dt.is_integer(d) else -3
    hi = 2 if d == dt.uint8 else 3
    return _two_operands(draw, d, special=False, big=Reach.NONE, lo=lo, hi=hi)


@strategy(family="where", big=Reach.INT_RANGE)
@st.composite
def where(draw, spec: ops.OpSpec, d: np.dtype, *, big: Reach = Reach.NONE) -> Case:
    """A bool condition and two operands, all mutually broadcastable."""
    s = draw(hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3, **SMALL_SIDES))
    cond = draw(arrays(dt.bool_, s.input_shapes[0]))
    values = big_values(big, d)
    x = draw(arrays(d, s.input_shapes[1], special=not dt.is_complex(d), big=values))
    y = draw(arrays(d, s.input_shapes[2], special=not dt.is_complex(d), big=values))
    return Case([cond, x, y], views=draw(strided_views(3)))


@strategy(family="cast")
@st.composite
def astype(draw, spec: ops.OpSpec, d: np.dtype, targets=dt.ALL) -> Case:
    """A tensor and a target dtype, values in the target's range (casts out of range are UB)."""
    choices = [t for t in targets if not (dt.is_complex(d) and not dt.is_complex(t))]
    target = draw(st.sampled_from(choices))
    lo, hi = (0, 100) if target in (dt.uint8,) or d == dt.uint8 else (-100, 100)
    shape = draw(small_shapes())
    x = draw(arrays(d, shape, lo=lo, hi=hi))
    return Case([x], {"dtype": target}, views=draw(strided_views(1)))


@strategy(family="complex")
@st.composite
def complex_parts(draw, spec: ops.OpSpec, d: np.dtype) -> Case:
    """A complex tensor (real, imag, conj)."""
    shape = draw(small_shapes())
    return Case([draw(arrays(d, shape))], views=draw(strided_views(1)))


@strategy("complex")
@st.composite
def complex_of_parts(draw, spec: ops.OpSpec, d: np.dtype) -> Case:
    """Two mutually broadcastable real tensors, the real and imaginary parts."""
    s = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, **SMALL_SIDES))
    return Case([draw(arrays(d, s.input_shapes[0])), draw(arrays(d, s.input_shapes[1]))],
                views=draw(strided_views(2)))


@strategy(family="clip", big=Reach.INT_RANGE)
@st.composite
def clip(draw, spec: ops.OpSpec, d: np.dtype, *, big: Reach = Reach.NONE) -> Case:
    """clip: x and bounds of x's dtype that broadcast with it, either of them absent."""
    s = draw(hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3, **SMALL_SIDES))
    x = draw(arrays(d, s.input_shapes[0], special=True, big=big_values(big, d)))
    lo, hi = (draw(st.one_of(st.none(), arrays(d, shape, lo=-5, hi=5)))
              for shape in s.input_shapes[1:])
    return Case([x, lo, hi], views=draw(strided_views(1)))


# -- linalg: matrices a decomposition is well defined and well conditioned for -------------
def _matrices(draw, d: np.dtype, *, square: bool) -> np.ndarray:
    """A stack of (m, n) matrices (m == n when square) in [-1, 1], batch axes of 0-2."""
    batch = draw(st.lists(st.integers(1, 3), max_size=2))
    m = draw(st.integers(1, 4))
    n = m if square else draw(st.integers(1, 4))
    return draw(arrays(d, (*batch, m, n), lo=-1, hi=1))


def _dominant(a: np.ndarray) -> np.ndarray:
    """a plus n on the diagonal: diagonally dominant, so invertible and well conditioned."""
    n = a.shape[-1]
    return (a + n * np.eye(n, dtype=np.float32)).astype(a.dtype)


@strategy(family="linalg")
@st.composite
def linalg(draw, spec: ops.OpSpec, d: np.dtype) -> Case:
    """A stack of well-conditioned square matrices (det, inv, slogdet)."""
    return Case([_dominant(_matrices(draw, d, square=True))])


@strategy("cholesky", "eigh_values", "eigh_vectors")
@st.composite
def hermitian(draw, spec: ops.OpSpec, d: np.dtype) -> Case:
    """Hermitian positive definite matrices, a a^H + n I, with distinct eigenvalues most
    likely (eigenvectors are defined up to sign)."""
    a = _matrices(draw, d, square=True)
    product = a @ np.conj(np.swapaxes(a, -1, -2)).astype(a.dtype)
    return Case([_dominant(product.astype(d))])


@strategy("qr_q", "qr_r", "svd_u", "svd_s", "svd_vh")
@st.composite
def rectangular(draw, spec: ops.OpSpec, d: np.dtype) -> Case:
    """A stack of (m, n) matrices; full_matrices drawn for the svd's factors."""
    params = {} if spec.name.startswith("qr") else {"full_matrices": draw(st.booleans())}
    return Case([_matrices(draw, d, square=False)], params)


@strategy("solve")
@st.composite
def solve(draw, spec: ops.OpSpec, d: np.dtype) -> Case:
    """Well-conditioned square matrices and right-hand sides: a vector or (..., M, K)."""
    a = _dominant(_matrices(draw, d, square=True))
    m = a.shape[-1]
    shape = (m,) if draw(st.booleans()) else (*a.shape[:-2], m, draw(st.integers(1, 3)))
    return Case([a, draw(arrays(d, shape, lo=-1, hi=1))])


# -- reductions, search, scans, sorting, take ----------------------------------------------
@strategy(family="reduction")
@st.composite
def reduction(draw, spec: ops.OpSpec, d: np.dtype, *, nonempty: bool = False,
              special: bool = False, big: Reach = Reach.NONE, correction: bool = False) -> Case:
    """A tensor, axes (None, one, several) and keepdims (nonempty: no empty axis; correction:
    var's, 0 or 1 where more than one element is reduced)."""
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=1 if nonempty else 0,
                                  max_side=5))
    axis = draw(st.one_of(st.none(), st.lists(st.integers(0, max(len(shape) - 1, 0)),
                                              unique=True, max_size=len(shape)).map(tuple)))
    if axis is not None and len(axis) == 1 and draw(st.booleans()):
        axis = axis[0] - len(shape) if draw(st.booleans()) else axis[0]
    special = special and not dt.is_complex(d)
    x = draw(arrays(d, shape, special=special, big=big_values(big, d), lo=-5, hi=5))
    params = {"axis": axis, "keepdims": draw(st.booleans())}
    if correction:
        n = math.prod(shape[a] for a in shapes.axes(spec.name, axis, len(shape)))
        params["correction"] = draw(st.sampled_from([0, 1] if n > 1 else [0]))
    return Case([x], params, views=draw(strided_views(1)))


strategy("max", "min", nonempty=True, special=True, big=Reach.INT_RANGE)(reduction)
strategy("mean", nonempty=True)(reduction)
strategy("var", nonempty=True, correction=True)(reduction)
strategy("all", "any", special=True)(reduction)


@strategy(family="search")
@st.composite
def search(draw, spec: ops.OpSpec, d: np.dtype) -> Case:
    """argmax/argmin: a non-empty tensor, one axis or None, keepdims; ties and NaN drawn."""
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=5))
    axis = axis_of(draw, len(shape), optional=True) if shape else None
    x = draw(arrays(d, shape, special=True, lo=-3, hi=3))
    return Case([x], {"axis": axis, "keepdims": draw(st.booleans())},
                views=draw(strided_views(1)))


@strategy(family="scan")
@st.composite
def scan(draw, spec: ops.OpSpec, d: np.dtype) -> Case:
    """cumulative_sum: a 1-3-d tensor, its axis (optional when 1-d), include_initial."""
    shape = draw(small_shapes(min_dims=1))
    axis = axis_of(draw, len(shape), optional=len(shape) == 1)
    x = draw(arrays(d, shape, special=not dt.is_complex(d), lo=-5, hi=5))
    return Case([x], {"axis": axis, "include_initial": draw(st.booleans())},
                views=draw(strided_views(1)))


@strategy(family="sort")
@st.composite
def sort(draw, spec: ops.OpSpec, d: np.dtype) -> Case:
    """sort/argsort: a 1-3-d tensor with ties (few distinct values), axis, descending."""
    shape = draw(small_shapes(min_dims=1))
    x = draw(arrays(d, shape, special=True, lo=-2, hi=2))
    params = {"axis": axis_of(draw, len(shape), optional=False),
              "descending": draw(st.booleans())}
    return Case([x], params, views=draw(strided_views(1)))


@strategy(family="take")
@st.composite
def take(draw, spec: ops.OpSpec, d: np.dtype) -> Case:
    """take: a tensor and int32/int64 indices (negative too, any shape) in range of an axis."""
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5))
    axis = axis_of(draw, len(shape), optional=len(shape) == 1)
    n = shape[0 if axis is None else axis]
    ishape = draw(hnp.array_shapes(min_dims=0, max_dims=2, **SMALL_SIDES))
    idtype = draw(st.sampled_from([dt.int32, dt.int64]))
    indices = draw(hnp.arrays(idtype, ishape, elements=st.integers(-n, n - 1)))
    x = draw(arrays(d, shape, special=not dt.is_complex(d)))
    return Case([x, indices], {"axis": axis}, views=draw(strided_views(1)))


@strategy(family="update")
@st.composite
def update(draw, spec: ops.OpSpec, d: np.dtype) -> Case:
    """dynamic_update_slice: an operand, an update no longer on any axis, and int32/int64
    starts from below 0 to past the end (clamped so that the update fits)."""
    shape = draw(small_shapes(min_dims=1))
    size = tuple(draw(st.integers(0, n)) for n in shape)
    idtype = draw(st.sampled_from([dt.int32, dt.int64]))
    starts = np.array([draw(st.integers(-2, n + 2)) for n in shape], idtype)
    x, u = draw(arrays(d, shape, special=True)), draw(arrays(d, size, special=True))
    return Case([x, u, starts], views=draw(strided_views(2)))


# -- movement: each op's parameters, after one tensor drawn alike for all -------------------
def _movement_operand(draw, d: np.dtype, *, min_dims: int = 0) -> tuple:
    """(shape, tensor, views) of the tensor a movement op moves."""
    shape = draw(small_shapes(min_dims=min_dims))
    return shape, draw(arrays(d, shape)), draw(strided_views(1))


@strategy("reshape")
@st.composite
def reshape(draw, spec: ops.OpSpec, d: np.dtype) -> Case:
    """A tensor and a shape of its size: flat, inferred (-1), reversed, with axes of 1."""
    shape, x, views = _movement_operand(draw, d)
    size = math.prod(shape)
    options = [(size,), (-1,), (1, size), shape[::-1], (*shape, 1)]
    if size and size % 2 == 0:
        options.append((2, -1))
    return Case([x], {"shape": draw(st.sampled_from(options))}, views)


@strategy("permute_dims")
@st.composite
def permute_dims(draw, spec: ops.OpSpec, d: np.dtype) -> Case:
    """A tensor and a permutation of its axes."""
    shape, x, views = _movement_operand(draw, d)
    return Case([x], {"axes": tuple(draw(st.permutations(range(len(shape)))))}, views)


@strategy("broadcast_to")
@st.composite
def broadcast_to(draw, spec: ops.OpSpec, d: np.dtype) -> Case:
    """A tensor and a shape it broadcasts to: leading axes added, axes of 1 stretched."""
    shape, x, views = _movement_operand(draw, d)
    lead = draw(st.lists(st.integers(0, 3), max_size=2))
    target = tuple(lead) + tuple(draw(st.integers(0, 3)) if n == 1 else n for n in shape)
    return Case([x], {"shape": target}, views)


@strategy("slice")
@st.composite
def slice_(draw, spec: ops.OpSpec, d: np.dtype) -> Case:
    """A tensor and the bounds of a basic index: starts and stops in and out of range,
    steps forward and backward."""
    shape, x, views = _movement_operand(draw, d)
    key = tuple(
        slice(draw(st.none() | st.integers(-6, 6)), draw(st.none() | st.integers(-6, 6)),
              draw(st.sampled_from([None, 1, 2, 3, -1, -2])))
        for _ in shape)
    bounds, _, _ = shapes.index_bounds(shape, key)
    return Case([x], {"bounds": bounds}, views)


@strategy("concat")
@st.composite
def concat(draw, spec: ops.OpSpec, d: np.dtype) -> Case:
    """A tensor of at least one axis and up to two more that differ from it along the axis."""
    shape, x, views = _movement_operand(draw, d, min_dims=1)
    axis = draw(st.integers(0, len(shape) - 1))
    others = []
    for _ in range(draw(st.integers(0, 2))):
        s = list(shape)
        s[axis] = draw(st.integers(0, 4))
        others.append(draw(arrays(d, tuple(s))))
    return Case([x, *others], {"axis": axis - len(shape) * draw(st.integers(0, 1))}, views)


@strategy("pad")
@st.composite
def pad(draw, spec: ops.OpSpec, d: np.dtype) -> Case:
    """A tensor, a mode and widths it allows (none on empty axes but for constant, at most
    the axis for wrap); a constant value."""
    shape, x, views = _movement_operand(draw, d)
    mode = draw(st.sampled_from(ops.PAD_MODES))
    width = []
    for n in shape:
        top = 0 if (mode != "constant" and n == 0) else (min(n, 2) if mode == "wrap" else 2)
        width.append((draw(st.integers(0, top)), draw(st.integers(0, top))))
    params = {"pad_width": tuple(width), "mode": mode}
    if mode == "constant" and not dt.is_bool(d):
        params["value"] = draw(st.integers(0, 3))
    return Case([x], params, views)


@strategy("roll")
@st.composite
def roll(draw, spec: ops.OpSpec, d: np.dtype) -> Case:
    """A tensor and a shift of the flattened tensor, or shifts along distinct axes."""
    shape, x, views = _movement_operand(draw, d)
    if not shape or draw(st.booleans()):
        return Case([x], {"shift": draw(st.integers(-7, 7)), "axis": None}, views)
    axes = tuple(draw(st.lists(st.integers(0, len(shape) - 1), min_size=1, unique=True)))
    shift = tuple(draw(st.integers(-7, 7)) for _ in axes)
    return Case([x], {"shift": shift, "axis": axes}, views)


# -- linear algebra, FFT, quantization -----------------------------------------------------
@strategy(family="matmul")
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
    return Case([a, b], views=draw(strided_views(2)))


_FFT_SIZES = st.sampled_from([1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 15, 16, 17, 25, 31, 32])


@strategy(family="fft")
@st.composite
def fft(draw, spec: ops.OpSpec, d: np.dtype, *, output_length: bool = False) -> Case:
    """Batched transforms over a chosen subset of axes; odd and prime sizes; every norm
    (output_length: the length n of the last axis transformed is drawn, and the input
    holds n // 2 + 1 there, as irfftn's does)."""
    ndim = draw(st.integers(1, 3))
    shape = [draw(_FFT_SIZES) if draw(st.booleans()) else draw(st.integers(1, 4))
             for _ in range(ndim)]
    axes = tuple(draw(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim,
                               unique=True)))
    params = {"axes": axes, "norm": draw(st.sampled_from(["backward", "ortho", "forward"]))}
    if output_length:
        n = draw(_FFT_SIZES)
        shape[axes[-1]] = n // 2 + 1
        params["n"] = n
    return Case([draw(arrays(d, tuple(shape), lo=-1, hi=1))], params, draw(strided_views(1)))


strategy("irfftn", output_length=True)(fft)

_QSIZES = st.integers(1, 8) | st.sampled_from([16, 32])  # with the int8 dot products' blocks


@strategy(family="quant")
@st.composite
def quantize(draw, spec: ops.OpSpec, d: np.dtype, *, quantized_input: bool = False) -> Case:
    """quantize_linear (floats past the int8/uint8 range, saturating) or, quantized_input,
    dequantize_linear (int8/uint8 values, the zero point of their dtype): per tensor or per
    channel along a drawn axis."""
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    per_channel = draw(st.booleans())
    pshape = (shape[axis],) if per_channel else ()
    zdtype = d if quantized_input else draw(st.sampled_from([dt.int8, dt.uint8]))
    scale = draw(arrays(dt.float32, pshape, lo=0.01, hi=2).filter(lambda s: np.all(s > 0)))
    zero = draw(arrays(zdtype, pshape, lo=-128, hi=255))
    lo, hi = (-128, 255) if quantized_input else (-300, 300)
    x = draw(arrays(d, shape, lo=lo, hi=hi))
    return Case([x, scale, zero], {"axis": axis}, draw(strided_views(1)))


strategy("dequantize_linear", quantized_input=True)(quantize)


@strategy("qmatmul")
@st.composite
def qmatmul(draw, spec: ops.OpSpec, d: np.dtype) -> Case:
    """int8/uint8 by int8 matrices (sizes with multiples of 4 and 16) and zero points."""
    m, k, n = draw(st.integers(1, 8)), draw(_QSIZES), draw(_QSIZES)
    a = draw(arrays(d, (m, k), lo=-128, hi=255))
    b = draw(arrays(dt.int8, (k, n), lo=-128, hi=127))
    info = np.iinfo(d)
    params = {"a_zero_point": draw(st.integers(info.min, info.max)),
              "b_zero_point": draw(st.integers(-128, 127))}
    return Case([a, b], params, draw(strided_views(2)))


@strategy("quantized_linear")
@st.composite
def quantized_linear(draw, spec: ops.OpSpec, d: np.dtype) -> Case:
    """Batched inputs, int8 weights with a positive scale per output, an optional bias."""
    batch = draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=4))
    k, n = draw(_QSIZES), draw(_QSIZES)
    x = draw(arrays(d, (*batch, k), lo=-4, hi=4))
    w = draw(arrays(dt.int8, (k, n), lo=-127, hi=127))
    scale = draw(arrays(dt.float32, (n,), lo=0.01, hi=0.1).filter(lambda s: np.all(s > 0)))
    b = draw(st.none() | arrays(dt.float32, (n,), lo=-1, hi=1))
    return Case([x, w, scale, b], {}, draw(strided_views(1)))


# -- the composites of nn -------------------------------------------------------------------
@strategy(family="nn")
@st.composite
def activation(draw, spec: ops.OpSpec, d: np.dtype, *, big: Reach = Reach.NONE,
               keywords: dict | None = None) -> Case:
    """One tensor of any small shape for an activation, with its keyword parameters drawn
    from `keywords` (name -> strategy)."""
    shape = draw(small_shapes())
    params = {k: draw(values) for k, values in (keywords or {}).items()}
    x = draw(arrays(d, shape, big=big_values(big, d), lo=-6, hi=6))
    return Case([x], params, draw(strided_views(1)))


strategy("gelu", big=Reach.BEYOND_EXP,
         keywords={"approximate": st.sampled_from(ops.GELU_APPROXIMATIONS)})(activation)
strategy("silu", big=Reach.BEYOND_EXP)(activation)
strategy("sigmoid", "relu", big=Reach.FLOAT_MAX)(activation)


@strategy("softmax", "log_softmax", big=Reach.BEYOND_EXP)
@st.composite
def softmax(draw, spec: ops.OpSpec, d: np.dtype, *, big: Reach = Reach.NONE) -> Case:
    """A tensor of at least one axis and the axis normalised along."""
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=6))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    x = draw(arrays(d, shape, big=big_values(big, d), lo=-5, hi=5))
    return Case([x], {"axis": axis}, draw(strided_views(1)))


@strategy("layer_norm")
@st.composite
def layer_norm(draw, spec: ops.OpSpec, d: np.dtype) -> Case:
    """Rows of 2 to 8 elements that are not nearly constant, optional weight and bias."""
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=2, max_side=8))
    x = draw(arrays(d, shape, lo=-5, hi=5).filter(lambda a: np.all(np.ptp(
        a.astype(np.float64), axis=-1) > 0.5)))
    w = draw(st.none() | arrays(d, shape[-1:], lo=-2, hi=2))
    b = draw(st.none() | arrays(d, shape[-1:], lo=-2, hi=2))
    return Case([x, w, b], {"eps": 1e-5}, draw(strided_views(1)))


@strategy("rms_norm")
@st.composite
def rms_norm(draw, spec: ops.OpSpec, d: np.dtype) -> Case:
    """Rows of 1 to 8 elements away from all-zero, an optional weight."""
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=8))
    x = draw(arrays(d, shape, lo=-5, hi=5).filter(lambda a: np.all(np.max(
        np.abs(a.astype(np.float64)), axis=-1) > 0.5)))
    w = draw(st.none() | arrays(d, shape[-1:], lo=-2, hi=2))
    return Case([x, w], {"eps": 1e-6}, draw(strided_views(1)))


@strategy("rope")
@st.composite
def rope(draw, spec: ops.OpSpec, d: np.dtype) -> Case:
    """(batch, heads, sequence, head size) down to (sequence, head size) inputs, angles per
    position and pair broadcast over the rest, both pairings."""
    lead = draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3))
    seq, half = draw(st.integers(1, 5)), draw(st.integers(1, 4))
    x = draw(arrays(d, (*lead, seq, 2 * half), lo=-3, hi=3))
    angle = draw(arrays(dt.float64, (seq, half), lo=-4, hi=4))
    interleaved = draw(st.booleans())
    return Case([x, np.cos(angle).astype(d), np.sin(angle).astype(d)],
                {"interleaved": interleaved}, draw(strided_views(1)))


@strategy("linear")
@st.composite
def linear(draw, spec: ops.OpSpec, d: np.dtype) -> Case:
    """Batched inputs, a weight, an optional bias and every fused activation."""
    batch = draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=4))
    k, n = draw(st.integers(1, 8)), draw(st.integers(1, 8))
    x = draw(arrays(d, (*batch, k), lo=-2, hi=2))
    w = draw(arrays(d, (k, n), lo=-2, hi=2))
    b = draw(st.none() | arrays(d, (n,), lo=-2, hi=2))
    activation_ = draw(st.sampled_from(list(ops.ACTIVATIONS)))
    return Case([x, w, b], {"activation": activation_}, draw(strided_views(1)))


@strategy("scaled_dot_product_attention")
@st.composite
def attention(draw, spec: ops.OpSpec, d: np.dtype) -> Case:
    """Batched queries, keys and values of their own lengths; causal where lq <= lk."""
    batch = draw(hnp.array_shapes(min_dims=1, max_dims=2, min_side=1, max_side=3))
    lq, lk, e, ev = (draw(st.integers(1, 6)) for _ in range(4))
    q = draw(arrays(d, (*batch, lq, e), lo=-2, hi=2))
    k = draw(arrays(d, (*batch, lk, e), lo=-2, hi=2))
    v = draw(arrays(d, (*batch, lk, ev), lo=-2, hi=2))
    causal = draw(st.booleans()) and lq <= lk
    return Case([q, k, v], {"causal": causal}, draw(strided_views(3)))


# -- convolution and pooling ---------------------------------------------------------------
@st.composite
def _padding(draw, r: int, below: tuple[int, ...] | None = None):
    """conv/pool padding: an int, one per axis or (before, after) pairs (each < below)."""
    top = min(below) - 1 if below else 2
    form = draw(st.integers(0, 2))
    if form == 0:
        return draw(st.integers(0, top))
    if form == 1:
        return tuple(draw(st.integers(0, (below[i] - 1) if below else 2)) for i in range(r))
    return tuple((draw(st.integers(0, (below[i] - 1) if below else 2)),
                  draw(st.integers(0, (below[i] - 1) if below else 2))) for i in range(r))


def _spatial(draw, extents, padding, r):
    """Spatial sizes that a window of these extents fits with this padding (and a bit more)."""
    pairs = ops.conv.pads("conformance", padding, r)
    return tuple(max(1, e - lo - hi + draw(st.integers(0, 3)))
                 for e, (lo, hi) in zip(extents, pairs, strict=True))


def _layout(draw, x_first: np.ndarray) -> tuple[np.ndarray, str]:
    layout = draw(st.sampled_from(ops.LAYOUTS))
    return (x_first if layout == "channels_first" else np.moveaxis(x_first, 1, -1)), layout


@strategy("conv")
@st.composite
def conv(draw, spec: ops.OpSpec, d: np.dtype) -> Case:
    """1 to 3 spatial axes, groups, strides, dilations, every padding form, an optional
    bias, both layouts."""
    r = draw(st.integers(1, 3))
    groups, cg, og, n = (draw(st.integers(1, 2)) for _ in range(4))
    kernel = tuple(draw(st.integers(1, 3)) for _ in range(r))
    stride = tuple(draw(st.integers(1, 2)) for _ in range(r))
    dilation = tuple(draw(st.integers(1, 2)) for _ in range(r))
    padding = draw(_padding(r))
    extents = [dd * (k - 1) + 1 for k, dd in zip(kernel, dilation, strict=True)]
    x = draw(arrays(d, (n, groups * cg, *_spatial(draw, extents, padding, r)), lo=-2, hi=2))
    x, layout = _layout(draw, x)
    w = draw(arrays(d, (groups * og, cg, *kernel), lo=-2, hi=2))
    b = draw(st.none() | arrays(d, (groups * og,), lo=-2, hi=2))
    params = {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups,
              "layout": layout}
    return Case([x, w, b], params, draw(strided_views(1)))


@strategy("conv_transpose")
@st.composite
def conv_transpose(draw, spec: ops.OpSpec, d: np.dtype) -> Case:
    """1 to 3 spatial axes, groups, strides with output padding below them, dilations,
    every padding form that leaves an output, an optional bias, both layouts."""
    r = draw(st.integers(1, 3))
    groups, cg, og, n = (draw(st.integers(1, 2)) for _ in range(4))
    kernel = tuple(draw(st.integers(1, 3)) for _ in range(r))
    stride = tuple(draw(st.integers(1, 2)) for _ in range(r))
    dilation = tuple(draw(st.integers(1, 2)) for _ in range(r))
    extra = tuple(draw(st.integers(0, s - 1)) for s in stride)
    spatial = tuple(draw(st.integers(1, 4)) for _ in range(r))
    padding = draw(_padding(r))
    pairs = ops.conv.pads("conformance", padding, r)
    fits = all((m - 1) * s + dd * (k - 1) + e + 1 > lo + hi for m, s, dd, k, e, (lo, hi)
                 in zip(spatial, stride, dilation, kernel, extra, pairs, strict=True))
    if not fits:
        padding = 0
    x = draw(arrays(d, (n, groups * cg, *spatial), lo=-2, hi=2))
    x, layout = _layout(draw, x)
    w = draw(arrays(d, (groups * cg, og, *kernel), lo=-2, hi=2))
    b = draw(st.none() | arrays(d, (groups * og,), lo=-2, hi=2))
    params = {"stride": stride, "padding": padding, "output_padding": extra,
              "dilation": dilation, "groups": groups, "layout": layout}
    return Case([x, w, b], params, draw(strided_views(1)))


@strategy(family="pool")
@st.composite
def pool(draw, spec: ops.OpSpec, d: np.dtype) -> Case:
    """1 to 3 spatial axes, kernels up to 3, stride None (the kernel) or drawn, padding
    below the kernel, both layouts; avg_pool both count_include_pad."""
    r = draw(st.integers(1, 3))
    kernel = tuple(draw(st.integers(1, 3)) for _ in range(r))
    stride = draw(st.none() | st.tuples(*(st.integers(1, 2) for _ in range(r))))
    padding = draw(_padding(r, kernel))
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 3)),
             *_spatial(draw, kernel, padding, r))
    x, layout = _layout(draw, draw(arrays(d, shape, lo=-5, hi=5)))
    params = {"kernel": kernel, "stride": stride, "padding": padding, "layout": layout}
    if spec.name == "avg_pool":
        params["count_include_pad"] = draw(st.booleans())
    return Case([x], params, draw(strided_views(1)))


@strategy("batch_norm")
@st.composite
def batch_norm(draw, spec: ops.OpSpec, d: np.dtype) -> Case:
    """2-d to 4-d inputs in both layouts, positive variances, optional weight and bias."""
    shape = draw(hnp.array_shapes(min_dims=2, max_dims=4, min_side=1, max_side=4))
    x, layout = _layout(draw, draw(arrays(d, shape, lo=-4, hi=4)))
    c = shape[1]
    mean = draw(arrays(d, (c,), lo=-2, hi=2))
    var = draw(arrays(d, (c,), lo=0.25, hi=4))
    w = draw(st.none() | arrays(d, (c,), lo=-2, hi=2))
    b = draw(st.none() | arrays(d, (c,), lo=-2, hi=2))
    return Case([x, mean, var, w, b], {"eps": 1e-5, "layout": layout}, draw(strided_views(1)))


# -- collectives (collectives.py) -----------------------------------------------------------
strategy(family="collective")(collective)
strategy("all_reduce", "copy_to_group", axis=False)(collective)
strategy("all_to_all")(all_to_all)
strategy("send")(send)
strategy("recv")(recv)
