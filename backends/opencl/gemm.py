"""Tiled GEMM: matmul (batched, broadcasting, 1-d operands), qmatmul (int8 with int32
accumulation) and linear (bias and activation fused into the store).

Two kernel shapes, chosen per device: on GPUs (and for dtypes without vector math) a
work-group computes a TM x TN tile of C through local-memory tiles of A and B, TK deep,
each work-item holding an RM x RN block of accumulators; on CPU devices (PoCL) a
work-item computes an 8 x V block with explicit vector types and no barriers, which
PoCL runs about 3x faster, and a one-element-per-item kernel covers the ragged edges.
A is row-major (hal tensors are contiguous); B is read through strides, so a transposed
B (attention's K^T) costs no copy;
batch broadcasting is a table of per-batch offsets.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from hal import dtypes as dt
from hal import shapes

from . import cltypes
from .elementwise import expression
from .table import kernels


@dataclass(frozen=True)
class Tile:
    """Work-group tile TM x TN, depth TK; RM x RN accumulators per work-item."""

    tm: int
    tn: int
    tk: int
    rm: int
    rn: int

    @property
    def local(self) -> tuple[int, int]:
        """The work-group shape (along N, along M)."""
        return self.tn // self.rn, self.tm // self.rm


def tile_for(device, m: int, n: int) -> Tile:
    """The local-memory tile for a device and problem: big register blocks where they fit."""
    if device.max_group >= 256 and device.local_mem >= 32768 and m >= 64 and n >= 64:
        return Tile(64, 64, 16, 4, 4)
    if device.max_group >= 64:
        return Tile(32, 32, 8, 4, 4)
    return Tile(8, 8, 8, 1, 1)


VECTOR_ROWS = 8
VECTOR_WIDTH = {dt.float32: 8, dt.float64: 4}  # PoCL's LLVM 14 breaks on 16-wide fma


@dataclass(frozen=True)
class Epilogue:
    """What the store does: scale, bias (a vector along N), activation."""

    scale: bool = False
    bias: bool = False
    activation: str | None = None


class Variant:
    """The C pieces one GEMM variant shares between its kernel shapes."""

    def __init__(self, a_dtype, b_dtype, out_dtype, ep: Epilogue, quant: bool):
        self.a, self.b, self.out, self.ep, self.quant = a_dtype, b_dtype, out_dtype, ep, quant
        acc = dt.int32 if quant else out_dtype
        self.cp = cltypes.cprefix(acc) if dt.is_complex(acc) else ""
        if quant or acc in (dt.int8, dt.uint8, dt.int32):
            self.acc_t = "uint"  # integers wrap like numpy: accumulate unsigned, no C overflow UB
        elif acc == dt.int64:
            self.acc_t = "ulong"
        else:
            self.acc_t = cltypes.compute(acc)
        self.zero = f"{self.cp}_new(0, 0)" if self.cp else "0"
        self.preamble = cltypes.preamble([a_dtype, b_dtype, acc, out_dtype])

    def params(self) -> str:
        """The kernel's parameter list."""
        p = [f"__global const {cltypes.storage(self.a)} *A", "long a_off",
             f"__global const {cltypes.storage(self.b)} *B", "long b_off",
             f"__global {cltypes.storage(self.out)} *C", "__global const long *batch_a",
             "__global const long *batch_b", "int M", "int N", "int K",
             "long sbk", "long sbn", "int m_begin", "int n_begin"]
        if self.quant:
            p += ["int a_zp", "int b_zp"]
        if self.ep.scale:
            p.append(f"{cltypes.compute(self.out)} alpha")
        if self.ep.bias:
            p.append(f"__global const {cltypes.storage(self.out)} *bias")
        return ", ".join(p)

    def load_a(self, index: str) -> str:
        """A's element at index in the accumulator type (zero point removed for qmatmul)."""
        e = cltypes.load(self.a, "A", index)
        if self.quant:
            return f"(uint)((int)({e}) - a_zp)"
        return f"({self.acc_t})({e})" if self.acc_t in ("uint", "ulong") else e

    def load_b(self, index: str) -> str:
        """B's element at index in the accumulator type (zero point removed for qmatmul)."""
        e = cltypes.load(self.b, "B", index)
        if self.quant:
            return f"(uint)((int)({e}) - b_zp)"
        return f"({self.acc_t})({e})" if self.acc_t in ("uint", "ulong") else e

    def mac(self, c: str, a: str, b: str) -> str:
        """The statement c += a * b."""
        if self.cp:
            return f"{c} = {self.cp}_add({c}, {self.cp}_mul({a}, {b}));"
        return f"{c} += {a} * {b};"

    def store(self, acc: str, index: str, n: str) -> str:
        """Statements storing accumulator `acc` to C[index] through the epilogue."""
        value = acc
        if self.acc_t in ("uint", "ulong"):
            value = f"({'int' if self.acc_t == 'uint' else 'long'}){acc}"
        if self.ep.scale:
            value = f"({value}) * alpha"
        if self.ep.bias:
            value = f"({value}) + {cltypes.load(self.out, 'bias', n)}"
        if self.ep.activation:
            return (f"{{ const {cltypes.compute(self.out)} v = {value}; "
                    + cltypes.store(self.out, "C", index,
                                    expression(self.ep.activation, ["v"], self.out,
                                               self.out)[0]) + " }")
        return cltypes.store(self.out, "C", index, value)

    def head(self) -> str:
        """The batch's offsets into A, B and C."""
        return ("const long bz = get_global_id(2);\n"
                "  const long ao = a_off + batch_a[bz], bo = b_off + batch_b[bz], "
                "co = bz * (long)M * N;\n")

    def kernel(self, attr: str, body: str) -> str:
        """The whole source of a kernel `gemm` with this variant's parameters and a body."""
        return (self.preamble + f"__kernel {attr} void gemm(" + self.params() + ")\n{\n  "
                + self.head() + body + "\n}\n")


