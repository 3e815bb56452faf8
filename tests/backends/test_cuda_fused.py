"""The CUDA backend's generated kernels: fused groups (backends/cuda/graph_kernels.py) and
the eager elementwise kernels (backends/cuda/elementwise.py), both from the op set's C
table.

Without a GPU: the generated source is checked as text, its broadcast index arithmetic
is evaluated in Python against numpy's broadcasting, declines are checked, and the
kernels' C++ is compiled for the host (std::complex standing in for cupy's complex,
each thread a call) and compared with the body run node by node on the cpu device, or
with the op's reference. With a GPU (marked `gpu`, skipped with the backend's reason
elsewhere) the same bodies run through `compile_fused` on cuda:0.
"""

from __future__ import annotations

import ctypes
import math

import numpy as np
import pytest

import hal
from backends import fusion
from backends.cuda import dialect, elementwise, graph_kernels
from hal import dtypes as dt
from hal.compile.graph import Graph, Node
from hal.conformance.compare import mismatch
from hal.ops.expressions import c
from tests.backends.cuda_host import SHIM, compile_library, launch

F16, F32, F64 = hal.float16, hal.float32, hal.float64
C64, C128, I8, I32, B = hal.complex64, hal.complex128, hal.int8, hal.int32, hal.bool
RNG = np.random.default_rng(9)


def _body(inputs, rows, constants=(), device="cpu") -> Graph:
    """A body from (op, refs, shape, dtype[, params]) rows; a ref "n2" is node 2, "i1"
    input 1, "c0" constant 0; the last node is the output."""
    kinds = {"n": "node", "i": "input", "c": "const"}
    nodes = [Node(op, tuple((kinds[r[0]], int(r[1:])) for r in refs.split()),
                  params[0] if params else {}, shape, dtype)
             for op, refs, shape, dtype, *params in rows]
    return Graph(list(inputs), nodes, [hal.asarray(c, device=device) for c in constants],
                 [("node", len(nodes) - 1)])


def _broadcast_chain(device):
    """float32 over (4, 3, 5) from (4, 1, 5), (3, 1) and 0-d: NaN through maximum, a
    comparison, casts and where."""
    s = (4, 3, 5)
    body = _body([((4, 1, 5), F32), ((3, 1), F32), ((), F32)], [
        ("multiply", "i0 i1", s, F32), ("add", "n0 i2", s, F32),
        ("maximum", "n1 c0", s, F32), ("tanh", "n2", s, F32), ("greater", "n3 c1", s, B),
        ("astype", "n1", s, I32, {"dtype": I32}), ("astype", "n5", s, F64, {"dtype": F64}),
        ("astype", "n3", s, F64, {"dtype": F64}), ("where", "n4 n6 n7", s, F64)],
        [np.float32(-0.5), np.float32(0.1)], device)
    x = RNG.standard_normal((4, 1, 5)).astype(np.float32)
    x[1, 0, 2] = np.nan
    return body, [x, RNG.standard_normal((3, 1)).astype(np.float32), np.float32(0.25)]


def _complex_chain(device, d=C128):
    """E*v + f1*nv + f2*(na+nb), E broadcast along rows, then exp and a division."""
    s = (6, 8)
    body = _body([((8,), d), (s, d), (s, d), (s, d), (s, d)], [
        ("multiply", "i0 i1", s, d), ("multiply", "c0 i2", s, d), ("add", "i3 i4", s, d),
        ("multiply", "c1 n2", s, d), ("add", "n0 n1", s, d), ("add", "n4 n3", s, d),
        ("exp", "n5", s, d), ("divide", "n6 i1", s, d)],
        [np.asarray(0.5 - 0.25j, d), np.asarray(1j, d)], device)
    host = [(RNG.standard_normal(shape) * 0.5 + 0.5j * RNG.standard_normal(shape)).astype(d)
            for shape, _ in body.inputs]
    return body, host


