"""CUDA C++ as the op set's C expressions need it (hal/ops/expressions/c.py): cupy's C types,
`__device__` helpers, and complex<T> (cupy's complex.cuh) for the complex functions."""

from __future__ import annotations

import numpy as np

from hal import dtypes as dt

CTYPES = {
    dt.bool_: "bool", dt.int8: "signed char", dt.uint8: "unsigned char", dt.int32: "int",
    dt.int64: "long long", dt.float32: "float", dt.float64: "double",
    dt.complex64: "complex<float>", dt.complex128: "complex<double>",
}
UNSIGNED = {dt.bool_: "unsigned char", dt.int8: "unsigned char", dt.uint8: "unsigned char",
            dt.int32: "unsigned int", dt.int64: "unsigned long long"}
COMPLEX_HELPERS = """
template <typename T> __device__ T hal_creal(const complex<T>& z) { return z.real(); }
template <typename T> __device__ T hal_cimag(const complex<T>& z) { return z.imag(); }
template <typename T> __device__ complex<T> hal_cneg(const complex<T>& a) { return -a; }
template <typename T>
__device__ complex<T> hal_cadd(const complex<T>& a, const complex<T>& b) { return a + b; }
template <typename T>
__device__ complex<T> hal_csub(const complex<T>& a, const complex<T>& b) { return a - b; }
template <typename T>
__device__ complex<T> hal_cmul(const complex<T>& a, const complex<T>& b) { return a * b; }
template <typename T>
__device__ complex<T> hal_cdiv(const complex<T>& a, const complex<T>& b) { return a / b; }
"""
"""complex<T>'s operators as the functions the C table calls (complex.cuh has no such
names); exp, log, sqrt, sin, cos, tanh, pow, abs and conj are complex.cuh's own."""


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
        """complex<T>'s constructor, its operators as hal_c* functions, its own functions."""
        names = {f"c{fn}": fn for fn in ("exp", "log", "sqrt", "sin", "cos", "tanh", "pow",
                                         "abs", "conj")}
        names.update({f"c{fn}": f"hal_c{fn}" for fn in ("real", "imag", "neg", "add", "sub",
                                                        "mul", "div")})
        names["cnew"] = CTYPES[d]
        return names

    def complex_helpers(self, d: np.dtype, used: frozenset[str]) -> str:
        """The hal_c* functions (templates: one text serves both complex dtypes)."""
        return COMPLEX_HELPERS


DIALECT = CudaDialect()
