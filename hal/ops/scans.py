"""Ops along one axis: cumulative_sum, sort and argsort (extended; not differentiable: sort
would need a gather by argsort indices that the op set lacks)."""

from __future__ import annotations

import numpy as np

from ..runtime import dtypes as dt
from ..runtime.errors import ShapeError
from . import arguments, shapes
from .spec import EXTENDED, NONBOOL, ORDERED, declare, same, sum_rule


def _scan_axis(name, x, axis):
    if x.ndim == 0:
        raise ShapeError(f"{name}: needs at least a 1-d tensor, got a 0-d one")
    if axis is None and x.ndim > 1:
        raise ShapeError(f"{name}: axis must be given for a {x.ndim}-d tensor")
    return shapes.axis(name, 0 if axis is None else axis, x.ndim)


def _cumulative_sum_meta(x, *, axis=None, include_initial=False):
    a = _scan_axis("cumulative_sum", x, axis)
    shape = list(x.shape)
    shape[a] += arguments.flag("cumulative_sum", "include_initial", include_initial)
    return tuple(shape), sum_rule(x.dtype)


def _cumulative_sum_ref(x, *, axis=None, include_initial=False):
    a = 0 if axis is None else axis
    out = np.cumsum(x, axis=a, dtype=sum_rule(x.dtype))
    if include_initial:
        width = [(0, 0)] * x.ndim
        width[a] = (1, 0)
        out = np.pad(out, width)
    return out


def _sort_meta(name, rule):
    def meta(x, *, axis=-1, descending=False, stable=True):
        _scan_axis(name, x, axis)
        arguments.flag(name, "descending", descending)
        arguments.flag(name, "stable", stable)
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


declare("cumulative_sum", EXTENDED, "scan", dt.BOOL + NONBOOL, _cumulative_sum_ref,
        _cumulative_sum_meta, bound=lambda x, **p: _cumulative_sum_ref(np.abs(x), **p),
        differentiable=False)
declare("sort", EXTENDED, "sort", dt.BOOL + ORDERED, _sort_ref, _sort_meta("sort", same),
        differentiable=False)
declare("argsort", EXTENDED, "sort", dt.BOOL + ORDERED, _argsort_ref,
        _sort_meta("argsort", lambda d: dt.int64), differentiable=False)
