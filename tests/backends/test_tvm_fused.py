"""The TVM backend's fused groups: hand-built bodies compiled as one kernel each, against
the body run op by op (numpy's references on the cpu device; the TVM kernels in the slow
test), declines, and the kernel cache across processes.

Each body costs one TVM compile (under a second); the references compile nothing.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import hal
from hal.compile.graph import Graph, Node

pytest.importorskip("tvm")

F16, F32, F64 = hal.float16, hal.float32, hal.float64
I8, I32, B = hal.int8, hal.int32, hal.bool
RNG = np.random.default_rng(5)


@pytest.fixture(scope="module")
def dev():
    """tvm:0."""
    return hal.device("tvm:0")


def _nodes(*rows) -> list[Node]:
    """Nodes from (op, refs, shape, dtype[, params]) rows; a ref "n2" is node 2, "i1"
    input 1, "c0" constant 0."""
    kinds = {"n": "node", "i": "input", "c": "const"}
    return [Node(op, tuple((kinds[r[0]], int(r[1:])) for r in refs.split()),
                 params[0] if params else {}, shape, dtype)
            for op, refs, shape, dtype, *params in rows]


def _body(inputs, rows, constants=(), device="tvm:0") -> Graph:
    nodes = _nodes(*rows)
    return Graph(list(inputs), nodes, [hal.asarray(c, device=device) for c in constants],
                 [("node", len(nodes) - 1)])


def _chain_f32(dev) -> tuple[Graph, list[np.ndarray]]:
    """Seven float32 ops over a (4, 33) result from operands (4, 33), (33,), (4, 1), 0-d
    and (1, 33), NaN in both operands of maximum."""
    s = (4, 33)
    body = _body(
        [(s, F32), ((33,), F32), ((4, 1), F32), ((), F32), ((1, 33), F32)],
        [("multiply", "i0 c0", s, F32), ("add", "n0 i1", s, F32), ("tanh", "n1", s, F32),
         ("multiply", "n2 n2", s, F32), ("subtract", "n3 i2", s, F32),
         ("divide", "n4 i3", s, F32), ("maximum", "n5 i4", s, F32)],
        [np.float32(2.0)], dev)
    arrays = [RNG.standard_normal(shape).astype(np.float32) for shape, _ in body.inputs]
    arrays[0][1, 3] = np.nan
    arrays[4][0, 7] = np.nan
    return body, arrays


def _mixed_f64(dev):
    """float64 abs, sqrt, power, less, where on its bool result, a bool input cast to
    float64, then a cast to float32 and erf."""
    s = (5, 7)
    body = _body(
        [(s, F64), ((7,), F64), ((5, 1), B)],
        [("abs", "i0", s, F64), ("sqrt", "n0", s, F64), ("power", "n1 i1", s, F64),
         ("less", "i0 i1", s, B), ("where", "n3 n2 i0", s, F64),
         ("astype", "i2", (5, 1), F64, {"dtype": F64}), ("add", "n4 n5", s, F64),
         ("astype", "n6", s, F32, {"dtype": F32}), ("erf", "n7", s, F32)], device=dev)
    arrays = [RNG.standard_normal(s), RNG.standard_normal(7), RNG.random((5, 1)) < 0.5]
    return body, arrays


def _int_divmod(dev):
    """int32 floor_divide and remainder with zero, negative and -1 divisors (MIN // -1)."""
    s = (3, 6)
    body = _body(
        [(s, I32), ((6,), I32)],
        [("floor_divide", "i0 i1", s, I32), ("remainder", "i0 i1", s, I32),
         ("multiply", "n0 c0", s, I32), ("add", "n2 n1", s, I32)],
        [np.int32(3)], dev)
    a = np.array([[7, -7, 7, -7, 5, np.iinfo(np.int32).min],
                  [0, 1, -1, 100, -100, 9], [13, -13, 2, 3, 4, 5]], np.int32)
    return body, [a, np.array([2, 2, -2, 0, 0, -1], np.int32)]


def _half(dev):
    """float16 multiply, add of a constant and exp: each rounds to float16 as op by op."""
    s = (8, 5)
    body = _body([(s, F16), ((5,), F16)],
                 [("multiply", "i0 i1", s, F16), ("add", "n0 c0", s, F16),
                  ("exp", "n1", s, F16)], [np.float16(0.3)], dev)
    return body, [RNG.standard_normal(s).astype(np.float16),
                  RNG.standard_normal(5).astype(np.float16)]


def _max_keepdims(dev):
    """max over axis 1 (keepdims) of exp(x - y), a NaN row staying NaN."""
    s = (6, 50)
    body = _body([(s, F32), ((50,), F32)],
                 [("subtract", "i0 i1", s, F32), ("exp", "n0", s, F32),
                  ("max", "n1", (6, 1), F32, {"axis": (1,), "keepdims": True})], device=dev)
    arrays = [RNG.standard_normal(s).astype(np.float32),
              RNG.standard_normal(50).astype(np.float32)]
    arrays[0][2, 17] = np.nan
    return body, arrays


def _sum_all(dev):
    """sum over all axes into int64 of an int8 product (wrapping as numpy's) plus a float32
    cast to bool (NaN is True, -0.0 False) and on to int8."""
    s = (4, 9)
    body = _body([(s, I8), ((4, 1), I8), (s, F32)],
                 [("multiply", "i0 i1", s, I8), ("astype", "i2", s, B, {"dtype": B}),
                  ("astype", "n1", s, I8, {"dtype": I8}), ("add", "n0 n2", s, I8),
                  ("sum", "n3", (), hal.int64, {"axis": None, "keepdims": False})],
                 device=dev)
    floats = RNG.choice(np.array([0, -0.0, 1.5, np.nan, -np.inf], np.float32), s)
    floats[0, :3] = np.nan
    return body, [RNG.integers(-128, 128, s, dtype=np.int8),
                  RNG.integers(-128, 128, (4, 1), dtype=np.int8), floats]


def _sum_epilogue(dev):
    """sum over axis 1 of x * y, then (r - z) * 0.5 and sqrt of its abs: z of the result's
    shape, 0.5 a constant."""
    s = (6, 40)
    body = _body([(s, F32), ((40,), F32), ((6,), F32)],
                 [("multiply", "i0 i1", s, F32),
                  ("sum", "n0", (6,), F32, {"axis": (1,), "keepdims": False}),
                  ("subtract", "n1 i2", (6,), F32), ("multiply", "n2 c0", (6,), F32),
                  ("abs", "n3", (6,), F32), ("sqrt", "n4", (6,), F32)],
                 [np.float32(0.5)], dev)
    return body, [RNG.standard_normal(shape).astype(np.float32) for shape, _ in body.inputs]


def _max_all_epilogue(dev):
    """max over all axes to 0-d of tanh(x), then exp(m - s) with s a 0-d input."""
    s = (5, 8)
    body = _body([(s, F64), ((), F64)],
                 [("tanh", "i0", s, F64),
                  ("max", "n0", (), F64, {"axis": None, "keepdims": False}),
                  ("subtract", "n1 i1", (), F64), ("exp", "n2", (), F64)], device=dev)
    return body, [RNG.standard_normal(s), RNG.standard_normal(())]


def _int_sum_keepdims_epilogue(dev):
    """int8 sum over axis 1 (keepdims) into int64, floor-divided by q (zeros, -1) plus -3."""
    s = (4, 9)
    body = _body([(s, I8), ((4, 1), hal.int64)],
                 [("abs", "i0", s, I8),
                  ("sum", "n0", (4, 1), hal.int64, {"axis": (1,), "keepdims": True}),
                  ("floor_divide", "n1 i1", (4, 1), hal.int64),
                  ("add", "n2 c0", (4, 1), hal.int64)], [np.int64(-3)], dev)
    return body, [RNG.integers(-128, 128, s, dtype=np.int8),
                  np.array([[0], [-1], [7], [-5]], np.int64)]


BODIES = [_chain_f32, _mixed_f64, _int_divmod, _half, _max_keepdims, _sum_all]
EPILOGUES = [_sum_epilogue, _max_all_epilogue, _int_sum_keepdims_epilogue]  # one compile each


def _reference(body: Graph, arrays, device) -> np.ndarray:
    """The body run op by op on `device`, its constants moved there."""
    on = Graph(body.inputs, body.nodes,
               [hal.asarray(c.numpy(), device=device) for c in body.constants], body.outputs)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):  # numpy's x // 0
        return on.run(*[hal.asarray(a, device=device) for a in arrays])[0].numpy()


