"""The Array API's linalg extension: `hal.linalg.det(x)`, `hal.linalg.svd(x)`, ...

Decompositions and solvers are ops of the set (hal/ops/linalg.py: numpy on the cpu
backend, the CPU fallback elsewhere until a backend has kernels); the rest composes ops
(matmul, sums, where), so every backend runs it with its own kernels. Results of several
parts are named tuples, as the standard asks.
"""

from __future__ import annotations

import builtins
import math
from typing import NamedTuple

import numpy as np

from . import ops
from .dispatch import call
from .functions import (
    abs,
    astype,
    concat,
    conj,
    divide,
    greater,
    matmul,
    matrix_transpose,
    max,
    min,
    multiply,
    permute_dims,
    power,
    reshape,
    sqrt,
    subtract,
    sum,
    take,
    where,
)
from .ops import arguments
from .runtime import dtypes as dt
from .runtime.dtypes import result_type
from .runtime.errors import ArgumentError, ShapeError
from .tensor import Tensor, tensor_argument

__all__ = ["cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "matmul",
           "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv",
           "qr", "slogdet", "solve", "svd", "svdvals", "tensordot", "trace", "vecdot",
           "vector_norm"]

_OP = {n: ops.spec(n) for n in (
    "det", "inv", "solve", "cholesky", "eigh_values", "eigh_vectors", "slogdet_sign",
    "slogdet_logabsdet", "qr_q", "qr_r", "svd_u", "svd_s", "svd_vh")}


class EighResult(NamedTuple):
    """eigh's result: ascending eigenvalues and the eigenvectors as columns."""

    eigenvalues: Tensor
    eigenvectors: Tensor


class QRResult(NamedTuple):
    """qr's result (mode "reduced")."""

    Q: Tensor
    R: Tensor


class SlogdetResult(NamedTuple):
    """slogdet's result: det = sign * exp(logabsdet)."""

    sign: Tensor
    logabsdet: Tensor


class SVDResult(NamedTuple):
    """svd's result: x = U @ diag(S) @ Vh."""

    U: Tensor
    S: Tensor
    Vh: Tensor


def det(x, /) -> Tensor:
    """The determinant of each square matrix of x (..., M, M)."""
    return call(_OP["det"], x)


def inv(x, /) -> Tensor:
    """The inverse of each square matrix of x."""
    return call(_OP["inv"], x)


def solve(x1, x2, /) -> Tensor:
    """The solution y of x1 @ y = x2 (x2 (..., M, K), or (M,) a vector), batches broadcast."""
    return call(_OP["solve"], x1, x2)


def cholesky(x, /, *, upper: bool = False) -> Tensor:
    """The Cholesky factor of each Hermitian positive-definite matrix: lower L (x = L L^H),
    or upper U = L^H (x = U^H U) when upper."""
    lower = call(_OP["cholesky"], x)
    return _conj_transpose(lower) if upper else lower


def eigh(x, /) -> EighResult:
    """Eigenvalues (ascending) and eigenvectors of each Hermitian matrix."""
    return EighResult(call(_OP["eigh_values"], x), call(_OP["eigh_vectors"], x))


def eigvalsh(x, /) -> Tensor:
    """The eigenvalues (ascending) of each Hermitian matrix."""
    return call(_OP["eigh_values"], x)


def slogdet(x, /) -> SlogdetResult:
    """The sign and the log of the absolute value of each determinant (no overflow)."""
    return SlogdetResult(call(_OP["slogdet_sign"], x), call(_OP["slogdet_logabsdet"], x))


def qr(x, /, *, mode: str = "reduced") -> QRResult:
    """The QR decomposition of each matrix (mode "reduced": Q (..., M, K), R (..., K, N))."""
    if mode != "reduced":
        raise ArgumentError(f"linalg.qr: mode {mode!r} is not supported; hal computes the "
                            "'reduced' decomposition")
    return QRResult(call(_OP["qr_q"], x), call(_OP["qr_r"], x))


def svd(x, /, *, full_matrices: bool = True) -> SVDResult:
    """The singular value decomposition of each matrix, singular values descending."""
    return SVDResult(call(_OP["svd_u"], x, full_matrices=full_matrices),
                     call(_OP["svd_s"], x, full_matrices=full_matrices),
                     call(_OP["svd_vh"], x, full_matrices=full_matrices))


def svdvals(x, /) -> Tensor:
    """The singular values of each matrix, descending."""
    return call(_OP["svd_s"], x, full_matrices=False)


