"""Reductions and the composites that normalise along an axis, as numba loops over rows.

The reduced axes are moved last and the input made a C-contiguous (rows, n) matrix; one
loop per dtype then runs over the rows in parallel (numba.prange), each row in one pass
(two for layer_norm's variance). Sums accumulate float32 in float64 (and complex64 in
complex128) and are rounded once; integers and bool sum to int64, wrapping as numpy does.
max and min propagate NaN. softmax and log_softmax subtract the row's maximum first.
"""

from __future__ import annotations

import functools
import math

import numba
import numpy as np

import hal

from . import compiled
from .elementwise import FLOATS, NUMBERS, ORDERED
from .table import register


def rows(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """x as a C-contiguous (rows, n) matrix whose rows run along `axes` (copied if needed)."""
    kept = [a for a in range(x.ndim) if a not in axes]
    shape = (math.prod(x.shape[a] for a in kept), math.prod(x.shape[a] for a in axes))
    return np.ascontiguousarray(np.transpose(x, kept + list(axes)).reshape(shape))


# -- loops: x (rows, n) -> out (rows,) or (rows, n) -------------------------------------------
def sum_rows(x, out):
    for r in numba.prange(x.shape[0]):
        total = 0  # numba widens it: int64, float64 or complex128
        for v in x[r]:
            total += v
        out[r] = total


def max_rows(x, out):
    for r in numba.prange(x.shape[0]):
        best = x[r, 0]
        for v in x[r]:
            if v > best or v != v:  # a NaN wins and stays: nothing is greater than NaN
                best = v
        out[r] = best


def min_rows(x, out):
    for r in numba.prange(x.shape[0]):
        best = x[r, 0]
        for v in x[r]:
            if v < best or v != v:
                best = v
        out[r] = best


def softmax_rows(x, out):
    for r in numba.prange(x.shape[0]):
        row, o = x[r], out[r]
        top = row.max()
        total = 0.0
        for i in range(row.size):
            o[i] = np.exp(row[i] - top)
            total += o[i]
        for i in range(row.size):
            o[i] = o[i] / total


def log_softmax_rows(x, out):
    for r in numba.prange(x.shape[0]):
        row, o = x[r], out[r]
        top = row.max()
        total = 0.0
        for v in row:
            total += np.exp(v - top)
        log_total = math.log(total)
        for i in range(row.size):
            o[i] = (row[i] - top) - log_total


def layer_norm_rows(x, weight, bias, eps, out):
    """weight and bias of length 0 stand for absent ones."""
    n = x.shape[1]
    for r in numba.prange(x.shape[0]):
        row, o = x[r], out[r]
        mean = 0.0
        for v in row:
            mean += v
        mean /= n
        var = 0.0
        for v in row:
            var += (v - mean) * (v - mean)
        scale = 1.0 / math.sqrt(var / n + eps)
        for i in range(n):
            y = (row[i] - mean) * scale
            if weight.size:
                y = y * weight[i]
            if bias.size:
                y = y + bias[i]
            o[i] = y


@functools.cache
def _reducer(fn, dtype: np.dtype, result: np.dtype, parallel: bool):
    return compiled.loop(fn, compiled.array(dtype, 2, readonly=True), compiled.array(result, 1),
                         parallel=parallel)


@functools.cache
def _normaliser(fn, dtype: np.dtype, parallel: bool):
    return compiled.loop(fn, compiled.array(dtype, 2, readonly=True), compiled.array(dtype, 2),
                         parallel=parallel)


@functools.cache
def _layer_norm(dtype: np.dtype, parallel: bool):
    vector = compiled.array(dtype, 1, readonly=True)
    return compiled.loop(layer_norm_rows, compiled.array(dtype, 2, readonly=True), vector,
                         vector, numba.float64, compiled.array(dtype, 2), parallel=parallel)


def _parallel(matrix: np.ndarray) -> bool:
    """Whether the rows of `matrix` are worth numba's threads."""
    return matrix.shape[0] > 1 and matrix.size >= compiled.PARALLEL_MIN


# -- kernels ------------------------------------------------------------------------------
def _reduction(op: str, fn, dtypes) -> None:
    """Register the row loop `fn` as the kernel of reduction `op` on `dtypes`."""

    @register(op, dtypes)
    def kernel(device, x, *, axis=None, keepdims=False, out_shape, out_dtype):
        matrix = rows(x, hal.shapes.axes(op, axis, x.ndim))
        out = device.empty(out_shape, out_dtype)
        _reducer(fn, x.dtype, out_dtype, _parallel(matrix))(matrix, out.reshape(-1))
        return out


_reduction("sum", sum_rows, hal.BOOL + NUMBERS)
_reduction("max", max_rows, hal.BOOL + ORDERED)
_reduction("min", min_rows, hal.BOOL + ORDERED)


def _along(op: str, fn) -> None:
    """Register the row loop `fn` as the kernel of `op`, normalising along one axis."""

    @register(op, FLOATS)
    def kernel(device, x, *, axis=-1, out_shape, out_dtype):
        last = np.moveaxis(x.reshape(x.shape or (1,)), axis, -1)  # a 0-d x is one row
        matrix = rows(last, (last.ndim - 1,))
        out = device.empty(last.shape, out_dtype)
        _normaliser(fn, x.dtype, _parallel(matrix))(matrix, out.reshape(matrix.shape))
        return np.moveaxis(out, -1, axis).reshape(out_shape)


_along("softmax", softmax_rows)
_along("log_softmax", log_softmax_rows)


@register("layer_norm", FLOATS)
def _layer_norm_kernel(device, x, weight=None, bias=None, *, eps=1e-5, out_shape, out_dtype):
    matrix, absent = rows(x, (x.ndim - 1,)), np.empty(0, x.dtype)
    out = device.empty(out_shape, out_dtype)
    _layer_norm(x.dtype, _parallel(matrix))(
        matrix, absent if weight is None else np.ascontiguousarray(weight),
        absent if bias is None else np.ascontiguousarray(bias), float(eps),
        out.reshape(matrix.shape))
    return out
