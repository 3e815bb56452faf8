"""Complex exp, sin, cos, tanh, sqrt, division and power in C as numpy computes them, written
once for OpenCL C and CUDA C++.

numpy's complex functions are C99's (Annex G): defined results for infinite and NaN
parts and no spurious overflow (sqrt near the largest float, exp/sinh/cosh whose
exp(x) overflows while the product with cos y or sin y does not). Complex libraries
(pyopencl-complex.h, cupy's complex.cuh) compute the plain formulas or FreeBSD's choices,
which differ from numpy's where C99 leaves the sign of a zero or an infinity open, and
their division by zero gives NaN where numpy's (Smith's algorithm) gives inf. These
functions follow FreeBSD's msun case by case, and glibc's choices (numpy's on Linux)
where C99 leaves them open; sin and cos go through sinh and cosh as sin z = -i sinh(iz),
cos z = cosh(iz).

A language supplies a `Spelling` (its qualifier, types, and the names of the complex
constructor, parts, product and general power); the functions are named
hal_<prefix>_<name> for the names of FUNCTIONS.
"""

from __future__ import annotations

from dataclasses import dataclass
from string import Template

import numpy as np

from ...runtime import dtypes as dt

FUNCTIONS = ("exp", "sin", "cos", "tanh", "sqrt", "divide", "pow")
"""The functions `source` defines, as hal_<prefix>_<name>: the unary ones of z, divide and
pow of (a, b)."""


@dataclass(frozen=True)
class Spelling:
    """How a C-like language spells what the functions need, for one complex dtype."""

    qualifier: str  # of the functions: "inline" (OpenCL C), "__device__" (CUDA C++)
    complex: str  # the complex type
    real: str  # the real type its parts compute in
    prefix: str  # the functions' names are hal_<prefix>_<name>
    new: str  # new(re, im): a complex value
    re: str  # re(z), im(z): its parts
    im: str
    mul: str  # mul(a, b): the product
    pow: str  # pow(a, b): the library's general power