def _tolerance(x: Tensor, s: Tensor, rtol) -> Tensor:
    """rtol (default max(M, N) * eps) times each matrix's largest singular value."""
    if rtol is None:
        rtol = builtins.max(x.shape[-2:]) * float(dt.machine_limits(s.dtype).eps)
    elif not isinstance(rtol, Tensor):
        rtol = arguments.real("linalg", "rtol", rtol)
    if s.size == 0:  # no singular values (an empty matrix or batch): nothing to compare
        return s
    largest = max(s, axis=-1, keepdims=True)
    return multiply(largest, rtol if isinstance(rtol, Tensor) else float(rtol))


def matrix_rank(x, /, *, rtol=None) -> Tensor:
    """The number of singular values above rtol times the largest, per matrix (int64)."""
    x = tensor_argument("linalg.matrix_rank", x)
    s = svdvals(x)
    return astype(sum(greater(s, _tolerance(x, s, rtol)), axis=-1), dt.int64)


def pinv(x, /, *, rtol=None) -> Tensor:
    """The Moore-Penrose pseudo-inverse (singular values below rtol times the largest are
    taken as zero)."""
    x = tensor_argument("linalg.pinv", x)
    u, s, vh = svd(x, full_matrices=False)
    kept = greater(s, _tolerance(x, s, rtol))
    reciprocal = where(kept, divide(1.0, where(kept, s, 1.0)), 0.0)
    scaled = multiply(_conj_transpose(vh), reshape(astype(reciprocal, x.dtype),
                                                   (*s.shape[:-1], 1, s.shape[-1])))
    return matmul(scaled, _conj_transpose(u))


def matrix_power(x, n: int, /) -> Tensor:
    """x multiplied by itself n times (n < 0: the inverse's power; 0: the identity)."""
    x = tensor_argument("linalg.matrix_power", x)
    n = arguments.integer("linalg.matrix_power", "n", n)
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ShapeError(f"linalg.matrix_power: needs square matrices, shape is {x.shape}")
    if n < 0:
        x, n = inv(x), -n
    result = Tensor.from_host(np.broadcast_to(np.eye(x.shape[-1], dtype=x.dtype), x.shape),
                              x.device)
    base = x
    while n:  # by squaring
        if n & 1:
            result = matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    return result


def _conj_transpose(x: Tensor) -> Tensor:
    t = matrix_transpose(x)
    return conj(t) if dt.is_complex(x.dtype) else t


def outer(x1, x2, /) -> Tensor:
    """The outer product of two vectors: (M,) and (N,) to (M, N)."""
    x1, x2 = (tensor_argument("linalg.outer", a) for a in (x1, x2))
    if x1.ndim != 1 or x2.ndim != 1:
        raise ShapeError(f"linalg.outer: needs two vectors, shapes are {x1.shape}, {x2.shape}")
    return multiply(reshape(x1, (-1, 1)), reshape(x2, (1, -1)))


def vecdot(x1, x2, /, *, axis: int = -1) -> Tensor:
    """The dot product along axis, conjugating x1 (sum(conj(x1) * x2)), batches broadcast."""
    x1, x2 = (tensor_argument("vecdot", a) for a in (x1, x2))
    if dt.is_complex(x1.dtype):
        x1 = conj(x1)
    ndim = builtins.min(x1.ndim, x2.ndim)
    axis = arguments.integer("vecdot", "axis", axis)
    if not -ndim <= axis < 0:
        raise ShapeError(f"vecdot: axis {axis} must be negative (counted from the end) for "
                         f"shapes {x1.shape} and {x2.shape}")
    if x1.shape[axis] != x2.shape[axis]:
        raise ShapeError(f"vecdot: axis {axis} has sizes {x1.shape[axis]} and "
                         f"{x2.shape[axis]}")
    return sum(multiply(x1, x2), axis=axis, dtype=result_type(x1, x2))


def tensordot(x1, x2, /, *, axes=2) -> Tensor:
    """The sum of products over the last `axes` axes of x1 and the first of x2, or over the
    axis pairs ((x1 axes), (x2 axes)): permute, reshape, one matmul."""
    x1, x2 = (tensor_argument("tensordot", a) for a in (x1, x2))
    if isinstance(axes, int):
        if axes < 0:
            raise ShapeError(f"tensordot: axes {axes} must be >= 0")
        a1, a2 = list(range(x1.ndim - axes, x1.ndim)), list(range(axes))
    else:
        a1, a2 = ([i % x.ndim for i in (ax if isinstance(ax, (list, tuple)) else [ax])]
                  for x, ax in zip((x1, x2), axes))
    if [x1.shape[i] for i in a1] != [x2.shape[i] for i in a2]:
        raise ShapeError(f"tensordot: contracted axes {a1} of {x1.shape} and {a2} of "
                         f"{x2.shape} differ in size")
    free1 = [i for i in range(x1.ndim) if i not in a1]
    free2 = [i for i in range(x2.ndim) if i not in a2]
    k = math.prod(x1.shape[i] for i in a1)
    left = reshape(permute_dims(x1, free1 + a1), (-1, k))
    right = reshape(permute_dims(x2, a2 + free2), (k, -1))
    return reshape(matmul(left, right), [x1.shape[i] for i in free1] +
                   [x2.shape[i] for i in free2])


