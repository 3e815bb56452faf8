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
template <typename T>  // numpy's Smith division: by zero it gives inf or NaN as numpy does
__device__ complex<T> hal_cdiv(const complex<T>& a, const complex<T>& b) {
  const T br = fabs(b.real()), bi = fabs(b.imag());
  if (br >= bi) {
    if (br == 0 && bi == 0) return complex<T>(a.real() / br, a.imag() / br);
    const T rat = b.imag() / b.real(), scl = T(1) / (b.real() + b.imag() * rat);
    return complex<T>((a.real() + a.imag() * rat) * scl, (a.imag() - a.real() * rat) * scl);
  }
  const T rat = b.real() / b.imag(), scl = T(1) / (b.imag() + b.real() * rat);
  return complex<T>((a.real() * rat + a.imag()) * scl, (a.imag() * rat - a.real()) * scl);
}
template <typename T>  // numpy's: a ** 0 = 1, 0 ** b = 0 for Re(b) > 0, integers by squaring
__device__ complex<T> hal_cpow(const complex<T>& a, const complex<T>& b) {
  if (b.real() == 0 && b.imag() == 0) return complex<T>(1, 0);
  if (a.real() == 0 && a.imag() == 0) {
    const T nan = a.real() / a.real();
    return b.real() > 0 ? complex<T>(0, 0) : complex<T>(nan, nan);
  }
  if (b.imag() == 0 && b.real() == rint(b.real()) && fabs(b.real()) < 100) {
    const int n = (int)b.real();
    int m = n < 0 ? -n : n;
    complex<T> out(1, 0), x = a;
    while (m) { if (m & 1) out = out * x; x = x * x; m >>= 1; }
    return n < 0 ? hal_cdiv(complex<T>(1, 0), out) : out;
  }
  return pow(a, b);
}
"""
"""complex<T>'s operators as the functions the C table calls (complex.cuh has no such
names), and numpy's division and power (complex.cuh's give NaN where numpy gives inf, and
NaN for 0 ** 0); exp, log, sqrt, sin, cos, tanh, abs and conj are complex.cuh's own."""


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
        """complex<T>'s constructor, its operators and numpy's division and power as hal_c*
        functions, complex.cuh's own functions."""
        names = {f"c{fn}": fn for fn in ("exp", "log", "sqrt", "sin", "cos", "tanh", "abs",
                                         "conj")}
        names.update({f"c{fn}": f"hal_c{fn}" for fn in ("real", "imag", "neg", "add", "sub",
                                                        "mul", "div", "pow")})
        names["cnew"] = CTYPES[d]
        return names

    def complex_helpers(self, d: np.dtype, used: frozenset[str]) -> str:
        """The hal_c* functions (templates: one text serves both complex dtypes)."""
        return COMPLEX_HELPERS


DIALECT = CudaDialect()
