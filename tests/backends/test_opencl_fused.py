"""The OpenCL backend's kernels for fused groups (backends/opencl/graph_kernels.py).

Each body is built by hand, compiled with `compile_fused` and compared with the body run
node by node on the same device (`Graph.run`, the backend's own kernels). Every new body
is a PoCL build (~0.5 s), so each test packs several ops into one body.
"""

from __future__ import annotations

import numpy as np
import pytest

import hal
from hal import dtypes as dt
from hal.compile.graph import Graph, Node
from hal.conformance.compare import mismatch

pytest.importorskip("pyopencl")
if not hal.backend("opencl").is_available():
    pytest.skip(f"no OpenCL device: {hal.backend('opencl').why_unavailable()}",
                allow_module_level=True)

from backends.opencl import graph_kernels

RNG = np.random.default_rng(5)
f16, f32, f64 = dt.float16, dt.float32, dt.float64
c64, c128 = dt.complex64, dt.complex128
i8, i32, b = dt.int8, dt.int32, dt.bool_


@pytest.fixture(scope="module")
def dev():
    """opencl:0 (PoCL here)."""
    return hal.device("opencl:0")


def _const(dev, value, d):
    return hal.asarray(np.asarray(value, dtype=d), device=dev)


def _run(dev, body, *host, loosen=1.0):
    """The fused kernel's result on host arrays, checked against body.run on the device
    within the loosest tolerance of the body's ops and dtypes (times `loosen`)."""
    fn = dev.backend.compile_fused(body, dev)
    assert fn is not None, "the body was declined"
    tensors = [hal.asarray(h, device=dev) for h in host]
    expected = body.run(*tensors)[0].numpy()
    natives = [t.native for t in tensors]
    last = body.nodes[-1]
    if getattr(fn, "takes_out", False):
        out = dev.empty(last.shape, last.dtype)
        assert fn(*natives, out=out) is out
    else:
        out = fn(*natives)
    got = dev.download(out)
    rtol, atol = max(hal.ops.spec(n.op).tolerance_for(n.dtype) for n in body.nodes)
    problem = mismatch(got, expected, (rtol * loosen, atol * loosen))
    assert not problem, problem
    return got


def _reals(shape, d, scale=2.0):
    return (RNG.standard_normal(shape) * scale).astype(d)


def test_broadcast_chain_with_nan_through_maximum_where_and_casts(dev):
    # x:(4,1,5) y:(3,1) s:() -> (4,3,5); a size-1 axis in the middle, a 0-d input
    shape = (4, 3, 5)
    body = Graph(
        [((4, 1, 5), f32), ((3, 1), f32), ((), f32)],
        [Node("multiply", (("input", 0), ("input", 1)), {}, shape, f32),   # 0
         Node("add", (("node", 0), ("input", 2)), {}, shape, f32),         # 1
         Node("maximum", (("node", 1), ("const", 0)), {}, shape, f32),     # 2: NaN wins
         Node("tanh", (("node", 2),), {}, shape, f32),                     # 3
         Node("greater", (("node", 3), ("const", 1)), {}, shape, b),       # 4
         Node("astype", (("node", 1),), {"dtype": i32}, shape, i32),       # 5
         Node("astype", (("node", 5),), {"dtype": f64}, shape, f64),       # 6
         Node("astype", (("node", 3),), {"dtype": f64}, shape, f64),       # 7
         Node("where", (("node", 4), ("node", 6), ("node", 7)), {}, shape, f64)],
        [_const(dev, -0.5, f32), _const(dev, 0.1, f32)], [("node", 8)])
    x = _reals((4, 1, 5), f32)
    x[1, 0, 2] = np.nan
    got = _run(dev, body, x, _reals((3, 1), f32), np.float32(0.25))
    assert np.isnan(got[1, :, 2]).all() and not np.isnan(np.delete(got, 2, axis=2)).any()


