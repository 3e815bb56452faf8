"""Generated CUDA C++ compiled for the host: a shim that defines what the kernels take from
CUDA (qualifiers, thread indices, bit casts, float16 conversions through _Float16), a
compiler call, and a grid launched as one call per thread."""

from __future__ import annotations

import ctypes
import shutil
import subprocess

import pytest

SHIM = """
#include <cmath>
#include <complex>
#include <cstring>
using std::complex; using std::abs; using std::conj; using std::copysign; using std::cos;
using std::erf; using std::exp; using std::fabs; using std::floor; using std::fmod;
using std::log; using std::pow; using std::sin; using std::sqrt; using std::tanh;
using std::isfinite; using std::isinf; using std::isnan; using std::rint; using std::sinh;
using std::cosh; using std::tan; using std::hypot; using std::ldexp; using std::signbit;
#define __global__
#define __device__
#define __forceinline__ inline
struct Dim { unsigned x; };
static Dim blockIdx, threadIdx, blockDim = {%d};
static float __int_as_float(int b) { float f; std::memcpy(&f, &b, 4); return f; }
static float __uint_as_float(unsigned b) { float f; std::memcpy(&f, &b, 4); return f; }
static unsigned __float_as_uint(float f) { unsigned b; std::memcpy(&b, &f, 4); return b; }
static double __longlong_as_double(long long b) { double f; std::memcpy(&f, &b, 8); return f; }
extern "C" void hal_thread(unsigned block, unsigned thread) {
  blockIdx.x = block;
  threadIdx.x = thread;
}
"""
"""Prepended to a kernel's source, with the block size for %d."""

FLOAT16 = """
static float hal_from_float16(unsigned short b) { _Float16 h; std::memcpy(&h, &b, 2); return h; }
static unsigned short hal_to_float16(float f) {
  _Float16 h = (_Float16)f; unsigned short b; std::memcpy(&b, &h, 2); return b;
}
"""
"""The float16 conversions that PTX's cvt does on a GPU, by the host's _Float16."""


def compile_library(folder, name: str, text: str) -> ctypes.CDLL:
    """text compiled by the host's C++ compiler into a loaded shared library."""
    compiler = shutil.which("c++") or shutil.which("g++")
    if compiler is None:
        pytest.skip("no C++ compiler to build the generated kernels for the host")
    path = folder / f"{name}.cpp"
    path.write_text(text)
    library = path.with_suffix(".so")
    subprocess.run([compiler, "-O1", "-shared", "-fPIC", "-w", "-o", library, path], check=True)
    return ctypes.CDLL(str(library))


def launch(lib: ctypes.CDLL, name: str, blocks: int, block: int, args) -> None:
    """Kernel `name` of lib over a grid of `blocks` x `block` threads, one call a thread."""
    fn = getattr(lib, name)
    for b in range(blocks):
        for t in range(block):
            lib.hal_thread(b, t)
            fn(*args)
