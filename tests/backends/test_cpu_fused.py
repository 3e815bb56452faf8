"""The CPU backend's fused groups (backends/cpu_fused.py) against the body run op by op.

Each body is built by hand as the fusion pass would build it; the compiled function
writes into a given `out=` and must agree with `body.run` (hal's kernels node by node)
in values, dtype and shape. Edge values come first: division by zero, integer overflow,
NaN through maximum, signed zeros.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import hal
from backends import cpu_fused
from hal.compile.graph import Graph, Node

ROOT = Path(__file__).resolve().parents[2]
rng = np.random.default_rng(7)


@pytest.fixture(autouse=True, scope="module")
def _cache_dir(tmp_path_factory):
    """Generated sources and numba's cache in a directory of this module's own."""
    before = hal.settings.cache_dir
    hal.settings.cache_dir = tmp_path_factory.mktemp("cache")
    yield
    hal.settings.cache_dir = before


def I(i):  # noqa: E743 - refs read like the graph text: %in0, %0, %c0
    return ("input", i)


def V(i):
    return ("node", i)


def C(i):
    return ("const", i)


def node(op, *refs, shape, dtype, **params):
    """A body node; params as the op takes them."""
    return Node(op, refs, params, tuple(shape), np.dtype(dtype))


def astype(ref, dtype, shape):
    """An astype node (its parameter and its result share the name dtype)."""
    return Node("astype", (ref,), {"dtype": np.dtype(dtype)}, tuple(shape), np.dtype(dtype))


def body_of(arrays, nodes, consts=()):
    """A body over arrays' (shape, dtype), its constants 0-d tensors, its output the last node."""
    dev = hal.device("cpu")
    return Graph([(a.shape, a.dtype) for a in arrays], nodes,
                 [hal.asarray(np.asarray(c), device=dev) for c in consts],
                 [("node", len(nodes) - 1)])


def check(body, arrays, rtol=None, atol=None):
    """The compiled group writes into out= what body.run computes; returns the result."""
    dev = hal.device("cpu")
    fn = dev.backend.compile_fused(body, dev)
    assert fn is not None and fn.takes_out
    last = body.nodes[-1]
    out = np.full(last.shape, 1, last.dtype)
    got = fn(*arrays, out=out)
    assert got is out
    want = body.run(*[hal.asarray(a, device=dev) for a in arrays])[0].numpy()
    assert (got.shape, got.dtype) == (want.shape, want.dtype)
    if rtol is None:
        rtol, atol = max(hal.ops.spec(n.op).tolerance_for(n.dtype) for n in body.nodes)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    if got.dtype.kind == "f":
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    return got


def test_float64_chain_broadcasts_0d_and_size1_operands():
    a = rng.standard_normal((4, 1, 3))
    b = rng.standard_normal((5, 1))
    s = np.asarray(0.25)
    shape = (4, 5, 3)
    body = body_of([a, b, s], [
        node("multiply", I(0), C(0), shape=a.shape, dtype="f8"),
        node("add", V(0), I(1), shape=shape, dtype="f8"),
        node("tanh", V(1), shape=shape, dtype="f8"),
        node("subtract", V(2), I(2), shape=shape, dtype="f8"),
        node("exp", V(3), shape=shape, dtype="f8"),
        node("maximum", V(4), C(1), shape=shape, dtype="f8"),
    ], consts=[np.float64(2.0), np.float64(0.5)])
    check(body, [a, b, s])


def test_kdv_etdrk4_update_complex128():
    n = 129
    E, v, f1, nv, f2, na, nb = (rng.standard_normal(n) + 1j * rng.standard_normal(n)
                                for _ in range(7))
    shape = (n,)
    body = body_of([E, v, f1, nv, f2, na, nb], [
        node("multiply", I(0), I(1), shape=shape, dtype="c16"),
        node("multiply", I(2), I(3), shape=shape, dtype="c16"),
        node("add", V(0), V(1), shape=shape, dtype="c16"),
        node("add", I(5), I(6), shape=shape, dtype="c16"),
        node("multiply", I(4), V(3), shape=shape, dtype="c16"),
        node("add", V(2), V(4), shape=shape, dtype="c16"),
    ])
    got = check(body, [E, v, f1, nv, f2, na, nb])
    np.testing.assert_allclose(got, E * v + f1 * nv + f2 * (na + nb), rtol=1e-14)


