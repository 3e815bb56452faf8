"""One generated CUDA kernel per elementwise fused group of a graph (`compile_fused`).

`source(body)` is a pure function (no cupy, no GPU): the CUDA C++ of a RawKernel with one
thread per output element, each input read at its broadcast offset (index arithmetic
specialised to the body's shapes: `p[i]` for an input shaped as the output, `p[0]` for a
0-d one), the body's ops as C++ expressions with numpy's semantics (NaN-propagating
maximum/minimum, floor_divide/remainder as numpy's divmod with integer division by zero
0, integer arithmetic wrapping through the unsigned type, complex through cupy's
complex.cuh as cupy's own ufuncs) and 0-d constants inlined as literals. float16,
bfloat16 and reduce bodies are declined: they run node by node on cupy's kernels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from hal import dtypes as dt
from hal import ops
from hal.compile.graph import Graph

from .. import fusion
from .elementwise import DIVMOD

BLOCK = 256  # threads per block
COMPLEX_HEADER = "#include <cupy/complex.cuh>"
CTYPES = {
    dt.bool_: "bool", dt.int8: "signed char", dt.uint8: "unsigned char", dt.int32: "int",
    dt.int64: "long long", dt.float32: "float", dt.float64: "double",
    dt.complex64: "complex<float>", dt.complex128: "complex<double>",
}
UNSIGNED = {dt.int8: "unsigned char", dt.uint8: "unsigned char", dt.int32: "unsigned int",
            dt.int64: "unsigned long long"}
_INF_NAN = {  # bit patterns of inf and NaN: no math header constants under NVRTC
    dt.float32: ("__int_as_float(0x7f800000)", "__int_as_float(0x7fc00000)"),
    dt.float64: ("__longlong_as_double(0x7ff0000000000000LL)",
                 "__longlong_as_double(0x7ff8000000000000LL)"),
}
_FLOAT_DIVMOD = DIVMOD + """
template <typename T> __device__ T hal_floor_divide(T a, T b) { T r; return hal_divmod(a, b, &r); }
template <typename T> __device__ T hal_remainder(T a, T b) { T r; hal_divmod(a, b, &r); return r; }
"""


@dataclass(frozen=True)
class KernelSource:
    """A generated kernel: its CUDA C++, its name, and the arguments it takes in order
    (out, then the body's inputs; all contiguous arrays), covering `size` threads."""

    text: str
    name: str
    args: tuple[str, ...]
    size: int


# -- source (pure) --------------------------------------------------------------------------
def literal(value, d: np.dtype) -> str:
    """A 0-d constant as a CUDA C++ literal of dtype d."""
    if dt.is_complex(d):
        r = dt.real_dtype(d)
        return f"{CTYPES[d]}({literal(value.real, r)}, {literal(value.imag, r)})"
    if dt.is_bool(d):
        return "true" if value else "false"
    if dt.is_integer(d):
        v = int(value)
        return "(-9223372036854775807LL - 1)" if v == -(2**63) else f"(({CTYPES[d]}){v}LL)"
    v = float(value)
    if math.isfinite(v):
        return f"(({CTYPES[d]}){v!r})"
    inf, nan = _INF_NAN[d]
    return nan if math.isnan(v) else inf if v > 0 else f"(-{inf})"


def _wrap(d, a: str, op: str, b: str) -> str:
    """Integer a op b wrapping as numpy does (unsigned arithmetic: no signed overflow)."""
    u = UNSIGNED[d]
    return f"(({CTYPES[d]})(({u}){a} {op} ({u}){b}))"


def _expr(op: str, d: np.dtype, out: np.dtype, a: list[str]) -> str:
    """The C++ expression of an op on operand texts `a` of dtype d (result dtype out)."""
    x = a[0]
    integer, complex_ = dt.is_integer(d), dt.is_complex(d)
    if op == "where":
        return f"({x} ? {a[1]} : {a[2]})"
    if op == "astype":
        return _cast(x, d, out)
    if op == "complex":
        return f"{CTYPES[out]}({x}, {a[1]})"
    if op in ("real", "imag"):
        return f"{x}.{op}()"
    if op == "negative":
        return _wrap(d, "0", "-", x) if integer else f"(-{x})"
    if op == "abs":
        if d == dt.uint8:
            return x
        if integer:
            return f"({x} < 0 ? {_wrap(d, '0', '-', x)} : {x})"
        return f"abs({x})" if complex_ else f"fabs({x})"
    if len(a) == 1:  # conj exp log sqrt sin cos tanh erf
        return f"{op}({x})"
    y = a[1]
    if op in ("add", "subtract", "multiply"):
        sym = {"add": "+", "subtract": "-", "multiply": "*"}[op]
        return _wrap(d, x, sym, y) if integer else f"({x} {sym} {y})"
    if op in ("maximum", "minimum"):
        nan = f" || {x} != {x}" if dt.is_floating(d) else ""
        return f"(({x} {'>' if op == 'maximum' else '<'} {y}{nan}) ? {x} : {y})"
    if op in ("floor_divide", "remainder"):
        return f"hal_{op}{'_' + d.name if integer else ''}({x}, {y})"
    if op == "power":
        return f"hal_ipow_{d.name}({x}, {y})" if integer else f"pow({x}, {y})"
    sym = {"divide": "/", "equal": "==", "less": "<", "greater": ">"}[op]
    return f"({x} {sym} {y})"


def _cast(x: str, src: np.dtype, dst: np.dtype) -> str:
    """x converted from src to dst as numpy converts (float to int through long long)."""
    if dst == dt.bool_:
        return f"({x}.real() != 0 || {x}.imag() != 0)" if dt.is_complex(src) else f"({x} != 0)"
    if dt.is_complex(dst):
        r = CTYPES[dt.real_dtype(dst)]
        if dt.is_complex(src):
            return f"{CTYPES[dst]}(({r}){x}.real(), ({r}){x}.imag())"
        return f"{CTYPES[dst]}(({r}){x}, ({r})0)"
    if dt.is_integer(dst) and dt.is_floating(src):
        return f"(({CTYPES[dst]})(long long){x})"
    return f"(({CTYPES[dst]}){x})"


def _integer_helpers(op: str, d: np.dtype) -> str:
    """hal_ipow_T (by squaring, wrapping), or hal_floor_divide_T and hal_remainder_T
    (Python's floor and sign of the divisor; x // 0 and x % 0 are 0; MIN // -1 wraps)."""
    t, u, n = CTYPES[d], UNSIGNED[d], d.name
    if op == "power":
        return (f"__device__ {t} hal_ipow_{n}({t} b, {t} e) {{\n"
                f"  {u} r = 1, x = ({u})b, m = ({u})e;\n"
                f"  while (m) {{ if (m & 1) r *= x; x *= x; m >>= 1; }}\n"
                f"  return ({t})r;\n}}\n")
    if d == dt.uint8:
        return (f"__device__ {t} hal_floor_divide_{n}({t} a, {t} b) {{ return b ? a / b : 0; }}\n"
                f"__device__ {t} hal_remainder_{n}({t} a, {t} b) {{ return b ? a % b : 0; }}\n")
    return (f"__device__ {t} hal_floor_divide_{n}({t} a, {t} b) {{\n"
            f"  if (b == 0) return 0;\n  if (b == -1) return {_wrap(d, '0', '-', 'a')};\n"
            f"  const {t} q = a / b;\n"
            f"  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;\n}}\n"
            f"__device__ {t} hal_remainder_{n}({t} a, {t} b) {{\n"
            f"  if (b == 0 || b == -1) return 0;\n  const {t} r = a % b;\n"
            f"  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;\n}}\n")


def _supported(body: Graph) -> bool:
    held = [d for _, d in body.inputs] + [n.dtype for n in body.nodes]
    if not set(held) <= set(CTYPES):
        return False
    return all(body.meta(n.inputs[ops.spec(n.op).key])[1] in ops.spec(n.op).dtypes
               for n in body.nodes)


def source(body: Graph) -> KernelSource | None:
    """The kernel of an elementwise fused body, or None to decline it (a reduce body, with
    an epilogue or without, a dtype without a CUDA type here, or what `fusion.layout`
    declines)."""
    found = fusion.layout(body)
    if found is None or found.reduction is not None or not _supported(body):
        return None
    size = math.prod(found.shape)
    index = "int" if size < 2**30 else "long long"  # 32-bit index arithmetic where it fits
    helpers: dict[str, None] = {}  # ordered set
    lines = [f"const {index} i = ({index})blockIdx.x * blockDim.x + threadIdx.x;",
             f"if (i >= {size}) return;"]
    assignments, _, offsets = fusion.input_offsets(found, body.inputs)
    lines += [f"const {index} {name} = {e};" for name, e in assignments]
    lines += [f"const {CTYPES[d]} x{k} = p{k}[{e}];"
              for k, ((_, d), e) in enumerate(zip(body.inputs, offsets))]
    for k, node in enumerate(body.nodes):
        d = body.meta(node.inputs[0 if node.op != "where" else 1])[1]
        if node.op in ("floor_divide", "remainder", "power") and dt.is_integer(d):
            helpers[_integer_helpers(node.op, d)] = None
        elif node.op in ("floor_divide", "remainder"):
            helpers[_FLOAT_DIVMOD] = None
        args = [fusion.operand(body, ref, literal) for ref in node.inputs]
        lines.append(f"const {CTYPES[node.dtype]} v{k} = {_expr(node.op, d, node.dtype, args)};")
    lines.append(f"out[i] = v{len(body.nodes) - 1};")
    dtypes = [body.nodes[-1].dtype] + [d for _, d in body.inputs]
    params = [f"{CTYPES[dtypes[0]]}* __restrict__ out"]
    params += [f"const {CTYPES[d]}* __restrict__ p{k}" for k, d in enumerate(dtypes[1:])]
    header = COMPLEX_HEADER + "\n" if any(dt.is_complex(d) for d in dtypes + [
        n.dtype for n in body.nodes]) else ""
    text = (header + "".join(helpers) + 'extern "C" __global__ void hal_fused('
            + ", ".join(params) + ") {\n  " + "\n  ".join(lines) + "\n}\n")
    return KernelSource(text, "hal_fused", ("out", *(f"p{k}" for k in range(len(body.inputs)))),
                        size)


# -- compiling and launching (cupy) ------------------------------------------------------------
_COMPILED: dict[tuple[str, str], object] = {}


def compile_fused(device, body: Graph):
    """The prepared kernel of a fused body on a CUDA device, or None to decline it.
    Compiled once per (device, body.key()); cupy caches the binary on disk."""
    key = (device.name, body.key())
    if key not in _COMPILED:
        generated = source(body)
        _COMPILED[key] = None if generated is None else FusedKernel(device, generated)
    return _COMPILED[key]


class FusedKernel:
    """A fused group's prepared kernel: `fn(*arrays, out=out)` writes out and returns it
    (inputs that are not C-contiguous are copied first)."""

    takes_out = True

    def __init__(self, device, generated: KernelSource):
        import cupy

        self.device = device
        self.kernel = cupy.RawKernel(generated.text, generated.name)
        device.launch("fused", self.kernel.compile, (), {})  # compile errors surface here
        self.grid = (-(-generated.size // BLOCK),)
        self.contiguous = cupy.ascontiguousarray

    def __call__(self, *arrays, out):
        if self.grid[0]:
            args = (out, *(a if a.flags.c_contiguous else self.contiguous(a) for a in arrays))
            with self.device.cuda_device:
                self.kernel(self.grid, (BLOCK,), args)
        return out
