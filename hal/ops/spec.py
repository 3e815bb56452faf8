"""The op set's vocabulary: OpSpec, the registry of declarations, dtype rules, tolerances.

An op is declared once (`declare`, used by the family modules of this package): name,
kind, family, accepted dtypes, output rule (`meta`), numpy reference and per-dtype
tolerances. Tiers: *primitive* ops every backend provides; *extended* ops (complex
parts, FFT, int8, sort, scan, take, dynamic_update_slice) a backend may lack;
*composite* ops with a default decomposition into other ops (in `hal/nn.py`,
`hal/fft.py`, `hal/functions.py`) that a backend may replace with a fused kernel.

A reference computes float16/bfloat16 in float32 and rounds the result (`lift`, the one
half-precision lift), so it is the correctly rounded answer a careful kernel gives, not
numpy's half-precision quirks.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from ..runtime import dtypes as dt
from ..runtime.errors import ShapeError, UnsupportedDType, UnsupportedOp
from . import arguments, shapes

PRIMITIVE, EXTENDED, COMPOSITE = "primitive", "extended", "composite"

# (rtol, atol) per dtype; accumulating ops scale atol by the magnitude of their terms.
TOL = {
    dt.float16: (2e-3, 1e-4),
    dt.float32: (2e-6, 1e-7),
    dt.float64: (1e-12, 1e-15),
    dt.complex64: (2e-6, 1e-7),
    dt.complex128: (1e-12, 1e-15),
}
if dt.bfloat16 is not None:
    TOL[dt.bfloat16] = (1.6e-2, 1e-3)
LOOSE = {d: (r * 8, a * 8) for d, (r, a) in TOL.items()}  # transcendental / fused ops


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
    tolerance: Mapping[np.dtype, tuple[float, float]] = field(default_factory=lambda: TOL)
    bound: Callable | None = None  # (*arrays, **params) -> magnitude scale of the error
    # (*operands, **params) -> None, raising DomainError for values outside the op's domain;
    # it reads values (operands with __array__), so only an interpreter holding them runs it
    domain: Callable | None = None
    differentiable: bool = True
    # the operand whose buffer a kernel may write the result into when the graph owns that
    # buffer (a donated input read by no other node): the op then updates it in place
    inplace: int | None = None
    doc: str = ""

    def evaluate(self, *arrays, **params):
        """The reference result: half precision computed in float32, cast to the output dtype."""
        _, out_dtype = self.meta(*arrays, **params)
        if self.domain is not None:
            self.domain(*arrays, **params)
        lifted = [lift(a) for a in arrays]
        with np.errstate(all="ignore"):
            result = self.reference(*lifted, **params)
        return np.asarray(result).astype(out_dtype, copy=False)

    def tolerance_for(self, dtype: np.dtype) -> tuple[float, float]:
        """(rtol, atol) for results of this dtype; exact for bool and integers."""
        return self.tolerance.get(dtype, (0.0, 0.0))


HALF = tuple(d for d in (dt.float16, dt.bfloat16) if d is not None)


def lift(a):
    """A float16/bfloat16 array as float32 (the half-precision lift); anything else as it is
    (any array type with .dtype and .astype: numpy, cupy)."""
    return a.astype(dt.float32) if getattr(a, "dtype", None) in HALF else a


def in_float32(fn: Callable) -> Callable:
    """fn computing float16/bfloat16 operands in float32 and rounding a float32 result once
    to their dtype, as the references compute them: how a kernel computes half precision
    where its library would round after every step. An `out_dtype` parameter of half
    precision is float32 inside."""

    @functools.wraps(fn)
    def lifted(*args, **params):
        half = next((a.dtype for a in args if getattr(a, "dtype", None) in HALF), None)
        if half is None:
            return fn(*args, **params)
        if params.get("out_dtype") in HALF:
            params = {**params, "out_dtype": dt.float32}
        out = fn(*[lift(a) for a in args], **params)
        return out.astype(half) if out.dtype == dt.float32 else out  # comparisons stay bool

    return lifted


_SPECS: dict[str, OpSpec] = {}


def declare(name, kind, family, dtypes, reference, meta, **options) -> OpSpec:
    """Add an op to the set (used by the family modules of hal/ops, and by nothing else)."""
    spec_ = OpSpec(name, kind, family, tuple(dtypes), reference, meta, **options)
    _SPECS[name] = spec_
    return spec_


def spec(name: str) -> OpSpec:
    """The declaration of an op; UnsupportedOp listing close names if there is none."""
    try:
        return _SPECS[name]
    except KeyError:
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


def same(d):
    """The operand's dtype."""
    return d


def to_bool(d):
    """bool, whatever the operand's dtype."""
    return dt.bool_


def to_real(d):
    """The real dtype of a complex one (a real dtype itself)."""
    return dt.real_dtype(d)


# -- output rules shared by the families ---------------------------------------------------
NONBOOL = dt.NUMERIC
ORDERED = dt.INTEGERS + dt.REALS


def unary_meta(rule):
    """The meta of a one-operand elementwise op: the operand's shape, rule(its dtype)."""
    def meta(x):
        return tuple(x.shape), rule(x.dtype)

    return meta


def binary_meta(name, rule):
    """The meta of a two-operand elementwise op: the broadcast shape, rule(first dtype)."""
    def meta(a, b):
        shape = a.shape if a.shape == b.shape else shapes.broadcast(name, a.shape, b.shape)
        return tuple(shape), rule(a.dtype)

    return meta


def reduce_meta(name, rule, *, empty_ok):
    """The meta of a reduction over `axis` (keepdims): empty axes refused unless empty_ok."""
    def meta(x, *, axis=None, keepdims=False):
        red = shapes.axes(name, axis, x.ndim)
        if not empty_ok and any(x.shape[a] == 0 for a in red):
            raise ShapeError(
                f"{name}: reduction over an empty axis of shape {x.shape} has no identity"
            )
        keep = arguments.flag(name, "keepdims", keepdims)
        return shapes.reduced(tuple(x.shape), red, keep), rule(x.dtype)

    return meta


def sum_rule(d):
    """Integers and bool sum to int64; other dtypes keep theirs."""
    return dt.int64 if dt.is_integer(d) or dt.is_bool(d) else d