@pytest.mark.parametrize("d", [c64, c128])
def test_complex_chain(dev, d):
    # E*v + f1*nv + f2*(na+nb), E broadcast along rows, then exp and a complex division
    shape = (6, 8)
    body = Graph(
        [((8,), d), (shape, d), (shape, d), (shape, d), (shape, d)],
        [Node("multiply", (("input", 0), ("input", 1)), {}, shape, d),
         Node("multiply", (("const", 0), ("input", 2)), {}, shape, d),
         Node("add", (("input", 3), ("input", 4)), {}, shape, d),
         Node("multiply", (("const", 1), ("node", 2)), {}, shape, d),
         Node("add", (("node", 0), ("node", 1)), {}, shape, d),
         Node("add", (("node", 4), ("node", 3)), {}, shape, d),
         Node("exp", (("node", 5),), {}, shape, d),
         Node("divide", (("node", 6), ("input", 1)), {}, shape, d)],
        [_const(dev, 0.5 - 0.25j, d), _const(dev, 1j, d)], [("node", 7)])
    host = [(_reals(s, np.float64, 0.5) + 1j * _reals(s, np.float64, 0.5)).astype(d)
            for s in [(8,), shape, shape, shape, shape]]
    _run(dev, body, *host, loosen=8)


def test_integer_floor_divide_and_remainder_by_zero_and_wrapping(dev):
    shape = (2, 64)
    body = Graph(
        [(shape, i8), (shape, i8)],
        [Node("floor_divide", (("input", 0), ("input", 1)), {}, shape, i8),
         Node("remainder", (("input", 0), ("input", 1)), {}, shape, i8),
         Node("multiply", (("node", 0), ("const", 0)), {}, shape, i8),   # wraps
         Node("add", (("node", 2), ("node", 1)), {}, shape, i8),
         Node("power", (("node", 3), ("const", 1)), {}, shape, i8),
         Node("negative", (("node", 4),), {}, shape, i8),
         Node("abs", (("node", 5),), {}, shape, i8)],
        [_const(dev, 100, i8), _const(dev, 3, i8)], [("node", 6)])
    a = RNG.integers(-128, 128, shape).astype(i8)
    q = RNG.integers(-4, 5, shape).astype(i8)  # zeros among the divisors
    a[0, :3], q[0, :3] = -128, (-1, 0, 0)
    assert (q == 0).any()
    _run(dev, body, a, q)


def test_float_floor_divide_and_inf_constant(dev):
    body = Graph(
        [((32,), f64), ((32,), f64)],
        [Node("floor_divide", (("input", 0), ("input", 1)), {}, (32,), f64),
         Node("remainder", (("input", 0), ("input", 1)), {}, (32,), f64),
         Node("minimum", (("node", 0), ("const", 0)), {}, (32,), f64),
         Node("subtract", (("node", 2), ("node", 1)), {}, (32,), f64)],
        [_const(dev, np.inf, f64)], [("node", 3)])
    a = np.concatenate([_reals(28, f64), [1.0, -1.0, np.inf, 0.0]])
    q = np.concatenate([_reals(28, f64), [0.1, np.inf, 1.0, 0.0]])
    _run(dev, body, a, q)


def test_float16_rounds_after_every_op_as_node_by_node(dev):
    shape = (100,)
    body = Graph(
        [(shape, f16), ((), f16)],
        [Node("multiply", (("input", 0), ("input", 1)), {}, shape, f16),
         Node("exp", (("node", 0),), {}, shape, f16),
         Node("add", (("node", 1), ("const", 0)), {}, shape, f16),
         Node("sqrt", (("node", 2),), {}, shape, f16),
         Node("astype", (("node", 3),), {"dtype": f64}, shape, f64),
         Node("divide", (("node", 4), ("const", 1)), {}, shape, f64),
         Node("astype", (("node", 5),), {"dtype": f16}, shape, f16)],
        [_const(dev, 1e-3, f16), _const(dev, 3.0, f64)], [("node", 6)])
    _run(dev, body, _reals(shape, f16), np.float16(1.7), loosen=0)  # bit for bit


def test_input_offsets_and_zero_size_output(dev):
    body = Graph([((5,), f32), ((5,), f32)],
                 [Node("subtract", (("input", 0), ("input", 1)), {}, (5,), f32)], [],
                 [("node", 0)])
    fn = dev.backend.compile_fused(body, dev)
    x = dev.upload(np.arange(8, dtype=f32))
    out = dev.upload(np.zeros(7, dtype=f32))
    fn(x[3:], x[1:6], out=out[2:])  # views at element offsets 3, 1 and 2
    np.testing.assert_array_equal(dev.download(out), [0, 0, 2, 2, 2, 2, 2])
    empty = Graph([((0, 3), f32)], [Node("exp", (("input", 0),), {}, (0, 3), f32)], [],
                  [("node", 0)])
    out = dev.empty((0, 3), f32)
    assert dev.backend.compile_fused(empty, dev)(dev.empty((0, 3), f32), out=out) is out


