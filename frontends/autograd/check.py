"""check_grads: forward and reverse mode against central finite differences, to any order.

As JAX's `check_grads`: the JVP along a random direction must match the central
difference of f, and the VJP must satisfy the dot-product identity
Re<vjp(u), v> = Re<u, jvp(v)> with jvp(v) from finite differences (the pairing has no
conjugate; see `frontends.autograd`). Higher orders check the JVP and VJP functions
themselves, recursively. A failure raises AssertionError with the errors and tolerance.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

import hal
from hal import HalError
from hal import dtypes as dt

from .forward import jvp
from .pytree import flatten, unflatten
from .reverse import vjp
from .trace import check_input, check_order

MODES = ("fwd", "rev")
# (finite-difference step, tolerance) by the precision of the inputs
_DEFAULTS = {dt.float64: (1e-5, 1e-5), dt.complex128: (1e-5, 1e-5),
             dt.float32: (1e-3, 2e-2), dt.complex64: (1e-3, 2e-2)}


def _defaults(args, eps, tol):
    leaves, _ = flatten(tuple(args), "argument")
    for x in leaves:
        check_input(x, "check_grads", "argument")
        if x.dtype not in _DEFAULTS:
            raise HalError(f"check_grads: {x.dtype.name} is too coarse for finite differences; "
                           "check in float32 or float64")
    worst = max((_DEFAULTS[x.dtype] for x in leaves), key=lambda p: p[1])
    return (worst[0] if eps is None else eps), (worst[1] if tol is None else tol)


def _random_like(rng, x):
    shape = tuple(x.shape)
    host = rng.standard_normal(shape)
    if dt.is_complex(x.dtype):
        host = host + 1j * rng.standard_normal(shape)
    return hal.asarray(np.asarray(host).astype(x.dtype), device=x.device)


def _host(leaves):
    return [np.asarray(t.numpy(), dtype=np.complex128) for t in leaves]


def _numerical_jvp(f, args, tangents, eps):
    leaves, structure = flatten(tuple(args), "argument")
    tleaves, _ = flatten(tuple(tangents), "tangent")

    def shifted(sign):
        moved = [hal.asarray((x.numpy() + sign * eps * t.numpy()).astype(x.dtype),
                             device=x.device) for x, t in zip(leaves, tleaves, strict=True)]
        return _host(flatten(f(*unflatten(structure, moved)), "output")[0])

    plus, minus = shifted(1), shifted(-1)
    return [(p - m) / (2 * eps) for p, m in zip(plus, minus, strict=True)]


def _compare(what, actual, expected, tol):
    for a, e in zip(actual, expected, strict=True):
        a = np.asarray(a, dtype=np.complex128)
        scale = max(1.0, float(np.max(np.abs(e), initial=0.0)))
        err = float(np.max(np.abs(a - e), initial=0.0)) / scale
        if not err <= tol:
            raise AssertionError(
                f"check_grads: {what} differs from finite differences: relative error "
                f"{err:.3g} > tolerance {tol:.3g} (scale {scale:.3g})"
            )


def check_jvp(f: Callable, args: Sequence, *, eps: float | None = None,
              tol: float | None = None, seed: int = 0) -> None:
    """Assert that jvp(f) along a random direction matches central differences."""
    eps, tol = _defaults(args, eps, tol)
    rng = np.random.default_rng(seed)
    leaves, structure = flatten(tuple(args), "argument")
    tangents = unflatten(structure, [_random_like(rng, x) for x in leaves])
    _, t_out = jvp(f, tuple(args), tangents)
    _compare("jvp", _host(flatten(t_out, "tangent")[0]),
             _numerical_jvp(f, args, tangents, eps), tol)


def check_vjp(f: Callable, args: Sequence, *, eps: float | None = None,
              tol: float | None = None, seed: int = 0) -> None:
    """Assert Re<vjp(u), v> = Re<u, (f(x + eps v) - f(x - eps v)) / 2 eps> for random u, v."""
    eps, tol = _defaults(args, eps, tol)
    rng = np.random.default_rng(seed)
    leaves, structure = flatten(tuple(args), "argument")
    tangents = unflatten(structure, [_random_like(rng, x) for x in leaves])
    out, fn = vjp(f, *args)
    outs, out_structure = flatten(out, "output")
    cts = [_random_like(rng, o) for o in outs]
    grads = _host(flatten(fn(unflatten(out_structure, cts)), "cotangent")[0])
    vs = _host(flatten(tangents)[0])
    lhs = sum(float(np.sum(g * v).real) for g, v in zip(grads, vs, strict=True))
    num = _numerical_jvp(f, args, tangents, eps)
    u = _host(cts)
    rhs = sum(float(np.sum(c * n).real) for c, n in zip(u, num, strict=True))
    scale = max(1.0, sum(float(np.sum(np.abs(c * n))) for c, n in zip(u, num, strict=True)))
    if not abs(lhs - rhs) <= tol * scale:
        raise AssertionError(
            f"check_grads: vjp fails the dot-product test: Re<vjp(u), v> = {lhs:.10g} but "
            f"Re<u, jvp(v)> = {rhs:.10g} by finite differences (tolerance {tol:.3g} x {scale:.3g})"
        )


def check_grads(f: Callable, args: Sequence, order: int = 1, modes=MODES, *,
                eps: float | None = None, tol: float | None = None, seed: int = 0) -> None:
    """Check derivatives of f at args up to `order` in the given modes ("fwd", "rev").

    Order n > 1 checks the JVP function (x, v) -> jvp(f, x, v) and the VJP function
    x -> vjp(f, x)(u) at order n - 1, so every level of nesting meets finite differences.
    """
    k = check_order("check_grads", order)
    if k < 1:
        raise HalError("check_grads: order must be at least 1")
    modes = (modes,) if isinstance(modes, str) else tuple(modes)
    if not modes or any(m not in MODES for m in modes):
        raise HalError(f"check_grads: modes {modes!r} must be drawn from {MODES}")
    rng = np.random.default_rng(seed + 1)
    args = tuple(args)
    if "fwd" in modes:
        check_jvp(f, args, eps=eps, tol=tol, seed=seed)
        if k > 1:
            n = len(args)
            tangents = tuple(unflatten(flatten(a)[1], [_random_like(rng, x)
                                                        for x in flatten(a)[0]]) for a in args)

            def f_jvp(*a):
                return jvp(f, a[:n], a[n:])[1]

            check_grads(f_jvp, args + tangents, k - 1, modes, eps=eps, tol=tol, seed=seed)
    if "rev" in modes:
        check_vjp(f, args, eps=eps, tol=tol, seed=seed)
        if k > 1:
            outs, out_structure = flatten(f(*args), "output")
            ct = unflatten(out_structure, [_random_like(rng, o) for o in outs])

            def f_vjp(*a):
                return vjp(f, *a)[1](ct)

            check_grads(f_vjp, args, k - 1, modes, eps=eps, tol=tol, seed=seed)
