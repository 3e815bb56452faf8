"""Complex exp, sin, cos, tanh, sqrt, division and power in OpenCL C as numpy computes them.

numpy's complex functions are C99's (Annex G): defined results for infinite and NaN
parts and no spurious overflow (sqrt near the largest float, exp/sinh/cosh whose
exp(x) overflows while the product with cos y or sin y does not). pyopencl-complex.h
computes the plain formulas, which give NaN for inf * 0 and overflow early; its division
by zero gives NaN where numpy's (Smith's algorithm) gives inf. These
helpers follow FreeBSD's msun case by case, and glibc's choices (numpy's on Linux) where
C99 leaves the sign of a zero or an infinity open; sin and cos go through sinh and cosh
as sin z = -i sinh(iz), cos z = cosh(iz).
"""

from __future__ import annotations

import functools
from string import Template

import numpy as np

from . import cltypes

_SOURCE = Template("""
inline $T hal_${P}_expcis($R x, $R c, $R s) {  /* exp(x) (c + i s), x finite or not */
  const $R e = exp(x);
  if (!isinf(e) || !isfinite(x)) return ${P}_new(e * c, e * s);
  const $R h = exp(x / 2);  /* exp(x) overflows alone: multiply in two halves */
  return ${P}_new(h * c * h, h * s * h);
}
inline $T hal_${P}_exp($T z) {
  const $R x = z.real, y = z.imag;
  if (y == 0) return ${P}_new(exp(x), y);
  if (x == 0) return ${P}_new(cos(y), sin(y));
  if (!isfinite(y)) {
    if (isinf(x)) return x < 0 ? ${P}_new(0, copysign(($R)0, y)) : ${P}_new(x, y - y);
    return ${P}_new(y - y, y - y);
  }
  return hal_${P}_expcis(x, cos(y), sin(y));
}
inline $T hal_${P}_sinh($T z) {
  const $R x = z.real, y = z.imag;
  if (isfinite(x) && isfinite(y)) {
    if (y == 0) return ${P}_new(sinh(x), y);
    if (fabs(x) < 22) return ${P}_new(sinh(x) * cos(y), cosh(x) * sin(y));
    const $T h = hal_${P}_expcis(fabs(x), cos(y) / 2, sin(y) / 2);  /* cosh ~ sinh ~ e^|x|/2 */
    return ${P}_new(copysign(($R)1, x) * h.real, h.imag);
  }
  if (x == 0) return ${P}_new(x, y - y);
  if (y == 0) return ${P}_new(x + x, y);
  if (isfinite(x)) return ${P}_new(y - y, y - y);
  if (isinf(x)) return isfinite(y) ? ${P}_new(x * cos(y), INFINITY * sin(y)) : ${P}_new(x, y - y);
  return ${P}_new((x + x) * (y - y), (x * x) * (y - y));
}
inline $T hal_${P}_cosh($T z) {
  const $R x = z.real, y = z.imag;
  if (isfinite(x) && isfinite(y)) {
    if (y == 0) return ${P}_new(cosh(x), x * y);
    if (fabs(x) < 22) return ${P}_new(cosh(x) * cos(y), sinh(x) * sin(y));
    const $T h = hal_${P}_expcis(fabs(x), cos(y) / 2, sin(y) / 2);
    return ${P}_new(h.real, copysign(($R)1, x) * h.imag);
  }
  if (x == 0) return ${P}_new(y - y, 0);
  if (y == 0) return ${P}_new(x * x, isnan(x) ? y : copysign(($R)1, x) * y);
  if (isfinite(x)) return ${P}_new(y - y, y - y);
  if (isinf(x))
    return isfinite(y) ? ${P}_new(INFINITY * cos(y), x * sin(y)) : ${P}_new(INFINITY, x * (y - y));
  return ${P}_new((x * x) * (y - y), (x + x) * (y - y));
}
inline $T hal_${P}_sin($T z) {
  if (isinf(z.imag) && !isfinite(z.real))  /* the sign of the infinity is numpy's choice */
    return ${P}_new(z.real - z.real, INFINITY);
  const $T w = hal_${P}_sinh(${P}_new(-z.imag, z.real));
  return ${P}_new(w.imag, -w.real);
}
inline $T hal_${P}_cos($T z) {
  return hal_${P}_cosh(${P}_new(-z.imag, z.real));
}
inline $T hal_${P}_tanh($T z) {  /* Kahan's formula: no cancellation near the poles */
  const $R x = z.real, y = z.imag;
  if (isnan(x)) return ${P}_new(x, y == 0 ? y : x);
  if (isinf(x))
    return ${P}_new(copysign(($R)1, x), copysign(($R)0, isinf(y) ? y : sin(y) * cos(y)));
  if (!isfinite(y)) return ${P}_new(x == 0 ? x : y - y, y - y);
  if (fabs(x) >= 22) {  /* tanh ~ +-1 + 4 i sin y cos y e^-2|x|, without overflowing sinh */
    const $R e = exp(-fabs(x));
    return ${P}_new(copysign(($R)1, x), 4 * sin(y) * cos(y) * e * e);
  }
  const $R t = tan(y), beta = 1 + t * t, s = sinh(x), rho = sqrt(1 + s * s);
  const $R den = 1 + beta * s * s;
  return ${P}_new(beta * rho * s / den, t / den);
}
inline $T hal_${P}_sqrt($T z) {  /* the branch cut follows the sign of a zero imaginary part */
  $R a = z.real, b = z.imag, scale = 1;
  if (a == 0 && b == 0) return ${P}_new(0, b);
  if (isinf(b)) return ${P}_new(INFINITY, b);
  if (isnan(a)) return ${P}_new(a, a);
  if (isinf(a))
    return a < 0 ? ${P}_new(fabs(b - b), copysign(a, b)) : ${P}_new(a, copysign(b - b, b));
  if (isnan(b)) return ${P}_new(b, b);
  if (fabs(a) >= ${LIMIT}_MAX / 4 || fabs(b) >= ${LIMIT}_MAX / 4) {  /* a + |z| would overflow */
    a /= 4;
    b /= 4;
    scale = 2;
  } else if (fabs(a) < ${LIMIT}_MIN && fabs(b) < ${LIMIT}_MIN) {  /* subnormal: lift, keep bits */
    a = ldexp(a, 2 * $SHIFT);
    b = ldexp(b, 2 * $SHIFT);
    scale = ldexp(($R)1, -$SHIFT);
  }
  const $R t = sqrt((fabs(a) + hypot(a, b)) / 2);
  if (a >= 0) return ${P}_new(t * scale, b / (2 * t) * scale);
  return ${P}_new(fabs(b) / (2 * t) * scale, copysign(t, b) * scale);
}
inline $T hal_${P}_divide($T a, $T b) {  /* numpy's Smith division; by 0 gives inf or NaN */
  const $R br = fabs(b.real), bi = fabs(b.imag);
  if (br >= bi) {
    if (br == 0 && bi == 0) return ${P}_new(a.real / br, a.imag / br);
    const $R rat = b.imag / b.real, scl = 1 / (b.real + b.imag * rat);
    return ${P}_new((a.real + a.imag * rat) * scl, (a.imag - a.real * rat) * scl);
  }
  const $R rat = b.real / b.imag, scl = 1 / (b.imag + b.real * rat);
  return ${P}_new((a.real * rat + a.imag) * scl, (a.imag * rat - a.real) * scl);
}
inline $T hal_${P}_pow($T a, $T b) {  /* 0**0 = 1; integer exponents by squaring */
  if (b.real == 0 && b.imag == 0) return ${P}_new(1, 0);
  if (a.real == 0 && a.imag == 0)
    return b.real > 0 ? ${P}_new(0, 0) : ${P}_new(NAN, NAN);  /* numpy 2: any Re(b) > 0 */
  if (b.imag == 0 && b.real == rint(b.real) && fabs(b.real) < 100) {
    const int n = (int)b.real;
    int m = abs(n);
    $T out = ${P}_new(1, 0), x = a;
    while (m) { if (m & 1) out = ${P}_mul(out, x); x = ${P}_mul(x, x); m >>= 1; }
    return n < 0 ? hal_${P}_divide(${P}_new(1, 0), out) : out;
  }
  return ${P}_pow(a, b);
}
""")

UNARY = ("exp", "sin", "cos", "tanh", "sqrt")  # hal_<prefix>_<name>(z) in helpers()
BINARY = {"divide": "divide", "power": "pow"}  # op -> hal_<prefix>_<name>(a, b)


@functools.cache
def helpers(d: np.dtype) -> str:
    """The helper functions for complex dtype d (complex64 computes in float)."""
    double = cltypes.real_compute(d) == "double"
    p = cltypes.cprefix(d)
    return _SOURCE.substitute(T=f"{p}_t", R=cltypes.real_compute(d), P=p,
                              LIMIT="DBL" if double else "FLT", SHIFT=27 if double else 12)