def test_complex64_functions_parts_and_division_by_zero():
    z = (rng.standard_normal(8) + 1j * rng.standard_normal(8)).astype(np.complex64)
    w = z[::-1].copy()
    w[:3] = [0, 1e-30, -0.0]
    shape = (8,)
    body = body_of([z, w], [
        node("divide", I(0), I(1), shape=shape, dtype="c8"),
        node("conj", I(0), shape=shape, dtype="c8"),
        node("exp", V(1), shape=shape, dtype="c8"),
        node("sqrt", V(2), shape=shape, dtype="c8"),
        node("abs", V(3), shape=shape, dtype="f4"),
        node("real", V(0), shape=shape, dtype="f4"),
        node("imag", V(3), shape=shape, dtype="f4"),
        node("add", V(4), V(6), shape=shape, dtype="f4"),
        node("complex", V(7), V(5), shape=shape, dtype="c8"),  # infinite parts from z / 0
        node("power", V(3), C(0), shape=shape, dtype="c8"),
        node("add", V(8), V(9), shape=shape, dtype="c8"),
    ], consts=[np.complex64(2 - 0.5j)])
    with np.errstate(all="ignore"):
        check(body, [z, w])


def test_integer_floor_divide_and_remainder_by_zero_minus_one_and_wrap():
    a = np.array([7, -7, 7, -7, 5, -128, -128, 100, 0], np.int8)
    b = np.array([2, 2, -2, -2, 0, -1, 0, 100, -3], np.int8)
    shape = a.shape
    body = body_of([a, b], [
        node("floor_divide", I(0), I(1), shape=shape, dtype="i1"),
        node("remainder", I(0), I(1), shape=shape, dtype="i1"),
        node("add", I(0), I(1), shape=shape, dtype="i1"),  # 100 + 100 wraps
        node("multiply", V(0), C(0), shape=shape, dtype="i1"),
        node("subtract", V(3), V(1), shape=shape, dtype="i1"),
        node("add", V(4), V(2), shape=shape, dtype="i1"),
    ], consts=[np.int8(3)])
    with np.errstate(all="ignore"):
        check(body, [a, b])
    with np.errstate(all="ignore"):
        check(body_of([a, b], [
            node("floor_divide", I(0), I(1), shape=shape, dtype="i1"),
            node("remainder", I(0), I(1), shape=shape, dtype="i1"),
            node("negative", V(0), shape=shape, dtype="i1")]), [a, b])


@pytest.mark.parametrize("dtype", ["i8", "i4", "u1"])
def test_integer_chains_wrap_as_numpy(dtype):
    info = np.iinfo(dtype)
    a = np.array([info.min, info.max, 3, 0, 9, 1], dtype)
    b = np.array([1, 1, 0, 5, 3, 2] if dtype == "u1" else [-1, 2, 0, -5, -3, 2], dtype)
    shape = a.shape
    body = body_of([a, b], [
        node("floor_divide", I(0), I(1), shape=shape, dtype=dtype),
        node("remainder", I(0), I(1), shape=shape, dtype=dtype),
        node("power", V(1), C(0), shape=shape, dtype=dtype),
        node("negative", V(0), shape=shape, dtype=dtype),
        node("abs", V(3), shape=shape, dtype=dtype),
        node("add", V(4), V(2), shape=shape, dtype=dtype),
        node("maximum", V(5), I(1), shape=shape, dtype=dtype),
    ], consts=[np.asarray(3, dtype)])
    with np.errstate(all="ignore"):
        check(body, [a, b])


