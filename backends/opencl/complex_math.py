"""Complex exp, sin, cos, tanh, sqrt, division and power in OpenCL C as numpy computes them:
the op set's C (hal/ops/expressions/complex_c.py, numpy's special values, C99 Annex G)
spelled with pyopencl-complex.h's types and functions, whose own give NaN for inf * 0,
overflow early and divide by zero to NaN where numpy gives inf.
"""

from __future__ import annotations

import functools

import numpy as np

from hal.ops.expressions import complex_c

from . import cltypes

UNARY = ("exp", "sin", "cos", "tanh", "sqrt")  # hal_<prefix>_<name>(z) in helpers(), beside
# hal_<prefix>_divide(a, b) and hal_<prefix>_pow(a, b)


@functools.cache
def helpers(d: np.dtype) -> str:
    """The helper functions for complex dtype d (complex64 computes in float)."""
    p = cltypes.cprefix(d)
    return complex_c.source(d, complex_c.Spelling(
        qualifier="inline", complex=f"{p}_t", real=cltypes.real_compute(d), prefix=p,
        new=f"{p}_new", re=f"{p}_real", im=f"{p}_imag", mul=f"{p}_mul", pow=f"{p}_pow"))
