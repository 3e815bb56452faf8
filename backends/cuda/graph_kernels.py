"""One generated CUDA kernel per elementwise fused group of a graph (`compile_fused`).

`source(body)` is a pure function (no cupy, no GPU): the CUDA C++ of a RawKernel. A body
whose inputs are all of the output's shape or 0-d gets a vector kernel (vector.py's 16-byte
vectors, as many elements to a thread; element by element at the tail or where the arrays
are not aligned); any other has one thread per output element, each input read at its
broadcast offset (index arithmetic specialised to the body's shapes: `p[i]` for an input
shaped as the output, `p[0]` for a 0-d one), the body's ops as the op set's C expressions
(hal/ops/expressions/c.py, spelled for CUDA by dialect.py: numpy's semantics, NaN-
propagating maximum/minimum, floor_divide/remainder as numpy's divmod with integer division
by zero 0, integer arithmetic wrapping through the unsigned type, complex through cupy's
complex.cuh, as the eager kernels of elementwise.py) and 0-d constants inlined as literals.
float16, bfloat16 and reduce bodies are declined: they run node by node on cupy's kernels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from hal import dtypes as dt
from hal import ops
from hal.compile.graph import Graph
from hal.ops.expressions import c

from .. import fusion
from . import vector
from .dialect import CTYPES, DIALECT

BLOCK = 256  # threads per block
COMPLEX_HEADER = "#include <cupy/complex.cuh>"
_INF_NAN = {  # bit patterns of inf and NaN: no math header constants under NVRTC
    dt.float32: ("__int_as_float(0x7f800000)", "__int_as_float(0x7fc00000)"),
    dt.float64: ("__longlong_as_double(0x7ff0000000000000LL)",
                 "__longlong_as_double(0x7ff8000000000000LL)"),
}


@dataclass(frozen=True)
class KernelSource:
    """A generated kernel: its CUDA C++, its name, and the arguments it takes in order
    (out, then the body's inputs; all contiguous arrays), covering `size` elements,
    `width` to a thread. A vector kernel (width > 1) takes one more argument, `aligned`:
    nonzero when out and each input read whole (`full`) are aligned to their vectors."""

    text: str
    name: str
    args: tuple[str, ...]
    size: int
    width: int = 1
    full: tuple[bool, ...] = ()


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
    assignments, _, offsets = fusion.input_offsets(found, body.inputs)
    helpers: dict[str, None] = {}  # ordered set
    compute = []
    for k, node in enumerate(body.nodes):
        d = body.meta(node.inputs[ops.spec(node.op).key])[1]
        args = [fusion.operand(body, ref, literal) for ref in node.inputs]
        text, needed = c.render(node.op, args, d, node.dtype, DIALECT)
        helpers.update(dict.fromkeys(needed))
        compute.append(f"const {CTYPES[node.dtype]} v{k} = {text};")
    last = f"v{len(body.nodes) - 1}"
    dtypes = [body.nodes[-1].dtype] + [d for _, d in body.inputs]
    params = [f"{CTYPES[dtypes[0]]}* __restrict__ out"]
    params += [f"const {CTYPES[d]}* __restrict__ p{k}" for k, d in enumerate(dtypes[1:])]
    held = dtypes + [n.dtype for n in body.nodes]
    full = tuple(e == "i" for e in offsets)
    w = 1 if assignments or any(dt.is_complex(d) for d in held) else vector.width(
        [d for d, f in zip(dtypes, (True, *full)) if f])
    args = ("out", *(f"p{k}" for k in range(len(body.inputs))))
    if w < 2 or size < w:
        lines = [f"const {index} i = ({index})blockIdx.x * blockDim.x + threadIdx.x;",
                 f"if (i >= {size}) return;"]
        lines += [f"const {index} {name} = {e};" for name, e in assignments]
        lines += [f"const {CTYPES[d]} x{k} = p{k}[{e}];"
                  for k, ((_, d), e) in enumerate(zip(body.inputs, offsets))]
        lines += [*compute, f"out[i] = {last};"]
        header = COMPLEX_HEADER + "\n" if any(dt.is_complex(d) for d in held) else ""
        return KernelSource(_kernel(header + "".join(helpers), params, lines), "hal_fused",
                            args, size)
    vec = {d: f"hal_vec<{CTYPES[d]}, {w}>" for d in dtypes}
    lane = [f"const {CTYPES[d]} x{k} = " + (f"X{k}.v[l];" if f else f"p{k}[0];")
            for k, ((_, d), f) in enumerate(zip(body.inputs, full))]
    each = [f"const {CTYPES[d]} x{k} = p{k}[{e}];"
            for k, ((_, d), e) in enumerate(zip(body.inputs, offsets))]
    out = vec[dtypes[0]]
    lines = [f"const {index} base = (({index})blockIdx.x * blockDim.x + threadIdx.x) * {w};",
             f"if (base >= {size}) return;",
             f"if (aligned && base + {w} <= {size}) {{",
             *[f"  const {vec[d]} X{k} = *reinterpret_cast<const {vec[d]}*>(p{k} + base);"
               for k, ((_, d), f) in enumerate(zip(body.inputs, full)) if f],
             f"  {out} y;", "  #pragma unroll", f"  for (int l = 0; l < {w}; l++) {{",
             *[f"    {x}" for x in lane + compute], f"    y.v[l] = {last};", "  }",
             f"  *reinterpret_cast<{out}*>(out + base) = y;", "} else {",
             f"  for ({index} i = base; i < {size} && i < base + {w}; i++) {{",
             *[f"    {x}" for x in each + compute], f"    out[i] = {last};", "  }", "}"]
    return KernelSource(_kernel("".join(helpers) + vector.VECTOR_TYPE, [*params, "int aligned"],
                                lines), "hal_fused", args, size, w, full)


def _kernel(preamble: str, params: list[str], lines: list[str]) -> str:
    return (preamble + 'extern "C" __global__ void hal_fused(' + ", ".join(params) + ") {\n  "
            + "\n  ".join(lines) + "\n}\n")


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
    (inputs that are not C-contiguous are copied first; a vector kernel is told whether
    the arrays it reads whole are aligned to its vectors)."""

    takes_out = True

    def __init__(self, device, generated: KernelSource):
        import cupy

        self.device = device
        self.generated = generated
        self.kernel = cupy.RawKernel(generated.text, generated.name)
        device.launch("fused", self.kernel.compile, (), {})  # compile errors surface here
        self.grid = (-(-generated.size // (generated.width * BLOCK)),)
        self.contiguous = cupy.ascontiguousarray

    def __call__(self, *arrays, out):
        if self.grid[0]:
            args = (out, *(a if a.flags.c_contiguous else self.contiguous(a) for a in arrays))
            width = self.generated.width
            if width > 1:
                whole = [args[0], *(a for a, f in zip(args[1:], self.generated.full) if f)]
                aligned = all(vector.address(a) % (width * a.dtype.itemsize) == 0
                              for a in whole)
                args = (*args, np.int32(aligned))
            with self.device.cuda_device:
                self.kernel(self.grid, (BLOCK,), args)
        return out