@pytest.mark.parametrize("dtype", ["f8", "f4"])
def test_float_floor_divide_and_remainder_signs(dtype):
    a = np.array([7, -7, 7, -7, 1, -1, 0, -0.0, 5.5, np.inf, np.nan, 1e30, 0.3], dtype)
    b = np.array([2, 2, -2, -2, 0, 0, 0, 3, -0.0, 2, 1, 7, 0.1], dtype)
    shape = a.shape
    body = body_of([a, b], [
        node("floor_divide", I(0), I(1), shape=shape, dtype=dtype),
        node("remainder", I(0), I(1), shape=shape, dtype=dtype),
        node("multiply", V(0), C(0), shape=shape, dtype=dtype),
        node("add", V(2), V(1), shape=shape, dtype=dtype),
    ], consts=[np.asarray(1, dtype)])
    with np.errstate(all="ignore"):
        check(body, [a, b])


# numba's vectorised float compares signal on NaN: numpy warns, the values are numpy's
@pytest.mark.filterwarnings("ignore:invalid value encountered in kernel")
def test_nan_through_maximum_and_minimum():
    a = np.array([1.0, np.nan, 3.0, -np.inf, np.nan], np.float32)
    b = np.array([np.nan, 2.0, 1.0, 0.0, np.nan], np.float32)
    shape = a.shape
    body = body_of([a, b], [
        node("maximum", I(0), I(1), shape=shape, dtype="f4"),
        node("minimum", I(1), I(0), shape=shape, dtype="f4"),
        node("add", V(0), V(1), shape=shape, dtype="f4"),
        node("maximum", V(2), C(0), shape=shape, dtype="f4"),
    ], consts=[np.float32(-1)])
    got = check(body, [a, b])
    assert np.isnan(got).tolist() == [True, True, False, False, True]


def test_where_with_bool_condition_and_astype():
    x = rng.standard_normal((3, 4)) * 100
    k = np.array([3, -2, 0, 7], np.int32)
    shape = x.shape
    body = body_of([x, k], [
        node("greater", I(0), C(0), shape=shape, dtype="?"),
        astype(I(0), "i4", shape),
        node("where", V(0), V(1), I(1), shape=shape, dtype="i4"),
        astype(V(2), "f4", shape),
        astype(V(2), "?", shape),
        astype(V(4), "f4", shape),
        node("add", V(3), V(5), shape=shape, dtype="f4"),
        node("erf", V(6), shape=shape, dtype="f4"),
        node("equal", V(0), V(4), shape=shape, dtype="?"),
    ], consts=[np.float64(0.0)])
    check(body, [x, k])


@pytest.mark.parametrize("op, axis, keepdims", [("sum", (1,), True), ("max", None, False),
                                                ("min", (0, 2), False)])
def test_reduce_group_with_axis_and_keepdims(op, axis, keepdims):
    a = rng.standard_normal((3, 4, 5))
    b = rng.standard_normal((4, 1))
    shape = a.shape
    out_shape = np.sum(a, axis=axis, keepdims=keepdims).shape
    body = body_of([a, b], [
        node("multiply", I(0), I(1), shape=shape, dtype="f8"),
        node("sin", V(0), shape=shape, dtype="f8"),
        node(op, V(1), shape=out_shape, dtype="f8", axis=axis, keepdims=keepdims),
    ])
    check(body, [a, b])


def test_reduce_group_sums_bool_to_int64():
    a = rng.standard_normal((6, 7))
    body = body_of([a], [
        node("abs", I(0), shape=a.shape, dtype="f8"),
        node("less", V(0), C(0), shape=a.shape, dtype="?"),
        node("sum", V(1), shape=(7,), dtype="i8", axis=(0,), keepdims=False),
    ], consts=[np.float64(0.5)])
    got = check(body, [a])
    np.testing.assert_array_equal(got, np.sum(np.abs(a) < 0.5, axis=0))