def tiled_source(v: Variant, tile: Tile) -> str:
    """Local-memory tiled GEMM over all of C (m_begin/n_begin are 0)."""
    lx, ly = tile.local
    tm, tn, tk, rm, rn = tile.tm, tile.tn, tile.tk, tile.rm, tile.rn
    body = f"""const int tx = get_local_id(0), ty = get_local_id(1);
  const int lid = ty * {lx} + tx;
  const int n0 = get_group_id(0) * {tn}, m0 = get_group_id(1) * {tm};
  __local {v.acc_t} As[{tk}][{tm}];
  __local {v.acc_t} Bs[{tk}][{tn}];
  {v.acc_t} acc[{rm}][{rn}];
  for (int i = 0; i < {rm}; ++i)
    for (int j = 0; j < {rn}; ++j) acc[i][j] = {v.zero};
  for (int k0 = 0; k0 < K; k0 += {tk}) {{
    for (int l = lid; l < {tk * tm}; l += {lx * ly}) {{
      const int mm = l / {tk}, kk = l % {tk};
      const int m = m0 + mm, k = k0 + kk;
      As[kk][mm] = (m < M && k < K) ? {v.load_a("ao + (long)m * K + k")} : {v.zero};
    }}
    for (int l = lid; l < {tk * tn}; l += {lx * ly}) {{
      const int kk = l / {tn}, nn = l % {tn};
      const int n = n0 + nn, k = k0 + kk;
      Bs[kk][nn] = (n < N && k < K) ? {v.load_b("bo + (long)k * sbk + (long)n * sbn")} : {v.zero};
    }}
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int kk = 0; kk < {tk}; ++kk) {{
      {v.acc_t} a[{rm}], b[{rn}];
      for (int i = 0; i < {rm}; ++i) a[i] = As[kk][ty + i * {ly}];
      for (int j = 0; j < {rn}; ++j) b[j] = Bs[kk][tx + j * {lx}];
      for (int i = 0; i < {rm}; ++i)
        for (int j = 0; j < {rn}; ++j) {{ {v.mac("acc[i][j]", "a[i]", "b[j]")} }}
    }}
    barrier(CLK_LOCAL_MEM_FENCE);
  }}
  for (int i = 0; i < {rm}; ++i)
    for (int j = 0; j < {rn}; ++j) {{
      const int m = m0 + ty + i * {ly}, n = n0 + tx + j * {lx};
      if (m < M && n < N) {{ {v.store("acc[i][j]", "co + (long)m * N + n", "n")} }}
    }}"""
    return v.kernel(f"__attribute__((reqd_work_group_size({lx}, {ly}, 1)))", body)


