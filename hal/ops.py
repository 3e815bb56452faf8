"""The op set, declared once: name, kind, dtypes, output rule, numpy reference, tolerances.

Tiers: *primitive* ops every backend provides; *extended* ops (complex parts, FFT,
int8) a backend may lack; *composite* ops with a default decomposition into other ops
(in `hal/nn.py` and `hal/fft.py`) that a backend may replace with a fused kernel.
Backends register kernels by these names; nothing about an op is repeated per backend.

A reference computes float16/bfloat16 in float32 and rounds the result, so it is the
correctly rounded answer a careful kernel gives, not numpy's half-precision quirks.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from . import dtypes as dt
from . import shapes
from .errors import DomainError, ShapeError, UnsupportedDType, UnsupportedOp

PRIMITIVE, EXTENDED, COMPOSITE = "primitive", "extended", "composite"

# (rtol, atol) per dtype; accumulating ops scale atol by the magnitude of their terms.
_TOL = {
    dt.float16: (2e-3, 1e-4),
    dt.float32: (2e-6, 1e-7),
    dt.float64: (1e-12, 1e-15),
    dt.complex64: (2e-6, 1e-7),
    dt.complex128: (1e-12, 1e-15),
}
if dt.bfloat16 is not None:
    _TOL[dt.bfloat16] = (1.6e-2, 1e-3)
_LOOSE = {d: (r * 8, a * 8) for d, (r, a) in _TOL.items()}  # transcendental / fused ops


@dataclass(frozen=True)
class OpSpec:
    """One op of the set. `meta` validates operands and gives (shape, dtype) of the result."""

    name: str
    kind: str
    family: str
    dtypes: tuple[np.dtype, ...]  # accepted dtypes of the key operand (after promotion)
    reference: Callable  # numpy: (*arrays, **params) -> array
    meta: Callable  # (*operands with .shape/.dtype, **params) -> (shape, dtype)
    promote: tuple[int, ...] = (0,)  # operands promoted to one common dtype
    key: int = 0  # the operand whose dtype selects the kernel
    tolerance: Mapping[np.dtype, tuple[float, float]] = field(default_factory=lambda: _TOL)
    bound: Callable | None = None  # (*arrays, **params) -> magnitude scale of the error
    # (*operands, **params) -> None, raising DomainError for values outside the op's domain;
    # it reads values (operands with __array__), so only an interpreter holding them runs it
    domain: Callable | None = None
    differentiable: bool = True
    doc: str = ""

    def evaluate(self, *arrays, **params):
        """The reference result: half precision computed in float32, cast to the output dtype."""
        _, out_dtype = self.meta(*arrays, **params)
        if self.domain is not None:
            self.domain(*arrays, **params)
        lifted = [_lift(a) for a in arrays]
        with np.errstate(all="ignore"):
            result = self.reference(*lifted, **params)
        return np.asarray(result).astype(out_dtype, copy=False)

    def tolerance_for(self, dtype: np.dtype) -> tuple[float, float]:
        """(rtol, atol) for results of this dtype; exact for bool and integers."""
        return self.tolerance.get(dtype, (0.0, 0.0))


def _lift(a):
    if isinstance(a, np.ndarray) and a.dtype in (dt.float16, dt.bfloat16):
        return a.astype(np.float32)
    return a


_SPECS: dict[str, OpSpec] = {}


def declare(name, kind, family, dtypes, reference, meta, **options) -> OpSpec:
    """Add an op to the set (used below, and by nothing else)."""
    spec_ = OpSpec(name, kind, family, tuple(dtypes), reference, meta, **options)
    _SPECS[name] = spec_
    return spec_


def spec(name: str) -> OpSpec:
    """The declaration of an op; UnsupportedOp listing close names if there is none."""
    try:
        return _SPECS[name]
    except KeyError:
        import difflib

        close = difflib.get_close_matches(name, _SPECS, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else "; `hal.ops.names()` lists them"
        raise UnsupportedOp(f"{name!r} is not an op of the hal op set{hint}") from None


def names(kind: str | None = None) -> list[str]:
    """Names of the ops, of one kind or all, in declaration order."""
    return [n for n, s in _SPECS.items() if kind is None or s.kind == kind]


def specs() -> list[OpSpec]:
    """Every declaration, in order."""
    return list(_SPECS.values())


# -- dtype checks and output rules ------------------------------------------------------
def check_dtype(op: str, d: np.dtype, accepted, role: str = "input") -> None:
    """UnsupportedDType naming the op and the dtypes it accepts."""
    if d not in accepted:
        raise UnsupportedDType(
            f"{op}: {role} dtype {d.name} is not accepted; it takes {', '.join(dt.names(accepted))}"
            + ("; cast with hal.astype first" if d in dt.ALL else "")
        )


def _same(d):
    return d


def _to_bool(d):
    return dt.bool_


def _to_real(d):
    return dt.real_dtype(d)


# -- meta functions per family ----------------------------------------------------------
def _unary_meta(rule):
    def meta(x):
        return tuple(x.shape), rule(x.dtype)

    return meta


def _binary_meta(name, rule):
    def meta(a, b):
        shape = a.shape if a.shape == b.shape else shapes.broadcast(name, a.shape, b.shape)
        return tuple(shape), rule(a.dtype)

    return meta


def _where_meta(cond, x, y):
    check_dtype("where", cond.dtype, dt.BOOL, "condition")
    return shapes.broadcast("where", cond.shape, x.shape, y.shape), x.dtype


def _astype_meta(x, *, dtype):
    target = dt.dtype(dtype)
    if dt.is_complex(x.dtype) and not dt.is_complex(target):
        raise UnsupportedDType(
            f"astype: {x.dtype.name} -> {target.name} would drop the imaginary part; "
            "take hal.real or hal.abs first"
        )
    return tuple(x.shape), target


def _reduce_meta(name, rule, *, empty_ok):
    def meta(x, *, axis=None, keepdims=False):
        red = shapes.axes(name, axis, x.ndim)
        if not empty_ok and any(x.shape[a] == 0 for a in red):
            raise ShapeError(
                f"{name}: reduction over an empty axis of shape {x.shape} has no identity"
            )
        return shapes.reduced(tuple(x.shape), red, keepdims), rule(x.dtype)

    return meta


def _sum_rule(d):
    return dt.int64 if dt.is_integer(d) or dt.is_bool(d) else d


def _reshape_meta(x, *, shape):
    return shapes.reshape("reshape", tuple(x.shape), shape), x.dtype


def _permute_meta(x, *, axes):
    perm = shapes.axes("permute_dims", axes, x.ndim, allow_none=False)
    if len(perm) != x.ndim:
        raise ShapeError(f"permute_dims: axes {axes!r} is not a permutation of {x.ndim} axes")
    return tuple(x.shape[a] for a in perm), x.dtype


def _broadcast_to_meta(x, *, shape):
    shape = tuple(int(n) for n in shape)
    if len(shape) < x.ndim or shapes.broadcast("broadcast_to", x.shape, shape) != shape:
        raise ShapeError(f"broadcast_to: shape {tuple(x.shape)} cannot broadcast to {shape}")
    return shape, x.dtype


def _slice_meta(x, *, bounds):
    if len(bounds) != x.ndim:
        raise ShapeError(f"slice: {len(bounds)} bounds for a {x.ndim}-d tensor")
    for dim, (start, step, count) in zip(x.shape, bounds):
        last = start + step * (count - 1)
        if step == 0 or count < 0 or (count and not (0 <= start < dim and 0 <= last < dim)):
            raise ShapeError(f"slice: bounds {(start, step, count)} out of range for size {dim}")
    return tuple(c for _, _, c in bounds), x.dtype


def _slice_ref(x, *, bounds):
    index = []
    for start, step, count in bounds:
        stop = start + step * count
        index.append(slice(start, stop if stop >= 0 else None, step))
    return x[tuple(index)]


def _concat_meta(*xs, axis=0):
    if not xs:
        raise ShapeError("concat: needs at least one tensor")
    first = xs[0]
    if first.ndim == 0:
        raise ShapeError("concat: 0-d tensors cannot be concatenated; reshape them to 1-d")
    a = shapes.axis("concat", axis, first.ndim)
    for x in xs[1:]:
        if x.ndim != first.ndim or any(
            m != n for i, (m, n) in enumerate(zip(x.shape, first.shape)) if i != a
        ):
            raise ShapeError(
                f"concat: shapes {[tuple(t.shape) for t in xs]} differ outside axis {a}"
            )
    shape = list(first.shape)
    shape[a] = sum(x.shape[a] for x in xs)
    return tuple(shape), first.dtype


PAD_MODES = ("constant", "edge", "wrap")


def _pad_meta(x, *, pad_width, mode="constant", value=0):
    if mode not in PAD_MODES:
        raise ShapeError(f"pad: mode {mode!r} is not one of {', '.join(PAD_MODES)}")
    if len(pad_width) != x.ndim or any(len(p) != 2 or min(p) < 0 for p in pad_width):
        raise ShapeError(
            f"pad: pad_width needs one non-negative (before, after) pair per axis of "
            f"{tuple(x.shape)}, got {pad_width!r}"
        )
    if mode != "constant" and any(n == 0 and sum(p) for n, p in zip(x.shape, pad_width)):
        raise ShapeError(f"pad: mode {mode!r} cannot pad an empty axis of {tuple(x.shape)}")
    if mode == "wrap" and any(b > n or a > n for n, (b, a) in zip(x.shape, pad_width)):
        raise ShapeError(f"pad: wrap padding wider than the axis in {tuple(x.shape)}")
    return tuple(n + b + a for n, (b, a) in zip(x.shape, pad_width)), x.dtype


def _pad_ref(x, *, pad_width, mode="constant", value=0):
    if x.ndim == 0:
        return x.copy()
    if mode == "constant":
        return np.pad(x, pad_width, mode="constant", constant_values=value)
    return np.pad(x, pad_width, mode=mode)


def _matmul_meta(a, b):
    return shapes.matmul("matmul", tuple(a.shape), tuple(b.shape)), a.dtype


def _matmul_bound(a, b):
    return np.abs(a) @ np.abs(b)


def _sum_bound(x, *, axis=None, keepdims=False):
    return np.sum(np.abs(x), axis=axis, keepdims=keepdims)


# -- primitives -----------------------------------------------------------------------
_NONBOOL = dt.NUMERIC
_ORDERED = dt.INTEGERS + dt.REALS
_UNARY = {
    "negative": (np.negative, _NONBOOL, _same, _TOL),
    "abs": (np.abs, _NONBOOL, _to_real, _TOL),
    "exp": (np.exp, dt.FLOATS, _same, _LOOSE),
    "log": (np.log, dt.FLOATS, _same, _LOOSE),
    "sqrt": (np.sqrt, dt.FLOATS, _same, _TOL),
    "sin": (np.sin, dt.FLOATS, _same, _LOOSE),
    "cos": (np.cos, dt.FLOATS, _same, _LOOSE),
    "tanh": (np.tanh, dt.FLOATS, _same, _LOOSE),
}
for _name, (_fn, _dtypes, _rule, _tol) in _UNARY.items():
    declare(_name, PRIMITIVE, "unary", _dtypes, _fn, _unary_meta(_rule), tolerance=_tol)


def _erf_ref(x):
    from math import erf

    return np.asarray(np.frompyfunc(erf, 1, 1)(x.astype(np.float64)), dtype=np.float64)


declare("erf", PRIMITIVE, "unary", dt.REALS, _erf_ref, _unary_meta(_same), tolerance=_LOOSE)

_BINARY = {
    "add": (np.add, _NONBOOL, _same, _TOL),
    "subtract": (np.subtract, _NONBOOL, _same, _TOL),
    "multiply": (np.multiply, _NONBOOL, _same, _TOL),
    "divide": (np.divide, dt.FLOATS, _same, _TOL),
    "power": (np.power, _NONBOOL, _same, _LOOSE),
    "maximum": (np.maximum, _ORDERED, _same, _TOL),
    "minimum": (np.minimum, _ORDERED, _same, _TOL),
    "equal": (np.equal, dt.ALL, _to_bool, _TOL),
    "less": (np.less, _ORDERED, _to_bool, _TOL),
    "greater": (np.greater, _ORDERED, _to_bool, _TOL),
}


def _power_domain(a, b):
    """Signed integers to negative powers are refused (numpy's rule) on every backend."""
    if b.dtype.kind == "i" and np.min(np.asarray(b), initial=0) < 0:
        raise DomainError(
            f"power: {a.dtype.name} to a negative {b.dtype.name} exponent has no integer "
            "result; cast the operands to a floating dtype first (hal.astype(x, hal.float64))"
        )


def _power_bound(a, b):
    """|a ** b| times the condition of exp(b log a), max(1, |b| |log a|): a rounding of the
    exponent's product b log a is amplified by it (complex64 (-0.69+2.8j) ** (0.004-2.9j)
    loses 4 digits in float arithmetic); at a = 0 and where it is not finite, |a ** b|."""
    wide = np.complex128 if np.iscomplexobj(a) or np.iscomplexobj(b) else np.float64
    a, b = np.asarray(a).astype(wide), np.asarray(b).astype(wide)
    with np.errstate(all="ignore"):
        result = np.abs(np.power(a, b))
        log = np.abs(np.log(np.abs(a))) + np.abs(np.angle(a))
        scale = result * np.maximum(1.0, np.abs(b) * log)
    return np.where(np.isfinite(scale), scale, result)


for _name, (_fn, _dtypes, _rule, _tol) in _BINARY.items():
    declare(
        _name, PRIMITIVE, "binary", _dtypes, _fn, _binary_meta(_name, _rule), promote=(0, 1),
        tolerance=_tol, differentiable=_rule is _same,
        domain=_power_domain if _name == "power" else None,
        bound=_power_bound if _name == "power" else None,
    )

declare("where", PRIMITIVE, "where", dt.ALL, np.where, _where_meta, promote=(1, 2), key=1)
declare(
    "astype", PRIMITIVE, "cast", dt.ALL, lambda x, *, dtype: x.astype(dt.dtype(dtype)),
    _astype_meta,
)
declare(
    "sum", PRIMITIVE, "reduction", dt.BOOL + dt.NUMERIC,
    lambda x, *, axis=None, keepdims=False: np.sum(
        x, axis=axis, keepdims=keepdims, dtype=_sum_rule(x.dtype)),
    _reduce_meta("sum", _sum_rule, empty_ok=True), bound=_sum_bound,
)
for _name, _fn in (("max", np.max), ("min", np.min)):
    declare(
        _name, PRIMITIVE, "reduction", dt.BOOL + _ORDERED,
        lambda x, *, axis=None, keepdims=False, _fn=_fn: _fn(x, axis=axis, keepdims=keepdims),
        _reduce_meta(_name, _same, empty_ok=False),
    )
declare(
    "reshape", PRIMITIVE, "movement", dt.ALL,
    lambda x, *, shape: np.reshape(x, shapes.reshape("reshape", x.shape, shape)), _reshape_meta,
)
declare("permute_dims", PRIMITIVE, "movement", dt.ALL, np.transpose, _permute_meta)
declare("broadcast_to", PRIMITIVE, "movement", dt.ALL, np.broadcast_to, _broadcast_to_meta)
declare("slice", PRIMITIVE, "movement", dt.ALL, _slice_ref, _slice_meta)
declare(
    "concat", PRIMITIVE, "movement", dt.ALL,
    lambda *xs, axis=0: np.concatenate(xs, axis=axis), _concat_meta, promote=(-1,),
)
declare("pad", PRIMITIVE, "movement", dt.ALL, _pad_ref, _pad_meta)
declare(
    "matmul", PRIMITIVE, "matmul", _NONBOOL, np.matmul, _matmul_meta, promote=(0, 1),
    bound=_matmul_bound,
)


# -- extended: complex parts ----------------------------------------------------------
def _complex_meta(re, im):
    check_dtype("complex", im.dtype, (re.dtype,), "imaginary part")
    return shapes.broadcast("complex", re.shape, im.shape), dt.complex_dtype(re.dtype)


declare("real", EXTENDED, "complex", dt.COMPLEX, np.real, _unary_meta(_to_real))
declare("imag", EXTENDED, "complex", dt.COMPLEX, np.imag, _unary_meta(_to_real))
declare("conj", EXTENDED, "complex", dt.COMPLEX, np.conj, _unary_meta(_same))
declare(
    "complex", EXTENDED, "complex", (dt.float32, dt.float64),
    lambda re, im: re + 1j * im, _complex_meta, promote=(0, 1),
)

# -- extended: FFT family (numpy.fft semantics) -----------------------------------------
NORMS = (None, "backward", "ortho", "forward")


def _check_norm(op, norm):
    if norm not in NORMS:
        raise ShapeError(f"{op}: norm {norm!r} is not one of backward, ortho, forward")


def _fft_meta(name, rule):
    def meta(x, *, axes, norm=None):
        _check_norm(name, norm)
        ax = shapes.axes(name, axes, x.ndim, allow_none=False)
        if any(x.shape[a] == 0 for a in ax):
            raise ShapeError(f"{name}: empty transform axis in shape {tuple(x.shape)}")
        shape = list(x.shape)
        if name == "rfftn":
            shape[ax[-1]] = x.shape[ax[-1]] // 2 + 1
        return tuple(shape), rule(x.dtype)

    return meta


def _irfftn_meta(x, *, axes, n, norm=None):
    _check_norm("irfftn", norm)
    ax = shapes.axes("irfftn", axes, x.ndim, allow_none=False)
    if n < 1 or x.shape[ax[-1]] != n // 2 + 1:
        raise ShapeError(
            f"irfftn: output length {n} needs {n // 2 + 1} input points on axis {ax[-1]}, "
            f"shape is {tuple(x.shape)}"
        )
    shape = list(x.shape)
    shape[ax[-1]] = n
    return tuple(shape), dt.real_dtype(x.dtype)


def _fft_bound(x, **params):
    return np.full(1, np.sum(np.abs(x)) + 1.0)


_FFT_TOL = _LOOSE
declare(
    "fftn", EXTENDED, "fft", dt.COMPLEX,
    lambda x, *, axes, norm=None: np.fft.fftn(x, axes=axes, norm=norm),
    _fft_meta("fftn", _same), tolerance=_FFT_TOL, bound=_fft_bound,
)
declare(
    "ifftn", EXTENDED, "fft", dt.COMPLEX,
    lambda x, *, axes, norm=None: np.fft.ifftn(x, axes=axes, norm=norm),
    _fft_meta("ifftn", _same), tolerance=_FFT_TOL, bound=_fft_bound,
)
declare(
    "rfftn", EXTENDED, "fft", (dt.float32, dt.float64),
    lambda x, *, axes, norm=None: np.fft.rfftn(x, axes=axes, norm=norm),
    _fft_meta("rfftn", dt.complex_dtype), tolerance=_FFT_TOL, bound=_fft_bound,
)


def _irfftn_ref(x, *, axes, n, norm=None):
    s = [x.shape[a] for a in axes[:-1]] + [n]
    return np.fft.irfftn(x, s=s, axes=axes, norm=norm)


declare(
    "irfftn", EXTENDED, "fft", dt.COMPLEX, _irfftn_ref, _irfftn_meta, tolerance=_FFT_TOL,
    bound=_fft_bound,
)


# -- extended: int8 quantization (ONNX QuantizeLinear / DequantizeLinear / MatMulInteger) --
def _qparams_meta(op, x, scale, zero_point, axis):
    check_dtype(op, scale.dtype, (dt.float32,), "scale")
    check_dtype(op, zero_point.dtype, (dt.int8, dt.uint8), "zero_point")
    if tuple(scale.shape) != tuple(zero_point.shape) or scale.ndim > 1:
        raise ShapeError(
            f"{op}: scale {tuple(scale.shape)} and zero_point {tuple(zero_point.shape)} must "
            "have one shape, scalar (per tensor) or 1-d (per channel along axis)"
        )
    if scale.ndim == 1:
        a = shapes.axis(op, axis, x.ndim)
        if x.shape[a] != scale.shape[0]:
            raise ShapeError(
                f"{op}: {scale.shape[0]} scales for axis {a} of size {x.shape[a]}"
            )


def _per_channel(p, x, axis):
    if p.ndim == 0:
        return p
    shape = [1] * x.ndim
    shape[axis % x.ndim] = -1
    return p.reshape(shape)


def _quantize_meta(x, scale, zero_point, *, axis=-1):
    _qparams_meta("quantize_linear", x, scale, zero_point, axis)
    return tuple(x.shape), zero_point.dtype


def _quantize_ref(x, scale, zero_point, *, axis=-1):
    """saturate(rint(x / scale) + zero_point); NaN gives the dtype's minimum, as ONNX Runtime."""
    info = np.iinfo(zero_point.dtype)
    s, z = _per_channel(scale, x, axis), _per_channel(zero_point, x, axis)
    q = np.rint(x.astype(np.float32) / s) + z.astype(np.float32)
    q = np.where(np.isnan(q), info.min, q)
    return np.clip(q, info.min, info.max).astype(zero_point.dtype)


def _dequantize_meta(q, scale, zero_point, *, axis=-1):
    _qparams_meta("dequantize_linear", q, scale, zero_point, axis)
    check_dtype("dequantize_linear", q.dtype, (zero_point.dtype,), "input (zero_point's)")
    return tuple(q.shape), scale.dtype


def _dequantize_ref(q, scale, zero_point, *, axis=-1):
    s, z = _per_channel(scale, q, axis), _per_channel(zero_point, q, axis)
    return (q.astype(np.int32) - z.astype(np.int32)).astype(np.float32) * s


def _qmatmul_meta(a, b, *, a_zero_point=0, b_zero_point=0):
    check_dtype("qmatmul", b.dtype, (dt.int8,), "second operand")
    for name, zp, d in (("a_zero_point", a_zero_point, a.dtype), ("b_zero_point", b_zero_point,
                                                                  b.dtype)):
        info = np.iinfo(d)
        if not info.min <= int(zp) <= info.max:
            raise ShapeError(f"qmatmul: {name}={zp} is outside the range of {d.name}")
    return shapes.matmul("qmatmul", tuple(a.shape), tuple(b.shape)), dt.int32


def _qmatmul_ref(a, b, *, a_zero_point=0, b_zero_point=0):
    a32 = a.astype(np.int64) - int(a_zero_point)
    b32 = b.astype(np.int64) - int(b_zero_point)
    return np.matmul(a32, b32).astype(np.int32)


declare(
    "quantize_linear", EXTENDED, "quant", dt.REALS, _quantize_ref, _quantize_meta,
    promote=(), differentiable=False,
)
declare(
    "dequantize_linear", EXTENDED, "quant", (dt.int8, dt.uint8), _dequantize_ref,
    _dequantize_meta, promote=(), differentiable=False, tolerance={dt.float32: (1e-6, 1e-7)},
)
declare(
    "qmatmul", EXTENDED, "quant", (dt.int8, dt.uint8), _qmatmul_ref, _qmatmul_meta,
    promote=(), differentiable=False,
)


def dynamic_qparams(lo: float, hi: float) -> tuple[np.float32, int]:
    """ONNX DynamicQuantizeLinear's uint8 scale and zero point for data in [lo, hi],
    in float32 arithmetic: the range is widened to hold 0, scale = range / 255 (1 for an
    all-zero input), zero point = saturate(rint(-lo / scale))."""
    lo32, hi32 = np.float32(min(lo, 0.0)), np.float32(max(hi, 0.0))
    scale = (hi32 - lo32) / np.float32(255)
    if scale == 0:
        scale = np.float32(1)
    return np.float32(scale), int(np.clip(np.rint(-lo32 / scale), 0, 255))


def _quantized_linear_meta(x, weight, weight_scale, bias=None):
    check_dtype("quantized_linear", weight.dtype, (dt.int8,), "weight")
    check_dtype("quantized_linear", weight_scale.dtype, (dt.float32,), "weight_scale")
    if weight.ndim != 2 or x.ndim < 1 or x.shape[-1] != weight.shape[0]:
        raise ShapeError(f"quantized_linear: x {tuple(x.shape)} and weight "
                         f"{tuple(weight.shape)} need x (..., K) and weight (K, N)")
    n = weight.shape[1]
    for name, p in (("weight_scale", weight_scale), ("bias", bias)):
        if p is not None and tuple(p.shape) != (n,):
            raise ShapeError(f"quantized_linear: {name} {tuple(p.shape)} must be ({n},)")
    if bias is not None:
        check_dtype("quantized_linear", bias.dtype, (dt.float32,), "bias")
    return (*x.shape[:-1], n), dt.float32


def _quantized_linear_ref(x, weight, weight_scale, bias=None):
    x = x.astype(np.float32)
    scale, zero = dynamic_qparams(float(x.min(initial=0.0)), float(x.max(initial=0.0)))
    q = np.clip(np.rint(x / scale) + np.float32(zero), 0, 255).astype(np.int32)
    acc = (q - zero) @ weight.astype(np.int32)
    y = acc.astype(np.float32) * (scale * weight_scale)
    return y if bias is None else y + bias


declare(
    "quantized_linear", COMPOSITE, "quant", (dt.float32,), _quantized_linear_ref,
    _quantized_linear_meta, promote=(), differentiable=False, tolerance=_LOOSE,
)


# -- composites (decompositions live with their public functions in hal/nn.py) -----------
_mean_meta = _reduce_meta("mean", _same, empty_ok=True)  # an empty axis gives NaN, as numpy


def _var_meta(x, *, axis=None, keepdims=False, correction=0):
    if isinstance(correction, bool) or not isinstance(correction, (int, float)) \
            or not correction >= 0:
        raise ShapeError(f"var: correction must be a number >= 0, got {correction!r}")
    return _reduce_meta("var", _same, empty_ok=True)(x, axis=axis, keepdims=keepdims)


def _empty_is_nan(reference):
    """numpy's NaN for an empty axis, without its "empty slice" RuntimeWarning."""

    def quiet(*args, **params):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return reference(*args, **params)

    return quiet


@_empty_is_nan
def _mean_ref(x, *, axis=None, keepdims=False):
    return np.mean(x, axis=axis, keepdims=keepdims)


@_empty_is_nan
def _var_ref(x, *, axis=None, keepdims=False, correction=0):
    return np.var(x, axis=axis, keepdims=keepdims, ddof=correction)


def _axis_meta(name):
    def meta(x, *, axis=-1):
        if x.ndim:
            shapes.axis(name, axis, x.ndim)
        return tuple(x.shape), x.dtype

    return meta


def _softmax_ref(x, *, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def _log_softmax_ref(x, *, axis=-1):
    s = x - np.max(x, axis=axis, keepdims=True)
    return s - np.log(np.sum(np.exp(s), axis=axis, keepdims=True))


def _layer_norm_meta(x, weight=None, bias=None, *, eps=1e-5):
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not eps > 0:
        raise ShapeError(f"layer_norm: eps must be a positive number, got {eps!r}")
    if x.ndim == 0:
        raise ShapeError("layer_norm: needs at least a 1-d input (normalises the last axis)")
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None and tuple(p.shape) != tuple(x.shape[-1:]):
            raise ShapeError(
                f"layer_norm: {name} of shape {tuple(p.shape)} must be {tuple(x.shape[-1:])}"
            )
    return tuple(x.shape), x.dtype


def _layer_norm_ref(x, weight=None, bias=None, *, eps=1e-5):
    mean = np.mean(x, axis=-1, keepdims=True)
    y = (x - mean) / np.sqrt(np.var(x, axis=-1, keepdims=True) + eps)
    if weight is not None:
        y = y * weight
    return y if bias is None else y + bias


def _erf_np(x):
    return _erf_ref(x).astype(x.dtype)


GELU_APPROXIMATIONS = ("none", "tanh")


def _gelu_ref(x, *, approximate="none"):
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    return 0.5 * x * (1 + _erf_np(x / math.sqrt(2)))


def _gelu_meta(x, *, approximate="none"):
    if approximate not in GELU_APPROXIMATIONS:
        raise ShapeError(f"gelu: approximate={approximate!r} is not 'none' or 'tanh'")
    return tuple(x.shape), x.dtype


ACTIVATIONS = {
    None: lambda y: y,
    "relu": lambda y: np.maximum(y, 0),
    "gelu": _gelu_ref,
    "gelu_tanh": lambda y: _gelu_ref(y, approximate="tanh"),
    "silu": lambda y: y / (1 + np.exp(-y)),
    "sigmoid": lambda y: 1 / (1 + np.exp(-y)),
    "tanh": np.tanh,
}


def _linear_meta(x, weight, bias=None, *, activation=None):
    if activation not in ACTIVATIONS:
        raise ShapeError(
            f"linear: activation {activation!r} is not one of "
            f"{', '.join(str(a) for a in ACTIVATIONS)}"
        )
    if weight.ndim != 2:
        raise ShapeError(f"linear: weight must be 2-d (in, out), got {tuple(weight.shape)}")
    shape = shapes.matmul("linear", tuple(x.shape), tuple(weight.shape))
    if bias is not None and tuple(bias.shape) != (weight.shape[1],):
        raise ShapeError(f"linear: bias {tuple(bias.shape)} must be ({weight.shape[1]},)")
    return shape, x.dtype


def _linear_ref(x, weight, bias=None, *, activation=None):
    y = x @ weight
    if bias is not None:
        y = y + bias
    return ACTIVATIONS[activation](y)


def _sdpa_meta(q, k, v, *, causal=False, scale=None):
    if q.ndim < 2 or k.ndim != q.ndim or v.ndim != q.ndim:
        raise ShapeError(
            "scaled_dot_product_attention: q, k, v must have one rank >= 2 (..., L, E), got "
            f"{tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}"
        )
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ShapeError(
            f"scaled_dot_product_attention: q {tuple(q.shape)} and k {tuple(k.shape)} need one "
            f"embedding size; k and v {tuple(v.shape)} one sequence length"
        )
    batch = shapes.broadcast("scaled_dot_product_attention", q.shape[:-2], k.shape[:-2],
                             v.shape[:-2])
    return (*batch, q.shape[-2], v.shape[-1]), q.dtype


def causal_mask(lq: int, lk: int) -> np.ndarray:
    """True where query i may attend key j (j <= i, aligned at the end as PyTorch does)."""
    return np.tril(np.ones((lq, lk), dtype=bool), k=lk - lq)


def _sdpa_ref(q, k, v, *, causal=False, scale=None):
    s = (1 / math.sqrt(q.shape[-1])) if scale is None else scale
    scores = (q @ np.swapaxes(k, -1, -2)) * s
    if causal:
        scores = np.where(causal_mask(q.shape[-2], k.shape[-2]), scores, -np.inf)
    return _softmax_ref(scores, axis=-1) @ v


def _roll_meta(x, *, shift, axis=None):
    if axis is not None:
        shifts = (shift,) if isinstance(shift, int) else tuple(shift)
        ax = (axis,) if isinstance(axis, int) else tuple(axis)
        if len(shifts) != len(ax):
            raise ShapeError(f"roll: {len(shifts)} shifts for {len(ax)} axes")
        shapes.axes("roll", ax, x.ndim)
    return tuple(x.shape), x.dtype


_C = dt.REALS
declare("mean", COMPOSITE, "reduction", dt.FLOATS, _mean_ref, _mean_meta,
        tolerance=_LOOSE)
declare("var", COMPOSITE, "reduction", _C, _var_ref, _var_meta, tolerance=_LOOSE)
declare("softmax", COMPOSITE, "nn", _C, _softmax_ref, _axis_meta("softmax"), tolerance=_LOOSE)
declare("log_softmax", COMPOSITE, "nn", _C, _log_softmax_ref, _axis_meta("log_softmax"),
        tolerance=_LOOSE)
declare("layer_norm", COMPOSITE, "nn", _C, _layer_norm_ref, _layer_norm_meta,
        promote=(0, 1, 2), tolerance=_LOOSE)
declare("gelu", COMPOSITE, "nn", _C, _gelu_ref, _gelu_meta, tolerance=_LOOSE)
declare("silu", COMPOSITE, "nn", _C, ACTIVATIONS["silu"], _unary_meta(_same), tolerance=_LOOSE)
declare("sigmoid", COMPOSITE, "nn", _C, ACTIVATIONS["sigmoid"], _unary_meta(_same),
        tolerance=_LOOSE)
declare("relu", COMPOSITE, "nn", _ORDERED, ACTIVATIONS["relu"], _unary_meta(_same))
declare("linear", COMPOSITE, "nn", _C, _linear_ref, _linear_meta, promote=(0, 1, 2),
        tolerance=_LOOSE, bound=lambda x, w, b=None, **_: np.abs(x) @ np.abs(w) + 1)
declare("scaled_dot_product_attention", COMPOSITE, "nn", _C, _sdpa_ref, _sdpa_meta,
        promote=(0, 1, 2), tolerance=_LOOSE)
declare("roll", COMPOSITE, "movement", dt.ALL,
        lambda x, *, shift, axis=None: np.roll(x, shift, axis=axis), _roll_meta)


# -- Array API additions: predicates, searching, sorting, scans, take, integer division ----
# Composites (decomposed in hal/functions.py beside their public functions) where the op
# set expresses them; extended ops with a CPU kernel where it does not. The predicates,
# index-valued and rounding ops have no useful derivative (differentiable=False); sort
# would need a gather by argsort indices that the op set lacks.
def _bool_reduce_meta(name):
    return _reduce_meta(name, _to_bool, empty_ok=True)


def _arg_reduce_meta(name):
    def meta(x, *, axis=None, keepdims=False):
        if axis is not None:
            shapes.axis(name, axis, x.ndim)
        if x.size == 0:
            raise ShapeError(f"{name}: an empty tensor of shape {tuple(x.shape)} has no "
                             "extreme element")
        red = shapes.axes(name, axis, x.ndim)
        return shapes.reduced(tuple(x.shape), red, keepdims), dt.int64

    return meta


def _scan_axis(name, x, axis):
    if x.ndim == 0:
        raise ShapeError(f"{name}: needs at least a 1-d tensor, got a 0-d one")
    if axis is None and x.ndim > 1:
        raise ShapeError(f"{name}: axis must be given for a {x.ndim}-d tensor")
    return shapes.axis(name, 0 if axis is None else axis, x.ndim)


def _cumulative_sum_meta(x, *, axis=None, include_initial=False):
    a = _scan_axis("cumulative_sum", x, axis)
    shape = list(x.shape)
    shape[a] += bool(include_initial)
    return tuple(shape), _sum_rule(x.dtype)


def _cumulative_sum_ref(x, *, axis=None, include_initial=False):
    a = 0 if axis is None else axis
    out = np.cumsum(x, axis=a, dtype=_sum_rule(x.dtype))
    if include_initial:
        width = [(0, 0)] * x.ndim
        width[a] = (1, 0)
        out = np.pad(out, width)
    return out


def _sort_meta(name, rule):
    def meta(x, *, axis=-1, descending=False, stable=True):
        _scan_axis(name, x, axis)
        return tuple(x.shape), rule(x.dtype)

    return meta


def _argsort_ref(x, *, axis=-1, descending=False, stable=True):
    if not descending:
        return np.argsort(x, axis=axis, kind="stable")
    # stable descending: sort the reversed axis ascending, then map positions back
    flipped = np.flip(np.argsort(np.flip(x, axis), axis=axis, kind="stable"), axis)
    return x.shape[axis] - 1 - flipped


def _sort_ref(x, *, axis=-1, descending=False, stable=True):
    out = np.sort(x, axis=axis, kind="stable")
    return np.flip(out, axis) if descending else out


def _take_meta(x, indices, *, axis=None):
    check_dtype("take", indices.dtype, dt.INTEGERS, "indices")
    if axis is None:
        return tuple(indices.shape), x.dtype
    a = shapes.axis("take", axis, x.ndim)
    return (*x.shape[:a], *indices.shape, *x.shape[a + 1:]), x.dtype


def _take_domain(x, indices, *, axis=None):
    n = x.size if axis is None else x.shape[axis]
    idx = np.asarray(indices)
    if idx.size and not (-n <= idx.min() and idx.max() < n):
        bad = idx.min() if idx.min() < -n else idx.max()
        raise DomainError(f"take: index {bad} is out of range for an axis of size {n} "
                          f"(valid: {-n}..{n - 1})")


def _clip_meta(x, lo=None, hi=None):
    bounds = [b for b in (lo, hi) if b is not None]
    for b in bounds:
        check_dtype("clip", b.dtype, (x.dtype,), "bound (x's dtype)")
    return shapes.broadcast("clip", x.shape, *(b.shape for b in bounds)), x.dtype


def _clip_ref(x, lo=None, hi=None):
    out = x if lo is None else np.maximum(x, lo)
    return out if hi is None else np.minimum(out, hi)


for _name, _fn in (("isnan", np.isnan), ("isinf", np.isinf), ("isfinite", np.isfinite)):
    declare(_name, COMPOSITE, "unary", dt.NUMERIC, _fn, _unary_meta(_to_bool),
            differentiable=False)
for _name, _fn in (("all", np.all), ("any", np.any)):
    declare(_name, COMPOSITE, "reduction", dt.ALL, _fn, _bool_reduce_meta(_name),
            differentiable=False)
for _name, _fn in (("argmax", np.argmax), ("argmin", np.argmin)):
    declare(_name, COMPOSITE, "search", dt.BOOL + _ORDERED, _fn, _arg_reduce_meta(_name),
            differentiable=False)
declare("cumulative_sum", EXTENDED, "scan", dt.BOOL + _NONBOOL, _cumulative_sum_ref,
        _cumulative_sum_meta, bound=lambda x, **p: _cumulative_sum_ref(np.abs(x), **p),
        differentiable=False)
declare("sort", EXTENDED, "sort", dt.BOOL + _ORDERED, _sort_ref, _sort_meta("sort", _same),
        differentiable=False)
declare("argsort", EXTENDED, "sort", dt.BOOL + _ORDERED, _argsort_ref,
        _sort_meta("argsort", lambda d: dt.int64), differentiable=False)
declare("take", EXTENDED, "take", dt.ALL, lambda x, i, *, axis=None: np.take(x, i, axis),
        _take_meta, promote=(), domain=_take_domain)
for _name, _fn in (("floor_divide", np.floor_divide), ("remainder", np.remainder)):
    declare(_name, EXTENDED, "binary", _ORDERED, _fn, _binary_meta(_name, _same),
            promote=(0, 1), differentiable=False)
declare("clip", COMPOSITE, "clip", _ORDERED, _clip_ref, _clip_meta, promote=(),
        differentiable=False)


# -- collectives (hal/collectives.py: groups, conjugate pairs) ---------------------------------
def _group_of(group):
    from . import collectives

    return collectives.group(group)


def _chunked(op, group, x, axis):
    """(shape with axis divided over the group's ranks, axis); ShapeError when uneven."""
    from . import collectives

    a = shapes.axis(op, axis, x.ndim)
    shape = list(x.shape)
    shape[a] = collectives.chunk(op, group, shape[a], a)
    return shape, a


def _whole_meta(x, *, group):
    _group_of(group)
    return tuple(x.shape), x.dtype


def _all_gather_meta(x, *, group, axis=0):
    a = shapes.axis("all_gather", axis, x.ndim)
    shape = list(x.shape)
    shape[a] *= _group_of(group).size
    return tuple(shape), x.dtype


def _chunk_meta(op):
    def meta(x, *, group, axis=0):
        return tuple(_chunked(op, group, x, axis)[0]), x.dtype

    return meta


def _all_to_all_meta(x, *, group, split_axis, concat_axis):
    shape, _ = _chunked("all_to_all", group, x, split_axis)
    shape[shapes.axis("all_to_all", concat_axis, x.ndim)] *= _group_of(group).size
    return tuple(shape), x.dtype


def _on_group(method):
    def reference(x, *, group, **axes):
        return getattr(_group_of(group), method)(x, **axes)

    return reference


def _split_ref(x, *, group, axis=0):
    shape, a = _chunked("split_to_group", group, x, axis)
    n, rank = shape[a], _group_of(group).rank
    return np.take(x, np.arange(rank * n, (rank + 1) * n), axis=a)


for _name, _ref, _meta, _dtypes in (
        ("all_reduce", _on_group("all_reduce"), _whole_meta, dt.NUMERIC),
        ("all_gather", _on_group("all_gather"), _all_gather_meta, dt.ALL),
        ("reduce_scatter", _on_group("reduce_scatter"), _chunk_meta("reduce_scatter"),
         dt.NUMERIC),
        ("all_to_all", _on_group("all_to_all"), _all_to_all_meta, dt.ALL),
        ("copy_to_group", lambda x, *, group: x, _whole_meta, dt.ALL),
        ("split_to_group", _split_ref, _chunk_meta("split_to_group"), dt.ALL)):
    declare(_name, EXTENDED, "collective", _dtypes, _ref, _meta, promote=())