def diagonal(x, /, *, offset: int = 0) -> Tensor:
    """The diagonal (offset above it when > 0, below when < 0) of each matrix of x."""
    x = tensor_argument("linalg.diagonal", x)
    offset = arguments.integer("linalg.diagonal", "offset", offset)
    if x.ndim < 2:
        raise ShapeError(f"linalg.diagonal: needs matrices, shape is {x.shape}")
    m, n = x.shape[-2:]
    rows = np.arange(builtins.max(0, -offset), m)
    rows = rows[rows + offset < n]
    flat = reshape(x, (*x.shape[:-2], m * n))
    index = Tensor.from_host((rows * n + rows + offset).astype(np.int64), x.device)
    return take(flat, index, axis=-1)


def trace(x, /, *, offset: int = 0, dtype=None) -> Tensor:
    """The sum of each matrix's diagonal (offset as in diagonal); integers sum to int64."""
    d = diagonal(x, offset=offset)
    return sum(d if dtype is None else astype(d, dtype), axis=-1)


def cross(x1, x2, /, *, axis: int = -1) -> Tensor:
    """The cross product of 3-vectors along axis, batches broadcast."""
    x1, x2 = (tensor_argument("linalg.cross", a) for a in (x1, x2))
    ndim = builtins.max(x1.ndim, x2.ndim)
    axis = arguments.integer("linalg.cross", "axis", axis)
    if not -builtins.min(x1.ndim, x2.ndim) <= axis < 0:
        raise ShapeError(f"linalg.cross: axis {axis} must be negative (counted from the end) "
                         f"for shapes {x1.shape} and {x2.shape}")
    if x1.shape[axis] != 3 or x2.shape[axis] != 3:
        raise ShapeError(f"linalg.cross: axis {axis} must have size 3 in both, shapes are "
                         f"{x1.shape} and {x2.shape}")

    def part(x, i):
        return take(x, Tensor.from_host(np.array([i]), x.device), axis=axis)

    a = [part(x1, i) for i in range(3)]
    b = [part(x2, i) for i in range(3)]
    pieces = [subtract(multiply(a[(i + 1) % 3], b[(i + 2) % 3]),
                       multiply(a[(i + 2) % 3], b[(i + 1) % 3])) for i in range(3)]
    return concat(pieces, axis=ndim + axis)


def vector_norm(x, /, *, axis=None, keepdims: bool = False, ord=2) -> Tensor:
    """The p-norm (ord: a number, inf, -inf; 0 counts non-zeros) over axes (all by default)."""
    x = tensor_argument("linalg.vector_norm", x)
    a = abs(x)
    if ord == math.inf:
        return max(a, axis=axis, keepdims=keepdims)
    if ord == -math.inf:
        return min(a, axis=axis, keepdims=keepdims)
    if ord == 0:
        return astype(sum(greater(a, 0), axis=axis, keepdims=keepdims), a.dtype)
    if ord == 1:
        return sum(a, axis=axis, keepdims=keepdims)
    if ord == 2:
        return sqrt(sum(multiply(a, a), axis=axis, keepdims=keepdims))
    p = arguments.real("linalg.vector_norm", "ord", ord)
    return power(sum(power(a, p), axis=axis, keepdims=keepdims), 1.0 / p)


def matrix_norm(x, /, *, keepdims: bool = False, ord="fro") -> Tensor:
    """The matrix norm of each matrix: "fro", "nuc", 1, -1, 2, -2, inf, -inf."""
    x = tensor_argument("linalg.matrix_norm", x)
    if x.ndim < 2:
        raise ShapeError(f"linalg.matrix_norm: needs matrices, shape is {x.shape}")

    if ord == "fro":
        out = vector_norm(x, axis=(-2, -1))
    elif ord in ("nuc", 2, -2):
        s = svdvals(x)
        out = sum(s, axis=-1) if ord == "nuc" else (max if ord == 2 else min)(s, axis=-1)
    elif ord in (1, -1, math.inf, -math.inf):
        along = -2 if ord in (1, -1) else -1  # column sums for 1, row sums for inf
        sums = sum(abs(x), axis=along)
        out = (max if ord > 0 else min)(sums, axis=-1)
    else:
        raise ArgumentError(f"linalg.matrix_norm: ord {ord!r} is not one of 'fro', 'nuc', "
                            "1, -1, 2, -2, inf, -inf")
    return reshape(out, (*out.shape, 1, 1)) if keepdims else out
