"""The dtypes of the op set and their promotion rules (Python Array API, plus bfloat16).

Dtypes are numpy dtype objects; bfloat16 comes from ml_dtypes when it is installed.
Promotion follows the Array API tables inside a kind (bool < integer < real < complex);
across kinds the result takes the higher kind at the precision that holds both, as JAX
does. Python scalars are weak: they take the tensor's dtype when their kind fits.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import UnsupportedDType

try:
    import ml_dtypes

    bfloat16 = np.dtype(ml_dtypes.bfloat16)
except ImportError:  # bfloat16 is optional: the core needs numpy only
    bfloat16 = None

bool_ = np.dtype(np.bool_)
int8 = np.dtype(np.int8)
uint8 = np.dtype(np.uint8)
int32 = np.dtype(np.int32)
int64 = np.dtype(np.int64)
float16 = np.dtype(np.float16)
float32 = np.dtype(np.float32)
float64 = np.dtype(np.float64)
complex64 = np.dtype(np.complex64)
complex128 = np.dtype(np.complex128)

BOOL = (bool_,)
INTEGERS = (int8, uint8, int32, int64)
REALS = tuple(d for d in (float16, bfloat16, float32, float64) if d is not None)
COMPLEX = (complex64, complex128)
FLOATS = REALS + COMPLEX
NUMERIC = INTEGERS + FLOATS
ALL = BOOL + NUMERIC

_BY_NAME = {d.name: d for d in ALL}
_BY_NAME["bool"] = bool_

# Rank inside each kind; a pair that no dtype of the set holds goes to the next one up.
_KIND = {bool_: 0, **{d: 1 for d in INTEGERS}, **{d: 2 for d in REALS}, **{d: 3 for d in COMPLEX}}
_INT_ORDER = (int8, int32, int64)
_REAL_BITS = {float16: 16, float32: 32, float64: 64}
if bfloat16 is not None:
    _REAL_BITS[bfloat16] = 16
_COMPLEX_OF = {16: complex64, 32: complex64, 64: complex128}
_REAL_OF_BITS = {16: float16, 32: float32, 64: float64}


def dtype(x) -> np.dtype:
    """The hal dtype for a name, numpy dtype or type; UnsupportedDType if it is not in the set."""
    if isinstance(x, np.dtype) and x in _KIND:
        return x
    if isinstance(x, str) and x in _BY_NAME:
        return _BY_NAME[x]
    try:
        d = np.dtype(x)
    except TypeError:
        d = None
    if d is None or d not in _KIND:
        raise UnsupportedDType(
            f"dtype {x!r} is not in hal's dtype set; use one of {', '.join(names(ALL))}"
        )
    return d


def names(dtypes) -> list[str]:
    """Names of a sequence of dtypes, in order."""
    return [d.name for d in dtypes]


def is_bool(d: np.dtype) -> bool:
    """True for bool."""
    return _KIND[d] == 0


def is_integer(d: np.dtype) -> bool:
    """True for the integer dtypes (not bool)."""
    return _KIND[d] == 1


def is_floating(d: np.dtype) -> bool:
    """True for the real floating dtypes (float16, bfloat16, float32, float64)."""
    return _KIND[d] == 2


def is_complex(d: np.dtype) -> bool:
    """True for complex64 and complex128."""
    return _KIND[d] == 3


def real_dtype(d: np.dtype) -> np.dtype:
    """The real dtype of a complex dtype's parts (float32 for complex64); others unchanged."""
    if d == complex64:
        return float32
    if d == complex128:
        return float64
    return d


def complex_dtype(d: np.dtype) -> np.dtype:
    """The complex dtype whose parts hold a real dtype (complex64 for float16/bfloat16/float32)."""
    return complex128 if d in (float64, complex128) else complex64


def _promote_ints(a: np.dtype, b: np.dtype) -> np.dtype:
    if a == b:
        return a
    if uint8 in (a, b):
        other = b if a == uint8 else a
        # uint8 with int8 needs int16, which the set lacks: int32 holds both.
        return int32 if other == int8 else other
    return max(a, b, key=_INT_ORDER.index)


def _promote_reals(a: np.dtype, b: np.dtype) -> np.dtype:
    if a == b:
        return a
    bits = max(_REAL_BITS[a], _REAL_BITS[b])
    # float16 with bfloat16: neither holds the other, float32 holds both.
    return float32 if bits == 16 else _REAL_OF_BITS[bits]


def promote(a: np.dtype, b: np.dtype) -> np.dtype:
    """The common dtype of two tensor dtypes."""
    ka, kb = _KIND[a], _KIND[b]
    if ka != kb:
        (lo, klo), (hi, khi) = sorted(((a, ka), (b, kb)), key=lambda p: p[1])
        if khi == 3 and klo == 2:
            return complex128 if _REAL_BITS[lo] == 64 or hi == complex128 else complex64
        return hi
    if ka == 0:
        return a
    if ka == 1:
        return _promote_ints(a, b)
    if ka == 2:
        return _promote_reals(a, b)
    return complex128 if complex128 in (a, b) else complex64


