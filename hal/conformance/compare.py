"""Comparing a backend's result with the reference: dtype, shape, NaN/inf positions, tolerance;
and element by element, byte for byte."""

from __future__ import annotations

import numpy as np

from ..runtime import dtypes as dt


def mismatch(actual: np.ndarray, expected: np.ndarray, tolerance: tuple[float, float],
             bound: np.ndarray | None = None) -> str:
    """'' when actual matches expected, else what differs (first offending element).

    Floats match when NaN and inf sit at the same places and the finite values satisfy
    |actual - expected| <= atol + rtol * scale, scale being |expected| or, for ops that
    accumulate (sum, matmul, FFT), the magnitude `bound` of the terms they add up.
    """
    if actual.dtype != expected.dtype:
        return f"dtype {actual.dtype.name}, expected {expected.dtype.name}"
    if actual.shape != expected.shape:
        return f"shape {actual.shape}, expected {expected.shape}"
    if not (dt.is_floating(expected.dtype) or dt.is_complex(expected.dtype)):
        bad = actual != expected
        if bad.any():
            i = tuple(int(k) for k in np.argwhere(bad)[0])
            return f"at {i}: {actual[i]!r}, expected {expected[i]!r} (exact dtype)"
        return ""
    a = actual.astype(np.complex128 if dt.is_complex(expected.dtype) else np.float64)
    e = expected.astype(a.dtype)
    for part in ((np.real, np.imag) if dt.is_complex(expected.dtype) else (lambda x: x,)):
        problem = _compare_real(part(a), part(e), tolerance, bound)
        if problem:
            return problem
    return ""


def _compare_real(a, e, tolerance, bound) -> str:
    rtol, atol = tolerance
    nan_a, nan_e = np.isnan(a), np.isnan(e)
    if (nan_a != nan_e).any():
        i = tuple(int(k) for k in np.argwhere(nan_a != nan_e)[0])
        return f"at {i}: {a[i]!r}, expected {e[i]!r} (NaN placement)"
    inf_e = np.isinf(e)
    if (np.isinf(a) != inf_e).any() or (a[inf_e] != e[inf_e]).any():
        i = tuple(int(k) for k in np.argwhere((np.isinf(a) != inf_e) | (inf_e & (a != e)))[0])
        return f"at {i}: {a[i]!r}, expected {e[i]!r} (inf placement)"
    finite = ~(nan_e | inf_e)
    scale = np.abs(e) if bound is None else np.broadcast_to(np.abs(np.asarray(
        bound, dtype=np.float64)), e.shape)
    with np.errstate(invalid="ignore"):
        err = np.where(finite, np.abs(a - e), 0.0)
        limit = atol + rtol * np.where(finite, scale, 0.0)
    bad = err > limit
    if bad.any():
        i = tuple(int(k) for k in np.argwhere(bad)[0])
        return (f"at {i}: {a[i]!r}, expected {e[i]!r}; error {err[i]:.3g} > {limit[i]:.3g} "
                f"(rtol {rtol:g}, atol {atol:g})")
    return ""


def element_bytes(a: np.ndarray) -> np.ndarray:
    """The bytes of each element, one row per element (NaN payloads and -0.0 compare too)."""
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8).reshape(a.size, a.dtype.itemsize)
