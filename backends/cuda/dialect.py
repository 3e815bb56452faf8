"""CUDA C++ as the op set's C expressions need it (hal/ops/expressions/c.py): cupy's C types,
`__device__` helpers, complex<T> (cupy's complex.cuh) for complex values, and numpy's
complex functions (hal/ops/expressions/complex_c.py, as the OpenCL backend's)."""

from __future__ import annotations

import functools

import numpy as np

from hal import dtypes as dt
from hal.ops.expressions import complex_c

CTYPES = {
    dt.bool_: "bool", dt.int8: "signed char", dt.uint8: "unsigned char", dt.int32: "int",
    dt.int64: "long long", dt.float32: "float", dt.float64: "double",
    dt.complex64: "complex<float>", dt.complex128: "complex<double>",
}
UNSIGNED = {dt.bool_: "unsigned char", dt.int8: "unsigned char", dt.uint8: "unsigned char",
            dt.int32: "unsigned int", dt.int64: "unsigned long long"}
COMPLEX_OPERATORS = """
#ifndef HAL_COMPLEX_OPERATORS
#define HAL_COMPLEX_OPERATORS
template <typename T> __device__ T hal_creal(const complex<T>& z) { return z.real(); }
template <typename T> __device__ T hal_cimag(const complex<T>& z) { return z.imag(); }
template <typename T> __device__ complex<T> hal_cneg(const complex<T>& a) { return -a; }
template <typename T>
__device__ complex<T> hal_cadd(const complex<T>& a, const complex<T>& b) { return a + b; }
template <typename T>
__device__ complex<T> hal_csub(const complex<T>& a, const complex<T>& b) { return a - b; }
template <typename T>
__device__ complex<T> hal_cmul(const complex<T>& a, const complex<T>& b) { return a * b; }
#endif
"""
"""complex<T>'s operators as the functions the C table calls (complex.cuh has no such
names), once per kernel source whichever complex dtypes it holds."""

_NUMPYS = frozenset({"cexp", "csin", "ccos", "ctanh", "csqrt", "cdiv", "cpow"})
"""The complex functions computed by hal/ops/expressions/complex_c.py (numpy's special
values, where complex.cuh's give NaN or other signs); log, abs and conj are complex.cuh's."""


class CudaDialect:
    """CUDA C++ for the op set's C table, with cupy's spelling of each dtype."""

    qualifier = "__device__"
    rounded_by_store = frozenset()  # float16/bfloat16 compute in float32 (ops.in_float32)
    overrides: dict = {}

    def type(self, d: np.dtype) -> str:
        """cupy's C type of d."""
        return CTYPES[d]

    def unsigned(self, d: np.dtype) -> str:
        """The unsigned type of d's width."""
        return UNSIGNED[d]

    def complex_names(self, d: np.dtype) -> dict[str, str]:
        """complex<T>'s constructor and operators as hal_c* functions, numpy's functions of
        complex_c.py as hal_<dtype>_*, and complex.cuh's log, abs and conj."""
        names = {f"c{fn}": fn for fn in ("log", "abs", "conj")}
        names.update({f"c{fn}": f"hal_c{fn}" for fn in ("real", "imag", "neg", "add", "sub",
                                                        "mul")})
        names.update({f"c{fn}": f"hal_{d.name}_{fn}" for fn in ("exp", "sin", "cos", "tanh",
                                                              "sqrt", "pow")})
        names["cdiv"] = f"hal_{d.name}_divide"
        names["cnew"] = CTYPES[d]
        return names

    def complex_helpers(self, d: np.dtype, used: frozenset[str]) -> str:
        """The operators, and numpy's functions for d where the expression calls one."""
        if not used & _NUMPYS:
            return COMPLEX_OPERATORS
        return COMPLEX_OPERATORS + numpys_functions(d)


@functools.cache
def numpys_functions(d: np.dtype) -> str:
    """complex_c.py's functions for complex dtype d, spelled with complex.cuh's complex<T>."""
    real = CTYPES[dt.real_dtype(d)]
    return complex_c.source(d, complex_c.Spelling(
        qualifier="__device__", complex=CTYPES[d], real=real, prefix=d.name, new=CTYPES[d],
        re="hal_creal", im="hal_cimag", mul="hal_cmul", pow="pow"))


DIALECT = CudaDialect()
