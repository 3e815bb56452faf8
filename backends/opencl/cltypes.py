"""OpenCL C spellings of hal dtypes: storage and compute types, loads, stores, preambles.

float16 lives in memory as `half` and is computed in float (vload_half/vstore_half_rte,
which need no cl_khr_fp16); bool is stored as uchar 0/1; complex64/complex128 are
pyopencl-complex.h's cfloat_t/cdouble_t (float2/double2 layout).
"""

from __future__ import annotations

import numpy as np

from hal import dtypes as dt

STORAGE = {
    dt.bool_: "uchar", dt.int8: "char", dt.uint8: "uchar", dt.int32: "int", dt.int64: "long",
    dt.float16: "half", dt.float32: "float", dt.float64: "double",
    dt.complex64: "cfloat_t", dt.complex128: "cdouble_t",
}
COMPUTE = {**STORAGE, dt.float16: "float"}
UNSIGNED = {dt.int8: "uchar", dt.uint8: "uchar", dt.int32: "uint", dt.int64: "ulong",
            dt.bool_: "uchar"}
INTEGER_LIMITS = {d: (int(np.iinfo(d).min), int(np.iinfo(d).max)) for d in dt.INTEGERS}


def storage(d: np.dtype) -> str:
    """The C type of an element in memory."""
    return STORAGE[d]


def compute(d: np.dtype) -> str:
    """The C type arithmetic on an element uses (float for float16)."""
    return COMPUTE[d]


def cprefix(d: np.dtype) -> str:
    """pyopencl-complex.h's function prefix for a complex dtype: cfloat or cdouble."""
    return "cdouble" if d == dt.complex128 else "cfloat"


def real_compute(d: np.dtype) -> str:
    """The real C type of a complex dtype's parts (or the compute type of a real one)."""
    return compute(dt.real_dtype(d))


def load(d: np.dtype, ptr: str, index: str) -> str:
    """An expression reading element `index` of `ptr` as the compute type."""
    return f"vload_half({index}, {ptr})" if d == dt.float16 else f"{ptr}[{index}]"


def store(d: np.dtype, ptr: str, index: str, value: str) -> str:
    """A statement writing `value` (any arithmetic type) to element `index` of `ptr`."""
    if d == dt.float16:
        return f"vstore_half_rte({value}, {index}, {ptr});"
    if dt.is_complex(d):
        return f"{ptr}[{index}] = {value};"
    return f"{ptr}[{index}] = ({storage(d)})({value});"


def literal(d: np.dtype, value: float) -> str:
    """A constant in the compute type of a real dtype, e.g. ((float)0.5)."""
    return f"(({compute(d)}){float(value)!r})"


def needs_fp64(dtypes) -> bool:
    """True if any dtype needs the cl_khr_fp64 extension."""
    return any(d in (dt.float64, dt.complex128) for d in dtypes)


def preamble(dtypes) -> str:
    """Pragmas and includes a program over these dtypes needs (fp64, complex helpers)."""
    dtypes = set(dtypes)
    lines = []
    if needs_fp64(dtypes):
        lines += ["#pragma OPENCL EXTENSION cl_khr_fp64 : enable",
                  "#define PYOPENCL_DEFINE_CDOUBLE"]
    if any(dt.is_complex(d) for d in dtypes):
        lines.append("#include <pyopencl-complex.h>")
    return "\n".join(lines) + "\n"


def scalar(d: np.dtype, value) -> bool | int | float | complex:
    """value converted as numpy converts to the compute type of d, as the Python number
    a kernel argument of that type (declared) takes."""
    return np.asarray(value, dtype=np.float32 if d == dt.float16 else d).item()