def test_reduce_group_of_one_node_and_of_an_input():
    a = rng.standard_normal((5, 3)).astype(np.float32)
    one = body_of([a], [node("exp", I(0), shape=a.shape, dtype="f4"),
                        node("max", V(0), shape=(3,), dtype="f4", axis=(0,), keepdims=False)])
    check(one, [a])
    k = np.arange(12, dtype=np.int8).reshape(3, 4) * 20  # int8 values summed in int64
    alone = body_of([k], [node("sum", I(0), shape=(1, 1), dtype="i8", axis=None,
                               keepdims=True)])
    np.testing.assert_array_equal(check(alone, [k]), [[np.sum(k, dtype=np.int64)]])


@pytest.mark.parametrize("op, axis, keepdims, extra", [
    ("sum", (1,), False, (3, 5)),     # an extra input of the result's shape
    ("sum", (0, 2), True, (4, 1)),    # keepdims: the extra input broadcasts to (1, 4, 1)
    ("max", None, False, ()),         # over all axes to 0-d, a 0-d extra input
])
def test_reduce_group_with_an_epilogue(op, axis, keepdims, extra):
    a = rng.standard_normal((3, 4, 5))
    b = rng.standard_normal((4, 1))
    z = rng.standard_normal(extra)
    if op == "max":
        a[1, 2, 3] = np.nan  # it wins, and stays NaN through the epilogue
    out = np.sum(a, axis=axis, keepdims=keepdims).shape
    body = body_of([a, b, z], [
        node("multiply", I(0), I(1), shape=a.shape, dtype="f8"),
        node(op, V(0), shape=out, dtype="f8", axis=axis, keepdims=keepdims),
        node("subtract", V(1), I(2), shape=out, dtype="f8"),
        node("multiply", V(2), C(0), shape=out, dtype="f8"),
        node("tanh", V(3), shape=out, dtype="f8"),
    ], consts=[np.float64(0.25)])
    got = check(body, [a, b, z])
    assert np.isnan(got).any() == (op == "max")


def test_reduce_group_of_an_input_with_a_one_node_epilogue():
    a = rng.standard_normal((3, 4))
    body = body_of([a], [node("sum", I(0), shape=(3,), dtype="f8", axis=(1,), keepdims=False),
                         node("divide", V(0), C(0), shape=(3,), dtype="f8")],
                   consts=[np.float64(4.0)])
    np.testing.assert_allclose(check(body, [a]), a.mean(axis=1), rtol=1e-15)


def test_integer_sum_with_a_floor_divide_epilogue():
    k = rng.integers(-128, 128, (6, 9)).astype(np.int8)
    q = np.array([0, -1, 2, -3, 4, 5, -6, 7, 8], np.int64)  # by zero: 0, as numpy
    body = body_of([k, q], [
        node("abs", I(0), shape=k.shape, dtype="i1"),
        node("sum", V(0), shape=(9,), dtype="i8", axis=(0,), keepdims=False),
        node("floor_divide", V(1), I(1), shape=(9,), dtype="i8"),
        node("add", V(2), C(0), shape=(9,), dtype="i8"),
    ], consts=[np.int64(-3)])
    with np.errstate(divide="ignore"):
        got = check(body, [k, q])
        want = np.abs(k).sum(axis=0, dtype=np.int64) // q - 3
    np.testing.assert_array_equal(got, want)


def test_declines_an_epilogue_reading_the_prologue_and_a_second_reduction():
    dev = hal.device("cpu")
    a = rng.standard_normal((3, 4))
    prologue = [node("exp", I(0), shape=a.shape, dtype="f8"),
                node("sum", V(0), shape=(3,), dtype="f8", axis=(1,), keepdims=False)]
    reads_prologue = body_of([a], [*prologue, node("add", V(1), V(0), shape=a.shape,
                                                   dtype="f8")])
    second = body_of([a], [*prologue, node("max", V(1), shape=(), dtype="f8", axis=None,
                                           keepdims=False)])
    for body in (reads_prologue, second):
        assert dev.backend.compile_fused(body, dev) is None


def test_one_node_body_is_numpys_ufunc_with_constants():
    a = rng.standard_normal((2, 3)).astype(np.float32)
    body = body_of([a], [node("subtract", C(0), I(0), shape=a.shape, dtype="f4")],
                   consts=[np.float32(1.5)])
    got = check(body, [a])
    np.testing.assert_array_equal(got, np.float32(1.5) - a)


