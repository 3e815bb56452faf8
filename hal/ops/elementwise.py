"""Elementwise ops: unary and binary arithmetic, comparisons, where, casts, complex parts,
the Array API predicates (isnan, isinf, isfinite), floor division and remainder, clip.

Each maps operand elements to result elements one to one, operands broadcasting.
"""

from __future__ import annotations

import numpy as np

from ..runtime import dtypes as dt
from ..runtime.errors import DomainError, UnsupportedDType
from . import shapes
from .spec import (
    COMPOSITE,
    EXTENDED,
    LOOSE,
    NONBOOL,
    ORDERED,
    PRIMITIVE,
    TOL,
    binary_meta,
    check_dtype,
    declare,
    same,
    to_bool,
    to_real,
    unary_meta,
)


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


_UNARY = {
    "negative": (np.negative, NONBOOL, same, TOL),
    "abs": (np.abs, NONBOOL, to_real, TOL),
    "exp": (np.exp, dt.FLOATS, same, LOOSE),
    "log": (np.log, dt.FLOATS, same, LOOSE),
    "sqrt": (np.sqrt, dt.FLOATS, same, TOL),
    "sin": (np.sin, dt.FLOATS, same, LOOSE),
    "cos": (np.cos, dt.FLOATS, same, LOOSE),
    "tanh": (np.tanh, dt.FLOATS, same, LOOSE),
}
for _name, (_fn, _dtypes, _rule, _tol) in _UNARY.items():
    declare(_name, PRIMITIVE, "unary", _dtypes, _fn, unary_meta(_rule), tolerance=_tol)


def erf_reference(x):
    from math import erf

    return np.asarray(np.frompyfunc(erf, 1, 1)(x.astype(np.float64)), dtype=np.float64)


declare("erf", PRIMITIVE, "unary", dt.REALS, erf_reference, unary_meta(same), tolerance=LOOSE)

_BINARY = {
    "add": (np.add, NONBOOL, same, TOL),
    "subtract": (np.subtract, NONBOOL, same, TOL),
    "multiply": (np.multiply, NONBOOL, same, TOL),
    "divide": (np.divide, dt.FLOATS, same, TOL),
    "power": (np.power, NONBOOL, same, LOOSE),
    "maximum": (np.maximum, ORDERED, same, TOL),
    "minimum": (np.minimum, ORDERED, same, TOL),
    "equal": (np.equal, dt.ALL, to_bool, TOL),
    "less": (np.less, ORDERED, to_bool, TOL),
    "greater": (np.greater, ORDERED, to_bool, TOL),
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
        _name, PRIMITIVE, "binary", _dtypes, _fn, binary_meta(_name, _rule), promote=(0, 1),
        tolerance=_tol, differentiable=_rule is same,
        domain=_power_domain if _name == "power" else None,
        bound=_power_bound if _name == "power" else None,
    )

declare("where", PRIMITIVE, "where", dt.ALL, np.where, _where_meta, promote=(1, 2), key=1)
declare(
    "astype", PRIMITIVE, "cast", dt.ALL, lambda x, *, dtype: x.astype(dt.dtype(dtype)),
    _astype_meta,
)


# -- complex parts ------------------------------------------------------------------
def _complex_meta(re, im):
    check_dtype("complex", im.dtype, (re.dtype,), "imaginary part")
    return shapes.broadcast("complex", re.shape, im.shape), dt.complex_dtype(re.dtype)


declare("real", EXTENDED, "complex", dt.COMPLEX, np.real, unary_meta(to_real))
declare("imag", EXTENDED, "complex", dt.COMPLEX, np.imag, unary_meta(to_real))
declare("conj", EXTENDED, "complex", dt.COMPLEX, np.conj, unary_meta(same))
declare(
    "complex", EXTENDED, "complex", (dt.float32, dt.float64),
    lambda re, im: re + 1j * im, _complex_meta, promote=(0, 1),
)


# -- Array API additions: predicates, integer division, clip (not differentiable) ------
def _clip_meta(x, lo=None, hi=None):
    bounds = [b for b in (lo, hi) if b is not None]
    for b in bounds:
        check_dtype("clip", b.dtype, (x.dtype,), "bound (x's dtype)")
    return shapes.broadcast("clip", x.shape, *(b.shape for b in bounds)), x.dtype


def _clip_ref(x, lo=None, hi=None):
    out = x if lo is None else np.maximum(x, lo)
    return out if hi is None else np.minimum(out, hi)


for _name, _fn in (("isnan", np.isnan), ("isinf", np.isinf), ("isfinite", np.isfinite)):
    declare(_name, COMPOSITE, "unary", dt.NUMERIC, _fn, unary_meta(to_bool),
            differentiable=False)
for _name, _fn in (("floor_divide", np.floor_divide), ("remainder", np.remainder)):
    declare(_name, EXTENDED, "binary", ORDERED, _fn, binary_meta(_name, same),
            promote=(0, 1), differentiable=False)
