"""Truncated Taylor series of hal Tensors: the arithmetic that forward and Taylor mode share.

A series is a list ``[x0, x1, ..., xk]`` of normalised coefficients, x(t) = sum x_n t^n,
where x0 is the primal value and a coefficient of None is zero (skipped, never computed).
Every coefficient has its primal's shape and dtype. Products are Cauchy products and the
nonlinear functions use the standard recurrences (Griewank and Walther, *Evaluating
Derivatives*, ch. 13), so each costs O(k^2) tensor operations. Everything is written in
hal ops, so an enclosing differentiation level sees and differentiates it.
"""

from __future__ import annotations

import math

import numpy as np

import hal
from hal import Tensor

Series = list  # [x0, x1, ..., xk]; None stands for a zero coefficient


def constant(x: Tensor, k: int) -> Series:
    """The series of a value that does not move: x0 and k zero coefficients."""
    return [x] + [None] * k


def _add(a, b):
    if a is None:
        return b
    return a if b is None else a + b


def _sub(a, b):
    if b is None:
        return a
    return -b if a is None else a - b


def _mul(a, b):
    return None if a is None or b is None else a * b


_CONSTANTS: dict = {}  # (value, dtype, device) -> 0-d tensor: scalars skip promotion per call


def _scale(t, c):
    if t is None or c == 1:
        return t
    key = (c, t.dtype, t.device)
    factor = _CONSTANTS.get(key)
    if factor is None:
        factor = _CONSTANTS[key] = hal.full((), c, dtype=t.dtype, device=t.device)
    return t * factor


def _fit(t, shape):
    return t if t is None or t.shape == shape else hal.broadcast_to(t, shape)


def _shape(*xs) -> tuple:
    return tuple(np.broadcast_shapes(*(x.shape for x in xs)))


def map_linear(fn, s: Series, y0: Tensor | None = None) -> Series:
    """A linear map applied coefficient by coefficient (y0 given saves recomputing fn(x0))."""
    return [fn(s[0]) if y0 is None else y0] + [None if c is None else fn(c) for c in s[1:]]


def add(a: Series, b: Series, y0: Tensor | None = None) -> Series:
    """a + b, broadcasting."""
    shape = _shape(a[0], b[0])
    head = a[0] + b[0] if y0 is None else y0
    return [head] + [_fit(_add(x, y), shape) for x, y in zip(a[1:], b[1:], strict=False)]


def sub(a: Series, b: Series, y0: Tensor | None = None) -> Series:
    """a - b, broadcasting."""
    shape = _shape(a[0], b[0])
    head = a[0] - b[0] if y0 is None else y0
    return [head] + [_fit(_sub(x, y), shape) for x, y in zip(a[1:], b[1:], strict=False)]


def shift(s: Series, c) -> Series:
    """s + c for a constant c (a number or a tensor that broadcasts into s)."""
    return [s[0] + c, *s[1:]]


def scale(s: Series, c) -> Series:
    """s * c for a number c."""
    return [s[0] * c] + [_scale(x, c) for x in s[1:]]


def _cauchy(a: Series, b: Series, n: int, lo: int = 0, hi: int | None = None):
    """sum_{j=lo}^{hi} a_j b_{n-j} (hi = n by default), skipping zero terms."""
    acc = None
    for j in range(lo, (n if hi is None else hi) + 1):
        acc = _add(acc, _mul(a[j], b[n - j]))
    return acc


def mul(a: Series, b: Series, y0: Tensor | None = None) -> Series:
    """a * b: the Cauchy product, broadcasting."""
    if a is b:
        return square(a, y0)
    shape = _shape(a[0], b[0])
    head = a[0] * b[0] if y0 is None else y0
    return [head] + [_fit(_cauchy(a, b, n), shape) for n in range(1, len(a))]


def bilinear(fn, a: Series, b: Series, y0: Tensor | None = None) -> Series:
    """fn(a, b) for fn bilinear (matmul): the Cauchy product with fn in place of *."""
    out = [fn(a[0], b[0]) if y0 is None else y0]
    for n in range(1, len(a)):
        acc = None
        for j in range(n + 1):
            if a[j] is not None and b[n - j] is not None:
                acc = _add(acc, fn(a[j], b[n - j]))
        out.append(acc)
    return out


