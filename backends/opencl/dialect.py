"""OpenCL C as the op set's C expressions need it (hal/ops/expressions/c.py): types, helper
qualifier, and complex functions."""

from __future__ import annotations

import numpy as np

from hal import dtypes as dt

from . import cltypes, complex_math


class OpenCLDialect:
    """OpenCL C for the op set's C table: compute types, inline helpers, pyopencl-complex.h
    (add, sub, mul, neg, abs, conj, log, real, imag, new) and complex_math.py's functions
    (exp, sin, cos, tanh, sqrt, divide, pow: numpy's special values)."""

    qualifier = "inline"
    rounded_by_store = frozenset((dt.float16,))  # vstore_half_rte rounds once
    # OpenCL's abs returns the unsigned type (no overflow at the minimum); the portable
    # form becomes an llvm.abs intrinsic that Oclgrind cannot run
    overrides = {("abs", "integer"): "abs({0})"}

    def type(self, d: np.dtype) -> str:
        """The compute type of d."""
        return cltypes.compute(d)

    def unsigned(self, d: np.dtype) -> str:
        """The unsigned type of d's width."""
        return cltypes.UNSIGNED[d]

    def complex_names(self, d: np.dtype) -> dict[str, str]:
        """cfloat_*/cdouble_* functions, hal_c*_ ones where numpy's special values differ."""
        p = cltypes.cprefix(d)
        names = {f"c{fn}": f"{p}_{fn}" for fn in ("new", "real", "imag", "add", "sub", "mul",
                                                  "neg", "abs", "conj", "log")}
        names.update({f"c{fn}": f"hal_{p}_{fn}" for fn in complex_math.UNARY})
        names.update(cdiv=f"hal_{p}_divide", cpow=f"hal_{p}_pow")
        return names

    def complex_helpers(self, d: np.dtype, used: frozenset[str]) -> str:
        """complex_math.py's functions for d, where the expression calls one of them."""
        return complex_math.helpers(d) if used & _OWN else ""


_OWN = frozenset({*(f"c{fn}" for fn in complex_math.UNARY), "cdiv", "cpow"})


DIALECT = OpenCLDialect()