def _tolerance(body: Graph) -> tuple[float, float]:
    """The loosest op tolerance for the result's dtype, times the number of nodes."""
    out = body.nodes[-1].dtype
    rtol, atol = np.max([hal.ops.spec(n.op).tolerance_for(out) for n in body.nodes], axis=0)
    return rtol * len(body.nodes), atol * len(body.nodes)


def _check(dev, body: Graph, arrays, reference: str = "cpu") -> None:
    fn = dev.backend.compile_fused(body, dev)
    assert fn is not None
    natives = [hal.asarray(a, device=dev).native for a in arrays]
    got = fn(*natives)
    assert got.shape == body.nodes[-1].shape and got.dtype == body.nodes[-1].dtype
    want = _reference(body, arrays, reference)
    rtol, atol = _tolerance(body)
    np.testing.assert_allclose(got.tensor.numpy(), want, rtol=rtol, atol=atol)


@pytest.mark.parametrize("make", BODIES + EPILOGUES, ids=lambda f: f.__name__.strip("_"))
def test_fused_body_matches_the_body_run_op_by_op(dev, make):
    body, arrays = make(dev)
    _check(dev, body, arrays)


def test_fused_kernel_writes_out_and_is_compiled_once(dev):
    body, arrays = _chain_f32(dev)
    fn = dev.backend.compile_fused(body, dev)
    builds = dev.compiler.builds
    again = dev.backend.compile_fused(_chain_f32(dev)[0], dev)  # an equal body, rebuilt
    assert dev.compiler.builds == builds
    assert fn.takes_out and again.takes_out
    out = dev.empty((4, 33), F32)
    natives = [hal.asarray(a, device=dev).native for a in arrays]
    assert again(*natives, out=out) is out
    np.testing.assert_array_equal(out.tensor.numpy(), fn(*natives).tensor.numpy())
    assert np.isnan(out.tensor.numpy()[1, 3]) and np.isnan(out.tensor.numpy()[0, 7])