def test_compiled_once_per_body(dev):
    body = Graph([((3,), f32)], [Node("sin", (("input", 0),), {}, (3,), f32)], [],
                 [("node", 0)])
    fn = dev.backend.compile_fused(body, dev)
    builds = dev.programs.builds
    again = Graph([((3,), f32)], [Node("sin", (("input", 0),), {}, (3,), f32)], [],
                  [("node", 0)])
    assert dev.backend.compile_fused(again, dev) is fn and dev.programs.builds == builds


def test_declines_what_it_cannot_compute(dev):
    x = [((4,), i32), ((4,), i32)]
    power_by_input = Graph(x, [Node("power", (("input", 0), ("input", 1)), {}, (4,), i32)],
                           [], [("node", 0)])
    power_by_negative = Graph(x[:1], [Node("power", (("input", 0), ("const", 0)), {}, (4,),
                                           i32)], [_const(dev, -1, i32)], [("node", 0)])
    vector_constant = Graph(x[:1], [Node("add", (("input", 0), ("const", 0)), {}, (4,), i32)],
                            [hal.asarray(np.arange(4, dtype=i32), device=dev)], [("node", 0)])
    for body in (power_by_input, power_by_negative, vector_constant):
        assert dev.backend.compile_fused(body, dev) is None
    float64_body = Graph([((4,), f64)], [Node("exp", (("input", 0),), {}, (4,), f64)], [],
                         [("node", 0)])
    assert not graph_kernels.supported(float64_body, {f32})  # a device without fp64


@pytest.mark.parametrize("shape, kind, axis, keepdims", [
    ((300, 8), "sum", (1,), False),        # one work-item per output, short rows
    ((3, 5, 700), "max", (0, 2), True),     # a work-group per output
    ((40000,), "sum", None, False),         # two stages: chunks, then the partials
])
def test_reduce_bodies(dev, shape, kind, axis, keepdims):
    from hal import shapes

    red = shapes.axes(kind, axis, len(shape))
    out_shape = shapes.reduced(shape, red, keepdims)
    row = shape[-1:]
    body = Graph(
        [(shape, f32), (row, f32)],
        [Node("multiply", (("input", 0), ("input", 1)), {}, shape, f32),
         Node("add", (("node", 0), ("const", 0)), {}, shape, f32),
         Node(kind, (("node", 1),), {"axis": axis, "keepdims": keepdims}, out_shape, f32)],
        [_const(dev, 0.5, f32)], [("node", 2)])
    x = _reals(shape, f32)
    if kind == "max":
        x[1, 2, 9] = np.nan
    got = _run(dev, body, x, _reals(row, f32), loosen=4)
    if kind == "max":
        assert np.isnan(got[0, 2, 0]) and np.isnan(got).sum() == 1


def test_reduce_integer_sum_to_int64(dev):
    body = Graph([((6, 50), i8)],
                 [Node("abs", (("input", 0),), {}, (6, 50), i8),
                  Node("sum", (("node", 0),), {"axis": (0,), "keepdims": False}, (50,),
                       dt.int64)], [], [("node", 1)])
    _run(dev, body, RNG.integers(-128, 128, (6, 50)).astype(i8))


# -- reduce bodies with an epilogue --------------------------------------------------------
def _on_cpu(body: Graph, host) -> np.ndarray:
    """The body run op by op on the cpu device (numpy's references), its constants there."""
    cpu = hal.device("cpu")
    on = Graph(body.inputs, body.nodes, [hal.asarray(c.numpy(), device=cpu)
                                         for c in body.constants], body.outputs)
    return on.run(*[hal.asarray(h, device=cpu) for h in host])[0].numpy()


def _epilogue_body(dev, shape, d, kind, axis, keepdims, extra, scale):
    """x * y + 0.5 reduced, then float32(r) - z times `scale`, maximum with a constant,
    tanh: y of the row's shape, z of `extra` (broadcasting to the result, maybe 0-d)."""
    from hal import shapes

    out = shapes.reduced(shape, shapes.axes(kind, axis, len(shape)), keepdims)
    row = shape[-1:]
    body = Graph(
        [(shape, d), (row, d), (extra, f32)],
        [Node("multiply", (("input", 0), ("input", 1)), {}, shape, d),
         Node("add", (("node", 0), ("const", 0)), {}, shape, d),
         Node(kind, (("node", 1),), {"axis": axis, "keepdims": keepdims}, out, d),
         Node("astype", (("node", 2),), {"dtype": f32}, out, f32),  # shows r's rounding
         Node("subtract", (("node", 3), ("input", 2)), {}, out, f32),
         Node("multiply", (("node", 4), ("const", 1)), {}, out, f32),
         Node("maximum", (("node", 5), ("const", 2)), {}, out, f32),
         Node("tanh", (("node", 6),), {}, out, f32)],
        [_const(dev, 0.5, d), _const(dev, scale, f32), _const(dev, -0.75, f32)],
        [("node", 7)])
    return body, [_reals(shape, d), _reals(row, d), _reals(extra, f32)]