declare("clip", COMPOSITE, "clip", ORDERED, _clip_ref, _clip_meta, promote=(),
        differentiable=False)


# -- the rest of the Array API 2023.12's elementwise functions (extended: a backend with no
# kernel falls back to the CPU, counted) ----------------------------------------------------
def _expm1(z):
    """numpy's expm1 for reals; for complex z = x + iy (which numpy has no loop for)
    expm1(x) cos(y) - 2 sin(y/2)**2 + i exp(x) sin(y), accurate near 0, with C99's cexp
    special values less one (a zero imaginary part kept, -1 + 0j at x = -inf)."""
    if not np.iscomplexobj(z):
        return np.expm1(z)
    x, y = z.real, z.imag
    real = np.expm1(x) * np.cos(y) - 2 * np.sin(y / 2) ** 2 + 0.0  # + 0.0: no -0 real part
    imag = np.where(y == 0, y, np.exp(x) * np.sin(y))
    finite_y = np.isfinite(y)
    real = np.where(x == -np.inf, -1.0, np.where((x == np.inf) & ~finite_y, np.inf, real))
    imag = np.where((x == -np.inf) & ~finite_y, 0.0,
                    np.where((x == np.inf) & ~finite_y, np.nan, imag))
    out = np.empty(np.shape(z), dtype=z.dtype)  # parts set apart: 1j * nan spoils the real
    out.real, out.imag = real, imag
    return out


_REAL_FLOATS = dt.REALS
_MORE_UNARY = {
    **{name: (getattr(np, fn), dt.FLOATS, same, LOOSE) for name, fn in (
        ("asin", "arcsin"), ("acos", "arccos"), ("atan", "arctan"), ("tan", "tan"),
        ("sinh", "sinh"), ("cosh", "cosh"), ("asinh", "arcsinh"), ("acosh", "arccosh"),
        ("atanh", "arctanh"), ("log1p", "log1p"), ("log2", "log2"), ("log10", "log10"))},
    "expm1": (_expm1, dt.FLOATS, same, LOOSE),
    # rounding: integers are their own floor, ceil, trunc and round (half to even)
    **{name: (getattr(np, name), ORDERED, same, TOL) for name in ("floor", "ceil", "trunc")},
    "round": (np.round, NONBOOL, same, TOL),
    "sign": (np.sign, NONBOOL, same, TOL),
    "signbit": (np.signbit, _REAL_FLOATS, to_bool, TOL),
    "bitwise_invert": (np.invert, dt.INTEGERS, same, TOL),
}
_SMOOTH = frozenset(("asin", "acos", "atan", "tan", "sinh", "cosh", "asinh", "acosh", "atanh",
                     "expm1", "log1p", "log2", "log10", "hypot", "copysign", "logaddexp"))
"""The added ops with VJP and series rules (frontends/autograd); rounding, sign, signbit,
the bitwise and logical ops are piecewise constant, and atan2 has no rules yet."""
for _name, (_fn, _dtypes, _rule, _tol) in _MORE_UNARY.items():
    declare(_name, EXTENDED, "unary", _dtypes, _fn, unary_meta(_rule), tolerance=_tol,
            differentiable=_name in _SMOOTH)


def _shift_domain(a, b):
    """Negative shift counts are refused (numpy's shifts by them are undefined in C)."""
    if b.dtype.kind == "i" and np.min(np.asarray(b), initial=0) < 0:
        raise DomainError(
            f"bitwise shift: a negative shift count of dtype {b.dtype.name}; shift counts "
            "must be >= 0 (shift the other way instead)"
        )


_INTEGRAL = dt.BOOL + dt.INTEGERS
_MORE_BINARY = {
    "atan2": (np.arctan2, _REAL_FLOATS, same, LOOSE, None),
    "hypot": (np.hypot, _REAL_FLOATS, same, TOL, None),
    "copysign": (np.copysign, _REAL_FLOATS, same, TOL, None),
    "logaddexp": (np.logaddexp, _REAL_FLOATS, same, LOOSE, None),
    "bitwise_and": (np.bitwise_and, _INTEGRAL, same, TOL, None),
    "bitwise_or": (np.bitwise_or, _INTEGRAL, same, TOL, None),
    "bitwise_xor": (np.bitwise_xor, _INTEGRAL, same, TOL, None),
    "bitwise_left_shift": (np.left_shift, dt.INTEGERS, same, TOL, _shift_domain),
    "bitwise_right_shift": (np.right_shift, dt.INTEGERS, same, TOL, _shift_domain),
    "logical_and": (np.logical_and, dt.BOOL, same, TOL, None),
    "logical_or": (np.logical_or, dt.BOOL, same, TOL, None),
    "logical_xor": (np.logical_xor, dt.BOOL, same, TOL, None),
}
for _name, (_fn, _dtypes, _rule, _tol, _domain) in _MORE_BINARY.items():
    declare(_name, EXTENDED, "binary", _dtypes, _fn, binary_meta(_name, _rule), promote=(0, 1),
            tolerance=_tol, domain=_domain, differentiable=_name in _SMOOTH)