def _integer_chain(device):
    """int8 floor_divide and remainder (by zero, MIN // -1), wrapping *, power, abs."""
    s = (2, 64)
    body = _body([(s, I8), (s, I8)], [
        ("floor_divide", "i0 i1", s, I8), ("remainder", "i0 i1", s, I8),
        ("multiply", "n0 c0", s, I8), ("add", "n2 n1", s, I8), ("power", "n3 c1", s, I8),
        ("negative", "n4", s, I8), ("abs", "n5", s, I8)],
        [np.int8(100), np.int8(3)], device)
    a = RNG.integers(-128, 128, s).astype(np.int8)
    q = RNG.integers(-4, 5, s).astype(np.int8)
    a[0, :3], q[0, :3] = -128, (-1, 0, 0)
    return body, [a, q]


def _float_divmod(device):
    """float64 floor_divide and remainder with numpy's corner cases, an inf constant."""
    body = _body([((32,), F64), ((32,), F64)], [
        ("floor_divide", "i0 i1", (32,), F64), ("remainder", "i0 i1", (32,), F64),
        ("minimum", "n0 c0", (32,), F64), ("subtract", "n2 n1", (32,), F64)],
        [np.float64(np.inf)], device)
    a = np.concatenate([RNG.standard_normal(28) * 2, [1.0, -1.0, np.inf, 0.0]])
    b = np.concatenate([RNG.standard_normal(28) * 2, [0.1, np.inf, 1.0, 0.0]])
    return body, [a, b]


BODIES = [_broadcast_chain, _complex_chain, _integer_chain, _float_divmod]


def _expect(body, host, got, device="cpu"):
    """got compared with the body run node by node on device, within the loosest
    tolerance of its nodes' ops and dtypes (8x: the values pass through a chain)."""
    with np.errstate(all="ignore"):  # the bodies divide by zero and cast NaN on purpose
        expected = body.run(*[hal.asarray(h, device=device) for h in host])[0].numpy()
    rtol, atol = max(hal.ops.spec(n.op).tolerance_for(n.dtype) for n in body.nodes)
    problem = mismatch(got, expected, (rtol * 8, atol * 8))
    assert not problem, problem


# -- the source, without a GPU ---------------------------------------------------------------
def test_source_reads_by_broadcast_index_and_inlines_constants():
    body = _body([((4, 3), F64), ((3,), F64), ((), F64)], [
        ("multiply", "i0 c0", (4, 3), F64), ("add", "n0 i1", (4, 3), F64),
        ("subtract", "n1 i2", (4, 3), F64), ("exp", "n2", (4, 3), F64)],
        [np.float64(2.5)])
    generated = graph_kernels.source(body)
    text = generated.text
    assert generated.args == ("out", "p0", "p1", "p2") and generated.size == 12
    assert ('extern "C" __global__ void hal_fused(double* __restrict__ out, const double* '
            '__restrict__ p0, const double* __restrict__ p1, const double* __restrict__ p2)'
            ) in text
    for line in ("const int c1 = i % 3;", "const double x0 = p0[i];",
                 "const double x1 = p1[c1];", "const double x2 = p2[0];",
                 "const double v0 = (x0 * ((double)2.5));", "const double v3 = exp(v2);",
                 "out[i] = v3;", "if (i >= 12) return;"):
        assert line in text, line
    assert "complex" not in text and "hal_divmod" not in text


def test_source_includes_what_the_ops_need():
    complex_text = graph_kernels.source(_complex_chain("cpu")[0]).text
    assert complex_text.startswith(graph_kernels.COMPLEX_HEADER)
    assert "complex<double>(((double)0.5), ((double)-0.25))" in complex_text
    integer_text = graph_kernels.source(_integer_chain("cpu")[0]).text
    assert "hal_floor_divide_int8(x0, x1)" in integer_text
    assert "hal_ipow_int8(v3, ((signed char)3LL))" in integer_text
    float_text = graph_kernels.source(_float_divmod("cpu")[0]).text
    assert "hal_divmod" in float_text
    assert "__longlong_as_double(0x7ff0000000000000LL)" in float_text