def scalar_kind(value) -> int:
    """The kind rank of a Python scalar: 0 bool, 1 int, 2 float, 3 complex."""
    if isinstance(value, (bool, np.bool_)):
        return 0
    if isinstance(value, (int, np.integer)):
        return 1
    if isinstance(value, (float, np.floating)):
        return 2
    if isinstance(value, (complex, np.complexfloating)):
        return 3
    raise UnsupportedDType(f"{type(value).__name__} {value!r} is not a tensor or a number")


def promote_scalar(d: np.dtype, value) -> np.dtype:
    """The dtype of `tensor(d) op scalar`: the tensor's dtype unless the scalar's kind is higher."""
    k = scalar_kind(value)
    kd = _KIND[d]
    if k <= kd:
        return d
    if k == 1:
        return int64
    if k == 2:
        return float64 if kd < 2 else d
    return complex_dtype(d) if kd == 2 else complex128


def default_dtype(value) -> np.dtype:
    """The dtype a lone Python scalar becomes: bool, int64, float64 or complex128."""
    return (bool_, int64, float64, complex128)[scalar_kind(value)]


def result_type(*args) -> np.dtype:
    """The common dtype of dtypes, tensors (their dtypes) and weak Python scalars."""
    args = [dtype(a.dtype) if isinstance(getattr(a, "dtype", None), np.dtype) else a
            for a in args]
    dtypes = [dtype(a) if isinstance(a, (np.dtype, str, type)) else a for a in args]
    scalars = [a for a in dtypes if not isinstance(a, np.dtype)]
    dtypes = [a for a in dtypes if isinstance(a, np.dtype)]
    if not dtypes:
        out = default_dtype(scalars[0])
        for s in scalars[1:]:
            out = promote(out, default_dtype(s))
        return out
    out = dtypes[0]
    for d in dtypes[1:]:
        out = promote(out, d)
    for s in scalars:
        out = promote_scalar(out, s)
    return out



def can_cast(from_, to, /) -> bool:
    """True when the Array API's type promotion takes from_ (a dtype or a tensor's) to `to`:
    within one kind (bool, integer, floating, real to complex) and result_type(from_, to)
    is `to`. Across kinds (an integer to a float) the standard defines no promotion: False."""
    source = from_.dtype if isinstance(getattr(from_, "dtype", None), np.dtype) else from_
    source, target = dtype(source), dtype(to)
    ks, kt = _KIND[source], _KIND[target]
    if ks != kt and not (ks == 2 and kt == 3):
        return False
    return promote(source, target) == target

# -- Array API inspection: finfo, iinfo, isdtype ---------------------------------------------
@dataclass(frozen=True)
class FInfo:
    """Machine limits of a floating dtype (complex: of its parts), as Python numbers."""

    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: np.dtype


@dataclass(frozen=True)
class IInfo:
    """Machine limits of an integer dtype, as Python ints."""

    bits: int
    max: int
    min: int
    dtype: np.dtype


def _of(x) -> np.dtype:
    return dtype(x.dtype if isinstance(getattr(x, "dtype", None), np.dtype) else x)


def machine_limits(d: np.dtype):
    """numpy's finfo object of a real floating dtype, bfloat16 included.

    np.finfo refuses bfloat16 from numpy 2.5 (ml_dtypes' types are not numpy builtins);
    ml_dtypes.finfo answers for its own types and defers to np.finfo for the rest.
    """
    return ml_dtypes.finfo(d) if d == bfloat16 else np.finfo(d)


def finfo(x, /) -> FInfo:
    """Limits of a floating dtype, or of a tensor's; UnsupportedDType for other dtypes."""
    d = real_dtype(_of(x))
    if not is_floating(d):
        raise UnsupportedDType(f"finfo: {d.name} is not a floating dtype; use hal.iinfo")
    info = machine_limits(d)
    return FInfo(int(info.bits), float(info.eps), float(info.max), float(info.min),
                 float(info.smallest_normal), d)


def iinfo(x, /) -> IInfo:
    """Limits of an integer dtype, or of a tensor's; UnsupportedDType for other dtypes."""
    d = _of(x)
    if not is_integer(d):
        raise UnsupportedDType(f"iinfo: {d.name} is not an integer dtype; use hal.finfo")
    info = np.iinfo(d)
    return IInfo(int(info.bits), int(info.max), int(info.min), d)


_KINDS = {
    "bool": BOOL,
    "signed integer": tuple(d for d in INTEGERS if d.kind == "i"),
    "unsigned integer": tuple(d for d in INTEGERS if d.kind == "u"),
    "integral": INTEGERS,
    "real floating": REALS,
    "complex floating": COMPLEX,
    "numeric": NUMERIC,
}


def isdtype(dtype, kind) -> bool:
    """True when dtype is of kind: a dtype, an Array API kind name, or a tuple of them."""
    if isinstance(kind, tuple):
        return any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, str):
        if kind not in _KINDS:
            raise UnsupportedDType(f"isdtype: kind {kind!r} is not one of {', '.join(_KINDS)}")
        return _dtype(dtype) in _KINDS[kind]
    return _dtype(dtype) == _dtype(kind)


_dtype = dtype  # isdtype's parameter takes the name (the Array API signature)