def square(a: Series, y0: Tensor | None = None) -> Series:
    """a * a, using the symmetry of the Cauchy product (half the products)."""
    out = [a[0] * a[0] if y0 is None else y0]
    for n in range(1, len(a)):
        acc = None
        for j in range((n + 1) // 2):
            acc = _add(acc, _mul(a[j], a[n - j]))
        acc = _scale(acc, 2)
        if n % 2 == 0:
            acc = _add(acc, _mul(a[n // 2], a[n // 2]))
        out.append(acc)
    return out


def div(a: Series, b: Series, y0: Tensor | None = None) -> Series:
    """a / b: y_n = (a_n - sum_{j=1}^n b_j y_{n-j}) / b_0."""
    shape = _shape(a[0], b[0])
    y = [a[0] / b[0] if y0 is None else y0]
    for n in range(1, len(a)):
        acc = _sub(a[n], _cauchy(b, y, n, lo=1))
        y.append(None if acc is None else _fit(acc / b[0], shape))
    return y


def reciprocal(b: Series, y0: Tensor | None = None) -> Series:
    """1 / b."""
    return div(constant(hal.ones_like(b[0]), len(b) - 1), b, y0)


def _weighted(x: Series) -> list:
    """[None, 1 x_1, 2 x_2, ..., k x_k]: the coefficients of t x'(t)."""
    return [None] + [_scale(c, j) for j, c in enumerate(x[1:], 1)]


def integral(x: Series, g: Series, y0: Tensor) -> Series:
    """f(x) from the series g of its derivative f'(x) and its value y0: y' = g x', so
    y_n = (1/n) sum_{j=1}^n j x_j g_{n-j} (asin, atan, asinh, ... whose derivative is
    algebraic in x)."""
    xs = _weighted(x)
    y = [y0]
    for n in range(1, len(x)):
        y.append(_scale(_cauchy(xs, g, n, lo=1), 1 / n))
    return y


def exp(x: Series, y0: Tensor | None = None) -> Series:
    """exp(x): y_n = (1/n) sum_{j=1}^n j x_j y_{n-j}."""
    xs = _weighted(x)
    y = [hal.exp(x[0]) if y0 is None else y0]
    for n in range(1, len(x)):
        y.append(_scale(_cauchy(xs, y, n, lo=1), 1 / n))
    return y


def log(x: Series, y0: Tensor | None = None) -> Series:
    """log(x): y_n = (x_n - (1/n) sum_{j=1}^{n-1} j y_j x_{n-j}) / x_0."""
    y = [hal.log(x[0]) if y0 is None else y0]
    ys = [None]
    for n in range(1, len(x)):
        acc = _sub(x[n], _scale(_cauchy(ys, x, n, lo=1, hi=n - 1), 1 / n))
        y.append(None if acc is None else acc / x[0])
        ys.append(_scale(y[n], n))
    return y


def sqrt(x: Series, y0: Tensor | None = None) -> Series:
    """sqrt(x): y_n = (x_n - sum_{j=1}^{n-1} y_j y_{n-j}) / (2 y_0)."""
    y = [hal.sqrt(x[0]) if y0 is None else y0]
    twice = None
    for n in range(1, len(x)):
        acc = None
        for j in range(1, (n + 1) // 2):
            acc = _add(acc, _mul(y[j], y[n - j]))
        acc = _scale(acc, 2)
        if n % 2 == 0:
            acc = _add(acc, _mul(y[n // 2], y[n // 2]))
        acc = _sub(x[n], acc)
        if acc is not None and twice is None:
            twice = y[0] * 2
        y.append(None if acc is None else acc / twice)
    return y


def sin_cos(x: Series, s0: Tensor | None = None, c0: Tensor | None = None) -> tuple:
    """(sin(x), cos(x)) together: s_n = (1/n) sum j x_j c_{n-j}, c_n = -(1/n) sum j x_j s_{n-j}."""
    xs = _weighted(x)
    s = [hal.sin(x[0]) if s0 is None else s0]
    c = [hal.cos(x[0]) if c0 is None else c0]
    for n in range(1, len(x)):
        s.append(_scale(_cauchy(xs, c, n, lo=1), 1 / n))
        c.append(_scale(_cauchy(xs, s, n, lo=1), -1 / n))
    return s, c


def tanh(x: Series, y0: Tensor | None = None) -> Series:
    """tanh(x): y' = (1 - y^2) x', so y_n = (1/n) sum j x_j z_{n-j} with z = 1 - y^2."""
    xs = _weighted(x)
    y = [hal.tanh(x[0]) if y0 is None else y0]
    z = [1 - y[0] * y[0]]
    for n in range(1, len(x)):
        y.append(_scale(_cauchy(xs, z, n, lo=1), 1 / n))
        if n < len(x) - 1:
            acc = None
            for j in range((n + 1) // 2):
                acc = _add(acc, _mul(y[j], y[n - j]))
            acc = _scale(acc, -2)
            if n % 2 == 0:
                acc = _sub(acc, _mul(y[n // 2], y[n // 2]))
            z.append(acc)
    return y


def erf(x: Series, y0: Tensor | None = None) -> Series:
    """erf(x): y' = g x' with g = 2/sqrt(pi) exp(-x^2), so y_n = (1/n) sum j x_j g_{n-j}."""
    y = [hal.erf(x[0]) if y0 is None else y0]
    if len(x) == 1:
        return y
    g = scale(exp(scale(square(x[:-1]), -1)), 2 / math.sqrt(math.pi))
    xs = _weighted(x)
    for n in range(1, len(x)):
        y.append(_scale(_cauchy(xs, g, n, lo=1), 1 / n))
    return y


def power(x: Series, a: Tensor, y0: Tensor | None = None) -> Series:
    """x**a for a constant exponent: n x_0 y_n = sum_{j=1}^n ((a+1) j - n) x_j y_{n-j}."""
    y = [hal.power(x[0], a) if y0 is None else y0]
    xs = _weighted(x)
    a1 = None
    for n in range(1, len(x)):
        s1 = _cauchy(xs, y, n, lo=1)
        if s1 is None:
            y.append(None)
            continue
        if a1 is None:
            a1 = a + 1
        s2 = _cauchy(x, y, n, lo=1)
        y.append((s1 * a1 - s2 * n) / (x[0] * n))
    return y


def integer_power(x: Series, n: int, y0: Tensor | None = None) -> Series:
    """x**n for an integer n by repeated squaring (exact where x_0 = 0)."""
    if n < 0:
        return reciprocal(integer_power(x, -n), y0)
    if n == 0:
        return constant(hal.ones_like(x[0]) if y0 is None else y0, len(x) - 1)
    result, base = None, x
    while True:
        if n & 1:
            result = base if result is None else mul(result, base)
        n >>= 1
        if not n:
            break
        base = square(base)
    return result if y0 is None else [y0, *result[1:]]


def where(cond: Tensor, a: Series, b: Series, y0: Tensor | None = None) -> Series:
    """where(cond, a, b) coefficient by coefficient (cond does not move)."""
    shape = _shape(cond, a[0], b[0])
    out = [hal.where(cond, a[0], b[0]) if y0 is None else y0]
    for x, y in zip(a[1:], b[1:], strict=False):
        if x is None and y is None:
            out.append(None)
        else:
            out.append(_fit(hal.where(cond, 0 if x is None else x, 0 if y is None else y), shape))
    return out


def select(weight_a: Tensor, a: Series, b: Series, y0: Tensor) -> Series:
    """weight_a * a + (1 - weight_a) * b past the primal: max/min with ties split evenly."""
    shape = tuple(y0.shape)
    out = [y0]
    for x, y in zip(a[1:], b[1:], strict=False):
        if x is None and y is None:
            out.append(None)
            continue
        d = _sub(x, y)
        out.append(_fit(_add(y, weight_a * d), shape))
    return out


def sum_(s: Series, axis, keepdims: bool = False, y0: Tensor | None = None) -> Series:
    """Sum over axes."""
    return map_linear(lambda t: hal.sum(t, axis=axis, keepdims=keepdims), s, y0)


def derivatives(s: Series) -> list:
    """Normalised coefficients -> derivatives: x_n * n!."""
    return [s[0]] + [_scale(c, math.factorial(n)) for n, c in enumerate(s[1:], 1)]


def coefficients(terms: list) -> list:
    """Derivatives -> normalised coefficients: d_n / n! (the inverse of `derivatives`)."""
    return [_scale(c, 1 / math.factorial(n)) for n, c in enumerate(terms, 1)]
