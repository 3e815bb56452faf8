"""matmul: the matrix product with numpy's batching and broadcasting; the linalg
extension's decompositions and solvers (det, inv, solve, cholesky, eigh, slogdet, qr, svd)."""

from __future__ import annotations

import numpy as np

from ..runtime.dtypes import FLOATS
from ..runtime.errors import ShapeError
from . import shapes
from .spec import EXTENDED, LOOSE, NONBOOL, PRIMITIVE, declare, to_real


def _matmul_meta(a, b):
    return shapes.matmul("matmul", tuple(a.shape), tuple(b.shape)), a.dtype


def _matmul_bound(a, b):
    return np.abs(a) @ np.abs(b)


declare(
    "matmul", PRIMITIVE, "matmul", NONBOOL, np.matmul, _matmul_meta, promote=(0, 1),
    bound=_matmul_bound,
)


# -- the Array API's linalg extension: matrix decompositions and solvers (extended: numpy on
# the cpu backend; a backend with no kernel falls back to the CPU, counted). An op of several
# results is one op per result (qr_q, qr_r, ...), each the numpy routine's part.
_LINALG = FLOATS


def _square(name: str, a) -> tuple:
    if len(a.shape) < 2 or a.shape[-1] != a.shape[-2]:
        raise ShapeError(f"linalg.{name}: needs a stack of square matrices (..., M, M), "
                         f"shape is {tuple(a.shape)}")
    return tuple(a.shape)


def _matrix(name: str, a) -> tuple:
    if len(a.shape) < 2:
        raise ShapeError(f"linalg.{name}: needs a stack of matrices (..., M, N), shape is "
                         f"{tuple(a.shape)}")
    return tuple(a.shape)


def _same_square(name):
    def meta(a):
        return _square(name, a), a.dtype

    return meta


def _batch_scalar(name, rule=lambda d: d):
    def meta(a):
        return _square(name, a)[:-2], rule(a.dtype)

    return meta


def _eigvals_meta(a):
    return _square("eigh", a)[:-1], to_real(a.dtype)


def _solve_meta(a, b):
    s = _square("solve", a)
    if len(b.shape) == 1:
        if b.shape[0] != s[-1]:
            raise ShapeError(f"linalg.solve: x2 of shape {tuple(b.shape)} does not match "
                             f"matrices of shape {s[-2:]}")
        return s[:-1], a.dtype
    if len(b.shape) < 2 or b.shape[-2] != s[-1]:
        raise ShapeError(f"linalg.solve: x2 of shape {tuple(b.shape)} must be (..., M, K) or "
                         f"(M,) for x1 of shape {s}")
    batch = shapes.broadcast("linalg.solve", s[:-2], tuple(b.shape[:-2]))
    return (*batch, s[-1], b.shape[-1]), a.dtype


def _solve_ref(a, b):
    if b.ndim == 1:
        return np.linalg.solve(a, b[..., None])[..., 0]
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return np.linalg.solve(np.broadcast_to(a, (*batch, *a.shape[-2:])),
                           np.broadcast_to(b, (*batch, *b.shape[-2:])))


def _qr_meta(part):
    def meta(a):
        *batch, m, n = _matrix("qr", a)
        k = min(m, n)
        return ((*batch, m, k) if part == "q" else (*batch, k, n)), a.dtype

    return meta


def _svd_meta(part):
    def meta(a, *, full_matrices=True):
        *batch, m, n = _matrix("svd", a)
        k = min(m, n)
        if part == "s":
            return (*batch, k), to_real(a.dtype)
        if part == "u":
            return (*batch, m, m if full_matrices else k), a.dtype
        return (*batch, n if full_matrices else k, n), a.dtype

    return meta


def _svd_ref(part):
    index = "usv".index(part)

    def ref(a, *, full_matrices=True):
        if part == "s":
            return np.linalg.svd(a, compute_uv=False)
        return np.linalg.svd(a, full_matrices=full_matrices)[index]

    return ref


for _name, _ref, _meta in (
        ("det", np.linalg.det, _batch_scalar("det")),
        ("inv", np.linalg.inv, _same_square("inv")),
        ("cholesky", np.linalg.cholesky, _same_square("cholesky")),
        ("eigh_values", np.linalg.eigvalsh, _eigvals_meta),
        ("eigh_vectors", lambda a: np.linalg.eigh(a)[1], _same_square("eigh")),
        ("slogdet_sign", lambda a: np.linalg.slogdet(a)[0], _batch_scalar("slogdet")),
        ("slogdet_logabsdet", lambda a: np.linalg.slogdet(a)[1],
         _batch_scalar("slogdet", to_real)),
        ("qr_q", lambda a: np.linalg.qr(a)[0], _qr_meta("q")),
        ("qr_r", lambda a: np.linalg.qr(a)[1], _qr_meta("r")),
        ("svd_u", _svd_ref("u"), _svd_meta("u")),
        ("svd_s", _svd_ref("s"), _svd_meta("s")),
        ("svd_vh", _svd_ref("v"), _svd_meta("v"))):
    declare(_name, EXTENDED, "linalg", _LINALG, _ref, _meta, tolerance=LOOSE,
            differentiable=False)
declare("solve", EXTENDED, "linalg", _LINALG, _solve_ref, _solve_meta, promote=(0, 1),
        tolerance=LOOSE, differentiable=False)
