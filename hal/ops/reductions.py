"""Reductions: sum, max, min (primitives); prod (extended); mean, var, all, any, argmax,
argmin (composites)."""

from __future__ import annotations

import warnings

import numpy as np

from ..runtime import dtypes as dt
from ..runtime.errors import ShapeError
from . import arguments, shapes
from .spec import (
    COMPOSITE,
    EXTENDED,
    LOOSE,
    ORDERED,
    PRIMITIVE,
    declare,
    reduce_meta,
    same,
    sum_rule,
    to_bool,
)


def _sum_bound(x, *, axis=None, keepdims=False):
    return np.sum(np.abs(x), axis=axis, keepdims=keepdims)


declare(
    "sum", PRIMITIVE, "reduction", dt.BOOL + dt.NUMERIC,
    lambda x, *, axis=None, keepdims=False: np.sum(
        x, axis=axis, keepdims=keepdims, dtype=sum_rule(x.dtype)),
    reduce_meta("sum", sum_rule, empty_ok=True), bound=_sum_bound,
)
for _name, _fn in (("max", np.max), ("min", np.min)):
    declare(
        _name, PRIMITIVE, "reduction", dt.BOOL + ORDERED,
        lambda x, *, axis=None, keepdims=False, _fn=_fn: _fn(x, axis=axis, keepdims=keepdims),
        reduce_meta(_name, same, empty_ok=False),
    )

declare(
    "prod", EXTENDED, "reduction", dt.BOOL + dt.NUMERIC,
    lambda x, *, axis=None, keepdims=False: np.prod(
        x, axis=axis, keepdims=keepdims, dtype=sum_rule(x.dtype)),
    reduce_meta("prod", sum_rule, empty_ok=True), tolerance=LOOSE, differentiable=False,
)

# -- composites (decompositions in hal/nn.py and hal/functions.py) ---------------------
_mean_meta = reduce_meta("mean", same, empty_ok=True)  # an empty axis gives NaN, as numpy


def _var_meta(x, *, axis=None, keepdims=False, correction=0):
    if isinstance(correction, bool) or not isinstance(correction, (int, float)) \
            or not correction >= 0:
        raise ShapeError(f"var: correction must be a number >= 0, got {correction!r}")
    return reduce_meta("var", same, empty_ok=True)(x, axis=axis, keepdims=keepdims)


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


def _bool_reduce_meta(name):
    return reduce_meta(name, to_bool, empty_ok=True)


def _arg_reduce_meta(name):
    def meta(x, *, axis=None, keepdims=False):
        if axis is not None:
            shapes.axis(name, axis, x.ndim)
        if x.size == 0:
            raise ShapeError(f"{name}: an empty tensor of shape {tuple(x.shape)} has no "
                             "extreme element")
        red = shapes.axes(name, axis, x.ndim)
        keep = arguments.flag(name, "keepdims", keepdims)
        return shapes.reduced(tuple(x.shape), red, keep), dt.int64

    return meta


declare("mean", COMPOSITE, "reduction", dt.FLOATS, _mean_ref, _mean_meta, tolerance=LOOSE)
declare("var", COMPOSITE, "reduction", dt.REALS, _var_ref, _var_meta, tolerance=LOOSE)
for _name, _fn in (("all", np.all), ("any", np.any)):
    declare(_name, COMPOSITE, "reduction", dt.ALL, _fn, _bool_reduce_meta(_name),
            differentiable=False)
for _name, _fn in (("argmax", np.argmax), ("argmin", np.argmin)):
    declare(_name, COMPOSITE, "search", dt.BOOL + ORDERED, _fn, _arg_reduce_meta(_name),
            differentiable=False)
