"""Linear algebra with cupy.linalg (cuSOLVER, cuBLAS): det, inv, solve, cholesky, eigh,
slogdet, qr and svd, one op per result as the op set declares them (each runs the routine
for its part); float16/bfloat16 computed in float32 (`in_float32`). And prod over axes."""

from __future__ import annotations

from hal import dtypes as dt
from hal.ops import in_float32

from .table import register


def _linalg():
    import cupy

    return cupy.linalg


def _routine(op: str, call) -> None:
    """Register `call(a, **params)` (a cupy.linalg routine or part of one) as op's kernel."""
    register(op)(in_float32(call))


_routine("det", lambda a: _linalg().det(a))
_routine("inv", lambda a: _linalg().inv(a))
_routine("cholesky", lambda a: _linalg().cholesky(a))
_routine("eigh_values", lambda a: _linalg().eigvalsh(a))
_routine("eigh_vectors", lambda a: _linalg().eigh(a)[1])
_routine("slogdet_sign", lambda a: _linalg().slogdet(a)[0])
_routine("slogdet_logabsdet", lambda a: _linalg().slogdet(a)[1])
_routine("qr_q", lambda a: _linalg().qr(a)[0])
_routine("qr_r", lambda a: _linalg().qr(a)[1])
_routine("svd_u", lambda a, *, full_matrices=True: _linalg().svd(a, full_matrices)[0])
_routine("svd_s", lambda a, *, full_matrices=True: _linalg().svd(a, compute_uv=False))
_routine("svd_vh", lambda a, *, full_matrices=True: _linalg().svd(a, full_matrices)[2])


@register("solve")
@in_float32
def solve(a, b):
    """a x = b for x: b a vector (..., M) only when 1-d, else a stack of (..., M, K), batch
    axes broadcast, as the reference (numpy 2's rule)."""
    import cupy

    if b.ndim == 1:
        return _linalg().solve(a, b[..., None])[..., 0]
    batch = cupy.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return _linalg().solve(cupy.broadcast_to(a, (*batch, *a.shape[-2:])),
                           cupy.broadcast_to(b, (*batch, *b.shape[-2:])))


@register("prod")
@in_float32
def prod(x, *, axis=None, keepdims=False):
    """Product over axes; int64 for integers and bool (the op's sum rule)."""
    import cupy

    wide = dt.int64 if x.dtype.kind in "biu" else None
    return cupy.prod(x, axis=axis, dtype=wide, keepdims=keepdims)