@pytest.mark.parametrize("shape, d, kind, axis, keepdims, extra, scale, split", [
    ((300, 8), f32, "sum", (1,), False, (300,), 1 / 8, "FusedKernel"),      # item/output
    ((3, 5, 700), f16, "sum", (0, 2), True, (5, 1), 1 / 2100, "FusedKernel"),  # group/output
    ((40000,), f64, "max", None, False, (), 0.25, "TwoStageReduce"),        # two stages
])
def test_reduce_bodies_with_an_epilogue(dev, shape, d, kind, axis, keepdims, extra, scale,
                                        split):
    body, host = _epilogue_body(dev, shape, d, kind, axis, keepdims, extra, scale)
    fn = dev.backend.compile_fused(body, dev)
    assert type(fn).__name__ == split
    tensors = [hal.asarray(h, device=dev) for h in host]
    out = dev.empty(body.nodes[-1].shape, f32)
    assert fn(*[t.native for t in tensors], out=out) is out
    got, want = dev.download(out), _on_cpu(body, host)
    assert got.shape == want.shape == body.nodes[-1].shape
    rtol, atol = max(hal.ops.spec(n.op).tolerance_for(n.dtype) for n in body.nodes)
    problem = mismatch(got, want, (rtol * 4, atol * 4))
    assert not problem, problem
    if d == f16:  # the reduction's value rounded to half before the epilogue, as stored
        np.testing.assert_array_equal(got, body.run(*tensors)[0].numpy())


def test_integer_sum_with_a_floor_divide_epilogue(dev):
    body = Graph([((6, 50), i8), ((50,), dt.int64)],
                 [Node("abs", (("input", 0),), {}, (6, 50), i8),
                  Node("sum", (("node", 0),), {"axis": (0,), "keepdims": False}, (50,),
                       dt.int64),
                  Node("floor_divide", (("node", 1), ("input", 1)), {}, (50,), dt.int64),
                  Node("add", (("node", 2), ("const", 0)), {}, (50,), dt.int64)],
                 [_const(dev, -3, dt.int64)], [("node", 3)])
    q = RNG.integers(-9, 10, 50).astype(dt.int64)
    q[:2] = 0, -1  # numpy: by zero 0
    host = [RNG.integers(-128, 128, (6, 50)).astype(i8), q]
    fn = dev.backend.compile_fused(body, dev)
    out = dev.empty((50,), dt.int64)
    fn(*[hal.asarray(h, device=dev).native for h in host], out=out)
    with np.errstate(divide="ignore"):
        want = _on_cpu(body, host)
    np.testing.assert_array_equal(dev.download(out), want)


def test_epilogue_layout_splits_the_inputs_and_declines_what_it_cannot_place(dev):
    from backends import fusion

    s, r = (4, 3), (4,)
    red = Node("sum", (("node", 0),), {"axis": (1,), "keepdims": False}, r, f32)
    body = Graph([(s, f32), (r, f32)],
                 [Node("exp", (("input", 0),), {}, s, f32), red,
                  Node("add", (("node", 1), ("input", 1)), {}, r, f32)], [], [("node", 2)])
    found = fusion.layout(body)
    assert (found.epilogue, found.loaded, found.epilogue_loaded) == ((2,), (0,), (1,))
    reads_prologue = Graph(body.inputs, [*body.nodes[:2],
                                         Node("add", (("node", 1), ("node", 0)), {}, s, f32)],
                           [], [("node", 2)])
    two_reductions = Graph(body.inputs, [*body.nodes[:2],
                                         Node("max", (("node", 1),), {"axis": None,
                                                                      "keepdims": False},
                                              (), f32)], [], [("node", 2)])
    wider = Graph([(s, f32), (s, f32)], [*body.nodes[:2],
                                         Node("add", (("node", 1), ("input", 1)), {}, s, f32)],
                  [], [("node", 2)])
    for declined in (reads_prologue, two_reductions, wider):
        assert fusion.layout(declined) is None
        assert dev.backend.compile_fused(declined, dev) is None