def vector_source(v: Variant) -> str:
    """CPU GEMM: each work-item an 8 x V block of C in vector registers (B rows contiguous)."""
    w, rows = VECTOR_WIDTH[v.out], VECTOR_ROWS
    t = f"{cltypes.compute(v.out)}{w}"
    lines = [f"const int n0 = get_global_id(0) * {w}, m0 = get_global_id(1) * {rows};"]
    lines += [f"{t} c{i} = 0;" for i in range(rows)]
    lines += [f"__global const {cltypes.storage(v.a)} *a{i} = A + ao + (long)(m0 + {i}) * K;"
              for i in range(rows)]
    lines.append(f"__global const {cltypes.storage(v.b)} *bk = B + bo + n0;")
    lines.append("for (int k = 0; k < K; ++k, bk += sbk) {")
    lines.append(f"  const {t} b = vload{w}(0, bk);")
    lines += [f"  c{i} += ({t})a{i}[k] * b;" for i in range(rows)]
    lines.append("}")
    if v.ep == Epilogue():
        lines += [f"vstore{w}(c{i}, 0, C + co + (long)(m0 + {i}) * N + n0);" for i in range(rows)]
    else:
        lines += [f"for (int j = 0; j < {w}; ++j) {{"]
        for i in range(rows):
            lines.append("  { const int n = n0 + j; "
                         + v.store(f"((const {cltypes.compute(v.out)} *)&c{i})[j]",
                                   f"co + (long)(m0 + {i}) * N + n", "n") + " }")
        lines.append("}")
    return v.kernel("", "\n  ".join(lines))


def naive_source(v: Variant) -> str:
    """One element of C per work-item, over the region from (m_begin, n_begin)."""
    body = f"""const int n = n_begin + get_global_id(0), m = m_begin + get_global_id(1);
  if (m < M && n < N) {{
    {v.acc_t} acc = {v.zero};
    for (int k = 0; k < K; ++k) {{
      const {v.acc_t} a = {v.load_a("ao + (long)m * K + k")};
      const {v.acc_t} b = {v.load_b("bo + (long)k * sbk + (long)n * sbn")};
      {v.mac("acc", "a", "b")}
    }}
    {v.store("acc", "co + (long)m * N + n", "n")}
  }}"""
    return v.kernel("", body)


def _batch_offsets(device, batch_shape, own_batch, matrix_size):
    """Device table of each broadcast batch's element offset into an operand (cached)."""
    key = ("gemm batch", tuple(batch_shape), tuple(own_batch), matrix_size)
    table = device.cache.get(key)
    if table is None:
        table = device.cache[key] = _offsets(device, batch_shape, own_batch, matrix_size)
    return table


def _offsets(device, batch_shape, own_batch, matrix_size):
    count = math.prod(own_batch)
    offsets = np.arange(count, dtype=np.int64).reshape(own_batch) * matrix_size
    lead = len(batch_shape) - len(own_batch)
    offsets = np.broadcast_to(offsets.reshape((1,) * lead + tuple(own_batch)), batch_shape)
    return device.upload(np.ascontiguousarray(offsets).reshape(-1))


