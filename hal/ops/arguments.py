"""The plain Python arguments of creation, random and the op functions, checked in one place:
integers, real numbers, fill values, flags, seeds.

Each check returns the value as hal uses it, or raises an ArgumentError (a value of the
wrong kind) or DomainError (a value out of range) naming the op, the argument, the value
and what to give instead, so numpy and Python never see what they would refuse with an
error of their own, or wrap silently.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from ..runtime import dtypes as dt
from ..runtime.errors import ArgumentError, DomainError

_REALS = (bool, int, float, np.bool_, np.integer, np.floating)
_NUMBERS = (*_REALS, complex, np.complexfloating)


def _show(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def integer(op: str, name: str, value, *, minimum: int | None = None) -> int:
    """value as an int (anything with __index__), at least `minimum` when given."""
    try:
        n = operator.index(value)
    except TypeError:
        raise ArgumentError(f"{op}: {name} must be an integer, got {_show(value)} "
                            f"({type(value).__name__})") from None
    if minimum is not None and n < minimum:
        raise DomainError(f"{op}: {name} must be at least {minimum}, got {n}")
    return n


def real(op: str, name: str, value) -> int | float:
    """value as a finite real Python number (bool, int, float or a numpy real scalar)."""
    if not isinstance(value, _REALS):
        raise ArgumentError(f"{op}: {name} must be a real number, got {_show(value)} "
                            f"({type(value).__name__})")
    number = value.item() if isinstance(value, np.generic) else value
    if isinstance(number, float) and not math.isfinite(number):
        raise DomainError(f"{op}: {name} must be finite, got {number}")
    return number


def flag(op: str, name: str, value) -> bool:
    """value, a Python bool (not 1, 'yes' or numpy.True_, which kernels may take apart)."""
    if not isinstance(value, bool):
        raise ArgumentError(f"{op}: {name} must be True or False, got {_show(value)}")
    return value


def fill_value(op: str, value, d: np.dtype) -> np.ndarray:
    """A scalar as a 0-d array of dtype d; DomainError when it does not fit (2**70 in int64,
    NaN in an integer dtype, 1e300 in float32), ArgumentError for a complex value to a
    real dtype or anything that is not a number."""
    if not isinstance(value, _NUMBERS):
        raise ArgumentError(f"{op}: the fill value must be a bool, int, float or complex "
                            f"number, got {_show(value)} ({type(value).__name__})")
    if isinstance(value, (complex, np.complexfloating)) and not dt.is_complex(d):
        raise ArgumentError(f"{op}: the complex fill value {_show(value)} does not fit the "
                            f"real dtype {d.name}; give a complex dtype or a real value")
    fits = f"{op}: the fill value {_show(value)} does not fit {d.name}"
    try:
        with np.errstate(all="ignore"):
            out = np.asarray(value, dtype=d)
    except (OverflowError, ValueError):
        raise DomainError(f"{fits}{_range(d)}; give a value in range or a dtype that "
                          "holds it (dtype=hal.float64, say)") from None
    finite = not isinstance(value, (float, complex, np.inexact)) or np.isfinite(value)
    wide = out.astype(np.complex128 if dt.is_complex(d) else np.float64)
    if finite and not np.isfinite(wide):
        raise DomainError(f"{fits} (it overflows to {out}){_range(d)}; pass a wider dtype")
    return out


def within(op: str, name: str, value, d: np.dtype) -> None:
    """DomainError when a number lies outside an integer dtype's range (where numpy would
    wrap it around); nothing for other dtypes."""
    if dt.is_integer(d) and not np.iinfo(d).min <= value <= np.iinfo(d).max:
        raise DomainError(f"{op}: {name} {_show(value)} is outside {d.name}{_range(d)}; "
                          "pass a wider dtype")


def _range(d: np.dtype) -> str:
    if dt.is_integer(d):
        info = np.iinfo(d)
        return f" (its range is {info.min}..{info.max})"
    return ""


def generator(op: str, seed) -> np.random.Generator:
    """numpy's PCG64 generator for a seed (None: fresh entropy)."""
    try:
        return np.random.default_rng(seed)
    except (TypeError, ValueError) as e:
        raise ArgumentError(f"{op}: seed {_show(seed)} is not a seed ({e}); give None or a "
                            "non-negative integer") from None