def test_0d_result_is_written_into_out():
    a, b = np.asarray(2.0), np.asarray(3.0)
    body = body_of([a, b], [node("multiply", I(0), I(1), shape=(), dtype="f8"),
                            node("sqrt", V(0), shape=(), dtype="f8")])
    got = check(body, [a, b])
    assert got.shape == () and got == np.sqrt(6.0)


def test_declines_half_precision_negative_powers_and_other_ops():
    dev = hal.device("cpu")
    h = np.ones(3, np.float16)
    half = body_of([h, h], [node("add", I(0), I(1), shape=(3,), dtype="f2"),
                            node("exp", V(0), shape=(3,), dtype="f2")])
    k = np.arange(3)
    power = body_of([k, k], [node("add", I(0), I(1), shape=(3,), dtype="i8"),
                             node("power", V(0), I(1), shape=(3,), dtype="i8")])
    negative = body_of([k], [node("power", I(0), C(0), shape=(3,), dtype="i8")],
                       consts=[np.int64(-1)])
    m = np.ones((2, 2))
    matmul = body_of([m, m], [node("matmul", I(0), I(1), shape=(2, 2), dtype="f8")])
    for body in (half, power, negative, matmul):
        assert dev.backend.compile_fused(body, dev) is None


def test_declines_without_numba(monkeypatch):
    monkeypatch.setitem(sys.modules, "numba", None)  # `import numba` raises ImportError
    monkeypatch.setattr(cpu_fused, "_compiled", {})
    monkeypatch.setattr(cpu_fused, "_ufuncs", {})
    a = np.ones(3)
    body = body_of([a], [node("exp", I(0), shape=(3,), dtype="f8"),
                         node("log", V(0), shape=(3,), dtype="f8")])
    assert hal.device("cpu").backend.compile_fused(body, hal.device("cpu")) is None


def _run_python(code: str, cache: Path) -> str:
    env = {**os.environ, "HAL_CACHE_DIR": str(cache), "NUMBA_DEBUG_CACHE": "1"}
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_import_and_one_node_groups_do_not_import_numba(tmp_path):
    out = _run_python("""
        import sys
        import numpy as np
        import hal
        from hal.compile.graph import Graph, Node
        dev = hal.device("cpu")
        f8 = np.dtype("f8")
        body = Graph([((3,), f8)], [Node("exp", (("input", 0),), {}, (3,), f8)], [],
                     [("node", 0)])
        fn = dev.backend.compile_fused(body, dev)
        print(fn(np.zeros(3))[0], "numba" in sys.modules)
        """, tmp_path)
    assert out.split() == ["1.0", "False"]


@pytest.mark.slow
def test_a_second_process_loads_the_compiled_code_from_disk(tmp_path):
    code = """
        import numpy as np
        import hal
        from hal.compile.graph import Graph, Node
        dev = hal.device("cpu")
        f8 = np.dtype("f8")
        body = Graph([((4,), f8), ((4,), f8)],
                     [Node("multiply", (("input", 0), ("input", 1)), {}, (4,), f8),
                      Node("tanh", (("node", 0),), {}, (4,), f8)], [], [("node", 1)])
        fn = dev.backend.compile_fused(body, dev)
        print("result", fn(np.arange(4.0), np.full(4, 0.5), out=np.empty(4)).tolist())
        """
    first, second = _run_python(code, tmp_path), _run_python(code, tmp_path)
    want = np.tanh(np.arange(4.0) * 0.5)
    for out in (first, second):
        result = next(line for line in out.splitlines() if line.startswith("result"))
        np.testing.assert_allclose(eval(result[len("result"):]), want, rtol=1e-15)
    assert "data saved" in first and "data loaded" not in first
    assert "data loaded" in second and "data saved" not in second
    assert len(list((tmp_path / "cpu-numba").glob("*.py"))) == 1