def test_fused_kernel_with_nan_checks_is_vector_code(dev):
    import tvm

    from backends.tvm import schedule
    from backends.tvm.fused import Body, build

    s = (1024,)
    body = _body([(s, F32), ((), F32)], [("exp", "i0", s, F32), ("maximum", "n0 i1", s, F32)],
                 device=dev)
    func = dev.compiler.prim_func("fused", build, tuple(body.inputs), (("body", Body(body)),))
    module = tvm.compile(schedule.default(func), target=dev.info.target).jit()
    ir = "\n".join(m.inspect_source("ll") for m in [module, *module.imports] if m.kind == "llvm")
    assert re.search(r"<\d+ x float> @llvm\.exp", ir)  # maximum's NaN checks kept it vector


def _declined(dev) -> dict[str, Graph]:
    c64 = hal.complex64
    return {
        "complex": _body([((3,), c64)], [("exp", "i0", (3,), c64)]),
        "integer power": _body([((3,), I32), ((3,), I32)], [("power", "i0 i1", (3,), I32)]),
        "op without an expression": _body([((3,), F32)], [("sigmoid", "i0", (3,), F32)]),
        "unpromoted operands": _body([((3,), F32), ((3,), F64)],
                                     [("add", "i0 i1", (3,), F64)]),
        "two reductions": _body(
            [((3,), F32)], [("sum", "i0", (), F32, {"axis": None, "keepdims": False}),
                            ("max", "n0", (), F32, {"axis": None, "keepdims": False})]),
        "epilogue reading the prologue": _body(
            [((3,), F32)], [("exp", "i0", (3,), F32),
                            ("sum", "n0", (), F32, {"axis": None, "keepdims": False}),
                            ("add", "n1 n0", (3,), F32)]),
    }


@pytest.mark.parametrize("case", ["complex", "integer power", "op without an expression",
                                  "unpromoted operands", "two reductions",
                                  "epilogue reading the prologue"])
def test_unsupported_bodies_are_declined(dev, case):
    builds = dev.compiler.builds
    assert dev.backend.compile_fused(_declined(dev)[case], dev) is None
    assert dev.compiler.builds == builds


@pytest.mark.slow
@pytest.mark.parametrize("make", BODIES, ids=lambda f: f.__name__.strip("_"))
def test_fused_body_matches_the_tvm_kernels_op_by_op(dev, make):
    body, arrays = make(dev)
    _check(dev, body, arrays, reference="tvm:0")


@pytest.mark.slow
def test_second_process_loads_the_fused_kernel_from_disk(tmp_path):
    code = textwrap.dedent("""
        import json, numpy as np, hal
        from hal.compile.graph import Graph, Node
        d, f32 = hal.device("tvm:0"), hal.float32
        body = Graph([((100,), f32)], [Node("exp", (("input", 0),), {}, (100,), f32),
                                       Node("multiply", (("node", 0), ("const", 0)), {},
                                            (100,), f32)],
                     [hal.asarray(np.float32(3), device=d)], [("node", 1)])
        x = hal.asarray(np.linspace(-1, 1, 100, dtype=np.float32), device=d)
        y = d.backend.compile_fused(body, d)(x.native).tensor.numpy()
        print(json.dumps({"builds": d.compiler.builds, "y": y.tolist()}))
    """)
    env = {**os.environ, "HAL_CACHE_DIR": str(tmp_path)}
    runs = [subprocess.run([sys.executable, "-c", code], env=env, text=True,
                           capture_output=True, timeout=300) for _ in range(2)]
    for run in runs:
        assert run.returncode == 0, run.stderr
    first, second = (json.loads(r.stdout.strip().splitlines()[-1]) for r in runs)
    assert first["builds"] == 1 and second["builds"] == 0
    assert list(tmp_path.rglob("fused-*.so"))
    want = 3 * np.exp(np.linspace(-1, 1, 100, dtype=np.float32))
    np.testing.assert_allclose(second["y"], want, rtol=1e-6)
    assert second["y"] == first["y"]