_SOURCE = Template("""
$Q $T hal_${P}_expcis($R x, $R c, $R s) {  /* exp(x) (c + i s), x finite or not */
  const $R e = exp(x);
  if (!isinf(e) || !isfinite(x)) return $new(e * c, e * s);
  const $R h = exp(x / 2);  /* exp(x) overflows alone: multiply in two halves */
  return $new(h * c * h, h * s * h);
}
$Q $T hal_${P}_exp($T z) {
  const $R x = $re(z), y = $im(z);
  if (y == 0) return $new(exp(x), y);
  if (x == 0) return $new(cos(y), sin(y));
  if (!isfinite(y)) {
    if (isinf(x)) return x < 0 ? $new(0, copysign(($R)0, y)) : $new(x, y - y);
    return $new(y - y, y - y);
  }
  return hal_${P}_expcis(x, cos(y), sin(y));
}
$Q $T hal_${P}_sinh($T z) {
  const $R x = $re(z), y = $im(z);
  if (isfinite(x) && isfinite(y)) {
    if (y == 0) return $new(sinh(x), y);
    if (fabs(x) < 22) return $new(sinh(x) * cos(y), cosh(x) * sin(y));
    const $T h = hal_${P}_expcis(fabs(x), cos(y) / 2, sin(y) / 2);  /* cosh ~ sinh ~ e^|x|/2 */
    return $new(copysign(($R)1, x) * $re(h), $im(h));
  }
  if (x == 0) return $new(x, y - y);
  if (y == 0) return $new(x + x, y);
  if (isfinite(x)) return $new(y - y, y - y);
  if (isinf(x)) return isfinite(y) ? $new(x * cos(y), fabs(x) * sin(y)) : $new(x, y - y);
  return $new((x + x) * (y - y), (x * x) * (y - y));
}
$Q $T hal_${P}_cosh($T z) {
  const $R x = $re(z), y = $im(z);
  if (isfinite(x) && isfinite(y)) {
    if (y == 0) return $new(cosh(x), x * y);
    if (fabs(x) < 22) return $new(cosh(x) * cos(y), sinh(x) * sin(y));
    const $T h = hal_${P}_expcis(fabs(x), cos(y) / 2, sin(y) / 2);
    return $new($re(h), copysign(($R)1, x) * $im(h));
  }
  if (x == 0) return $new(y - y, 0);
  if (y == 0) return $new(x * x, isnan(x) ? y : copysign(($R)1, x) * y);
  if (isfinite(x)) return $new(y - y, y - y);
  if (isinf(x))  /* |x| is inf */
    return isfinite(y) ? $new(fabs(x) * cos(y), x * sin(y)) : $new(fabs(x), x * (y - y));
  return $new((x * x) * (y - y), (x + x) * (y - y));
}
$Q $T hal_${P}_sin($T z) {
  const $R x = $re(z), y = $im(z);
  if (isinf(y) && !isfinite(x))  /* the sign of the infinity is numpy's choice */
    return $new(x - x, fabs(y));
  const $T w = hal_${P}_sinh($new(-y, x));
  return $new($im(w), -$re(w));
}
$Q $T hal_${P}_cos($T z) {
  return hal_${P}_cosh($new(-$im(z), $re(z)));
}
$Q $T hal_${P}_tanh($T z) {  /* Kahan's formula: no cancellation near the poles */
  const $R x = $re(z), y = $im(z);
  if (isnan(x)) return $new(x, y == 0 ? y : x);
  if (isinf(x))
    return $new(copysign(($R)1, x), copysign(($R)0, isinf(y) ? y : sin(y) * cos(y)));
  if (!isfinite(y)) return $new(x == 0 ? x : y - y, y - y);
  if (fabs(x) >= 22) {  /* tanh ~ +-1 + 4 i sin y cos y e^-2|x|, without overflowing sinh */
    const $R e = exp(-fabs(x));
    return $new(copysign(($R)1, x), 4 * sin(y) * cos(y) * e * e);
  }
  const $R t = tan(y), beta = 1 + t * t, s = sinh(x), rho = sqrt(1 + s * s);
  const $R den = 1 + beta * s * s;
  return $new(beta * rho * s / den, t / den);
}
$Q $T hal_${P}_sqrt($T z) {  /* the branch cut follows the sign of a zero imaginary part */
  $R a = $re(z), b = $im(z), scale = 1;
  if (a == 0 && b == 0) return $new(0, b);
  if (isinf(b)) return $new(fabs(b), b);
  if (isnan(a)) return $new(a, a);
  if (isinf(a))
    return a < 0 ? $new(fabs(b - b), copysign(a, b)) : $new(a, copysign(b - b, b));
  if (isnan(b)) return $new(b, b);
  if (fabs(a) >= $MAX / 4 || fabs(b) >= $MAX / 4) {  /* a + |z| would overflow */
    a /= 4;
    b /= 4;
    scale = 2;
  } else if (fabs(a) < $MIN && fabs(b) < $MIN) {  /* subnormal: lift, keep bits */
    a = ldexp(a, 2 * $SHIFT);
    b = ldexp(b, 2 * $SHIFT);
    scale = ldexp(($R)1, -$SHIFT);
  }
  const $R t = sqrt((fabs(a) + hypot(a, b)) / 2);
  if (a >= 0) return $new(t * scale, b / (2 * t) * scale);
  return $new(fabs(b) / (2 * t) * scale, copysign(t, b) * scale);
}
$Q $T hal_${P}_divide($T a, $T b) {  /* numpy's Smith division; by 0 gives inf or NaN */
  const $R ar = $re(a), ai = $im(a), br = $re(b), bi = $im(b);
  if (fabs(br) >= fabs(bi)) {
    if (br == 0 && bi == 0) return $new(ar / fabs(br), ai / fabs(br));
    const $R rat = bi / br, scl = 1 / (br + bi * rat);
    return $new((ar + ai * rat) * scl, (ai - ar * rat) * scl);
  }
  const $R rat = br / bi, scl = 1 / (bi + br * rat);
  return $new((ar * rat + ai) * scl, (ai * rat - ar) * scl);
}
$Q $T hal_${P}_pow($T a, $T b) {  /* 0**0 = 1; integer exponents by squaring */
  if ($re(b) == 0 && $im(b) == 0) return $new(1, 0);
  if ($re(a) == 0 && $im(a) == 0) {  /* numpy 2: 0 for any Re(b) > 0, else NaN */
    const $R nan = fabs($re(a) / $re(a));
    return $re(b) > 0 ? $new(0, 0) : $new(nan, nan);
  }
  if ($im(b) == 0 && $re(b) == rint($re(b)) && fabs($re(b)) < 100) {
    const int n = (int)$re(b);
    int m = n < 0 ? -n : n;
    $T out = $new(1, 0), x = a;
    while (m) { if (m & 1) out = $mul(out, x); x = $mul(x, x); m >>= 1; }
    return n < 0 ? hal_${P}_divide($new(1, 0), out) : out;
  }
  return $pow(a, b);
}
""")


def source(d: np.dtype, spelling: Spelling) -> str:
    """The functions for complex dtype d in the language that `spelling` describes."""
    real = dt.real_dtype(d)
    info = np.finfo(real)
    suffix = "f" if real == dt.float32 else ""
    return _SOURCE.substitute(
        Q=spelling.qualifier, T=spelling.complex, R=spelling.real, P=spelling.prefix,
        new=spelling.new, re=spelling.re, im=spelling.im, mul=spelling.mul, pow=spelling.pow,
        MAX=f"{float(info.max)!r}{suffix}", MIN=f"{float(info.smallest_normal)!r}{suffix}",
        SHIFT=27 if real == dt.float64 else 12)