@pytest.mark.parametrize("shapes, out", [
    ([(4, 1, 5), (3, 1), ()], (4, 3, 5)),
    ([(2, 3, 4), (2, 3, 4)], (2, 3, 4)),
    ([(1, 3, 1), (5, 1, 1, 7), (7,)], (5, 1, 3, 7)),
    ([(6, 1), (1, 5)], (6, 5)),
    ([(), (1, 1)], (1, 1)),
])
def test_index_arithmetic_is_numpy_broadcasting(shapes, out):
    assignments, offsets = fusion.offsets(
        "i", out, [fusion.broadcast_strides(s, out) for s in shapes], "")
    expected = [np.broadcast_to(np.arange(math.prod(s)).reshape(s), out).ravel()
                for s in shapes]
    for i in range(math.prod(out)):
        values = {"i": i}
        for name, e in assignments:
            values[name] = eval(e.replace("/", "//"), {}, values)
        got = [eval(e.replace("/", "//"), {}, values) for e in offsets]
        assert got == [int(x[i]) for x in expected], (i, got)


def test_reduce_index_arithmetic_splits_kept_and_reduced_axes():
    shape, axes = (3, 4, 5), (0, 2)
    body = _body([(shape, F32), ((4, 1), F32)], [
        ("add", "i0 i1", shape, F32),
        ("sum", "n0", (4,), F32, {"axis": axes, "keepdims": False})])
    found = fusion.layout(body)
    outer, inner, offsets = fusion.input_offsets(found, body.inputs)
    full = [np.arange(math.prod(s)).reshape(s) for s, _ in body.inputs]
    x = [np.moveaxis(np.broadcast_to(a, shape), 1, 0).reshape(4, 15) for a in full]
    for o in range(4):
        for r in range(15):
            values = {"o": o, "r": r}
            for name, e in outer + inner:
                values[name] = eval(e.replace("/", "//"), {}, values)
            assert [eval(e.replace("/", "//"), {}, values) for e in offsets] == \
                [int(a[o, r]) for a in x]


def test_declines_what_it_does_not_compile():
    s = (4,)
    declined = [
        _body([(s, F16)], [("exp", "i0", s, F16)]),  # no half type here
        _body([(s, F32)], [("exp", "i0", s, F32),
                           ("sum", "n0", (), F32, {"axis": None, "keepdims": False})]),
        _body([(s, I32), (s, I32)], [("power", "i0 i1", s, I32)]),  # exponent unknown
        _body([(s, I32)], [("power", "i0 c0", s, I32)], [np.int32(-1)]),
        _body([(s, I32)], [("add", "i0 c0", s, I32)], [np.arange(4, dtype=np.int32)]),
    ]
    for body in declined:
        assert graph_kernels.source(body) is None