def gemm(device, op: str, a, b, *, out_dtype, transpose_b=False, quant_zero_points=None,
         scale=None, bias=None, activation=None):
    """numpy.matmul semantics over device arrays, with the epilogue fused into the store.

    transpose_b reads b (..., N, K) as its transpose without a copy.
    """
    a_shape, b_shape = tuple(a.shape), tuple(b.shape)
    if transpose_b:
        b_shape = (*b_shape[:-2], b_shape[-1], b_shape[-2])
    out_shape = shapes.matmul(op, a_shape, b_shape)
    a2 = (1, *a_shape) if len(a_shape) == 1 else a_shape
    b2 = (*b_shape, 1) if len(b_shape) == 1 else b_shape
    m, k, n = a2[-2], a2[-1], b2[-1]
    batch = shapes.broadcast(op, a2[:-2], b2[:-2])
    out = device.empty(out_shape, out_dtype)
    if out.size == 0:
        return out
    if k == 0:
        return _zeros(device, out)
    sbk, sbn = (1, k) if transpose_b else (n, 1)
    variant = Variant(a.dtype, b.dtype, out_dtype,
                       Epilogue(scale is not None, bias is not None, activation),
                       quant_zero_points is not None)
    head = [a.base_data, np.int64(a.offset // a.dtype.itemsize), b.base_data,
            np.int64(b.offset // b.dtype.itemsize), out.base_data,
            _batch_offsets(device, batch, a2[:-2], m * k).base_data,
            _batch_offsets(device, batch, b2[:-2], k * n).base_data,
            np.int32(m), np.int32(n), np.int32(k), np.int64(sbk), np.int64(sbn)]
    tail = [np.int32(z) for z in quant_zero_points or ()]
    if scale is not None:
        tail.append(cltypes.scalar(out_dtype, scale))
    if bias is not None:
        tail.append(bias.base_data)
    nbatch = math.prod(batch)

    def region(m_begin, n_begin):
        return [*head, np.int32(m_begin), np.int32(n_begin), *tail]

    if (device.is_cpu and out_dtype in VECTOR_WIDTH and a.dtype == b.dtype == out_dtype
            and sbn == 1):
        w, rows = VECTOR_WIDTH[out_dtype], VECTOR_ROWS
        mf, nf = m - m % rows, n - n % w
        vector = device.build(op, vector_source(variant), "gemm")
        device.run(vector, (nf // w, mf // rows, nbatch), (_group(nf // w), 1, 1),
                   *region(0, 0))
        naive = device.build(op, naive_source(variant), "gemm")
        device.run(naive, (n, m - mf, nbatch), None, *region(mf, 0))
        device.run(naive, (n - nf, mf, nbatch), None, *region(0, nf))
        return out
    tile = tile_for(device, m, n)
    lx, ly = tile.local
    kernel = device.build(op, tiled_source(variant, tile), "gemm")
    device.run(kernel, (-(-n // tile.tn) * lx, -(-m // tile.tm) * ly, nbatch), (lx, ly, 1),
               *region(0, 0))
    return out


def _group(items: int) -> int:
    """A work-group size along N for the vector kernel: 16 where it divides the items."""
    for g in (16, 8, 4, 2):
        if items % g == 0:
            return g
    return 1


def _zeros(device, out):
    from .elementwise import map_arrays

    zero = device.upload(np.zeros((), out.dtype))
    return map_arrays(device, "matmul", "a0", [zero], out.dtype, shape=out.shape)


@kernels.register("matmul")
def matmul(device, a, b):
    """numpy.matmul: batched, broadcasting, 1-d operands promoted and removed."""
    return gemm(device, "matmul", a, b, out_dtype=a.dtype)


@kernels.register("qmatmul")
def qmatmul(device, a, b, *, a_zero_point=0, b_zero_point=0):
    """(a - a_zero_point) @ (b - b_zero_point) on int8/uint8, accumulated in int32."""
    return gemm(device, "qmatmul", a, b, out_dtype=dt.int32,
                quant_zero_points=(a_zero_point, b_zero_point))


@kernels.register("linear")
def linear(device, x, weight, bias=None, *, activation=None):
    """activation(x @ weight + bias) in one kernel (the epilogue runs in the store)."""
    return gemm(device, "linear", x, weight, out_dtype=x.dtype, bias=bias,
                activation=activation)