# -- the source compiled for the host -------------------------------------------------------
@pytest.fixture(scope="module")
def host_kernel(tmp_path_factory):
    """run(body, host arrays) -> the output of the generated kernel compiled for the host."""
    folder = tmp_path_factory.mktemp("cuda_fused")

    def run(body, host, vectors=True):
        """With `vectors` False a vector kernel is told its arrays are misaligned (its
        element-by-element path)."""
        generated = graph_kernels.source(body)
        text = generated.text.replace(graph_kernels.COMPLEX_HEADER, "")
        lib = compile_library(folder, f"k{body.key()}", SHIM % graph_kernels.BLOCK + text)
        last = body.nodes[-1]
        out = np.empty(last.shape, last.dtype)
        arrays = [out] + [np.ascontiguousarray(h, dtype=d) for h, (_, d) in
                          zip(host, body.inputs)]
        args = [ctypes.c_void_p(a.ctypes.data) for a in arrays]
        w = generated.width
        if w > 1:
            whole = [out] + [a for a, f in zip(arrays[1:], generated.full) if f]
            aligned = vectors and all(a.ctypes.data % (w * a.itemsize) == 0 for a in whole)
            args.append(ctypes.c_int(int(aligned)))
        threads = -(-generated.size // w)
        launch(lib, generated.name, -(-threads // graph_kernels.BLOCK), graph_kernels.BLOCK,
               args)
        return out

    return run


@pytest.mark.parametrize("make", BODIES, ids=lambda f: f.__name__.strip("_"))
def test_generated_kernel_computes_the_body_on_the_host(host_kernel, make):
    body, host = make("cpu")
    _expect(body, host, host_kernel(body, host))
    _expect(body, host, host_kernel(body, host, vectors=False))


def test_bodies_read_whole_get_a_vector_kernel():
    assert graph_kernels.source(_integer_chain("cpu")[0]).width == 16  # int8: 16 a vector
    divmod_kernel = graph_kernels.source(_float_divmod("cpu")[0])
    assert divmod_kernel.width == 2 and divmod_kernel.full == (True, True)
    assert "hal_vec<double, 2> X0 = *reinterpret_cast" in divmod_kernel.text
    assert graph_kernels.source(_broadcast_chain("cpu")[0]).width == 1  # broadcast reads
    assert graph_kernels.source(_complex_chain("cpu")[0]).width == 1  # complex


def _eager_cases():
    """(op, dtype) for every generated eager kernel and every dtype its op accepts that the
    C table has an expression for (others are not registered: they fall back), but
    float16/bfloat16 (computed in float32 by ops.in_float32)."""
    return [(op, d) for op in elementwise.GENERATED for d in hal.ops.spec(op).dtypes
            if d not in hal.ops.HALF and c.has(op, d)]


def _eager_library(folder, kernels) -> ctypes.CDLL:
    """The eager kernels' C++ for (name, op, operand dtype, result dtype, operands) rows,
    compiled for the host into one library: name(a0[, a1], out, n) computes n elements."""
    text, helpers = [], {}
    for name, op, d, out, n in kernels:
        expr, needed = c.render(op, [f"a{i}[j]" for i in range(n)], d, out, dialect.DIALECT)
        helpers.update(dict.fromkeys(needed))
        args = ", ".join(f"const {dialect.CTYPES[d]}* a{i}" for i in range(n))
        text.append(f'extern "C" void {name}({args}, {dialect.CTYPES[out]}* out, long n)'
                    f" {{ for (long j = 0; j < n; j++) out[j] = {expr}; }}")
    return compile_library(folder, "eager", SHIM % graph_kernels.BLOCK + "".join(helpers)
                           + "\n".join(text))


def _operands(op: str) -> int:
    return 2 if hal.ops.spec(op).family in ("binary", "complex") else 1


def test_generated_eager_kernels_compute_the_references_on_the_host(tmp_path):
    """Every eager kernel's C++ (its ElementwiseKernel's operation), compiled for the host in
    one file, against the op's numpy reference on random and special values."""
    cases = _eager_cases()
    lib = _eager_library(tmp_path, [(f"k{k}", op, d, _out_dtype(op, d), _operands(op))
                                    for k, (op, d) in enumerate(cases)])
    failed = []
    for k, (op, d) in enumerate(cases):
        spec = hal.ops.spec(op)
        n = 2 if spec.family in ("binary", "complex") else 1
        host = [_values(op, d, seed) for seed in range(n)]
        out = np.empty(host[0].shape, _out_dtype(op, d))
        getattr(lib, f"k{k}")(*[ctypes.c_void_p(a.ctypes.data) for a in (*host, out)],
                              ctypes.c_long(out.size))
        problem = mismatch(out, spec.evaluate(*host), spec.tolerance_for(out.dtype))
        if problem:
            failed.append(f"{op} {d.name}: {problem}")
    assert failed == []


def _special(d) -> np.ndarray:
    """Every pair of special and boundary parts (zeros, infinities, NaN, near overflow)."""
    big = np.finfo(dt.real_dtype(d)).max / 2
    parts = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, big, -big, 1e-40, 30.0, -30.0,
             100.0, 1.5707964, 800.0 if d == C128 else 89.5]
    re, im = np.array([(r, i) for r in parts for i in parts]).T
    z = np.empty(re.shape, d)
    z.real, z.imag = re, im  # part by part: re + 1j*im would turn inf*0 into NaN
    return z


COMPLEX_FUNCTIONS = ("exp", "sin", "cos", "tanh", "sqrt", "divide", "power")


def test_complex_functions_at_special_values_are_numpys_on_the_host(tmp_path):
    """The eager kernels' complex functions are the op set's own C (complex_c.py, as
    OpenCL's), not complex.cuh's, and give numpy's values, infinities, NaNs and signed
    zeros at every pair of special parts (the host's std::complex stands in for cupy's)."""
    kernels = [(f"{op}_{d.name}", op, d, d, _operands(op)) for op in COMPLEX_FUNCTIONS
               for d in (C64, C128)]
    for _, op, d, _, n in kernels:  # not complex.cuh's functions
        text = c.render(op, ["a", "b"][:n], d, d, dialect.DIALECT)[0]
        assert text.startswith(f"hal_{d.name}_"), text
    lib = _eager_library(tmp_path, kernels)
    failed = []
    for op in COMPLEX_FUNCTIONS:
        spec = hal.ops.spec(op)
        for d in (C64, C128):
            z = _special(d)
            pairs = [np.repeat(z, len(z[::7])), np.tile(z[::7], len(z))]
            host = pairs if _operands(op) == 2 else [z]
            out = np.empty_like(host[0])
            getattr(lib, f"{op}_{d.name}")(*[ctypes.c_void_p(x.ctypes.data) for x in
                                             (*host, out)], ctypes.c_long(out.size))
            with np.errstate(all="ignore"):
                expected = spec.evaluate(*host)
            problem = mismatch(out, expected, spec.tolerance_for(d))
            signs = [(part(expected) == 0) & (np.signbit(part(out)) !=
                                               np.signbit(part(expected)))
                     for part in (np.real, np.imag)]
            if problem or any(s.any() for s in signs):
                failed.append(f"{op} {d.name}: {problem or 'the sign of a zero differs'}")
    assert failed == []


def _out_dtype(op: str, d: np.dtype) -> np.dtype:
    spec = hal.ops.spec(op)
    operands = [np.empty(3, d)] * (2 if spec.family in ("binary", "complex") else 1)
    return spec.meta(*operands)[1]


def _values(op: str, d: np.dtype, seed: int) -> np.ndarray:
    """64 values of dtype d for op: random, and for floats the signed zeros, infinities and
    NaN; divisors of floor_divide and remainder include 0 and -1; powers of integers take
    small non-negative exponents and shifts counts up to past the width (negative ones are
    the ops' DomainError)."""
    rng = np.random.default_rng(seed)
    if dt.is_bool(d):
        return rng.integers(0, 2, 64).astype(d)
    if dt.is_integer(d):
        if op == "power" and seed == 1:
            return rng.integers(0, 5, 64).astype(d)
        if op.startswith("bitwise_") and op.endswith("_shift") and seed == 1:
            return rng.integers(0, d.itemsize * 8 + 3, 64).astype(d)  # the width and past it
        info = np.iinfo(d)
        values = rng.integers(info.min, info.max, 64, endpoint=True)
        values[:4] = [0, -1 if info.min < 0 else 1, info.min, info.max]
        return values.astype(d)
    values = rng.standard_normal(64) * 4
    values[:6] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0]
    if dt.is_complex(d):
        values = values + 1j * rng.standard_normal(64)
    return values.astype(d)


# -- on a GPU ------------------------------------------------------------------------------
_REASON = hal.backend("cuda").why_unavailable()


def gpu(test):
    """Mark a test `gpu` and skip it, with the backend's reason, where cuda is unavailable."""
    skip = pytest.mark.skipif(_REASON is not None, reason=f"no CUDA GPU: {_REASON}")
    return pytest.mark.gpu(skip(test))


@gpu
@pytest.mark.parametrize("make", [*BODIES, lambda device: _complex_chain(device, C64)])
def test_compiled_kernel_on_the_gpu(make):
    dev = hal.device("cuda:0")
    body, host = make(dev)
    fn = dev.backend.compile_fused(body, dev)
    assert fn is not None and fn.takes_out
    assert dev.backend.compile_fused(body, dev) is fn  # compiled once per body
    natives = [hal.asarray(h, device=dev).native for h in host]
    out = dev.empty(body.nodes[-1].shape, body.nodes[-1].dtype)
    assert fn(*natives, out=out) is out
    _expect(body, host, dev.download(out), dev)
