"""The out-of-tree numba backend (examples/numba-backend): it loads through its entry point,
its kernels give numpy's answers and pass the conformance kit, ops without a kernel fall
back, and it is built from public hal names only."""

from __future__ import annotations

import ast
import importlib.util
import sys
import tomllib
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path

import numpy as np
import pytest

import hal
from hal import conformance as kit
from hal import ops
from hal.runtime.registry import GROUP, Registry

PACKAGE = Path(__file__).parents[1] / "examples" / "numba-backend"
ENTRY_POINT = "hal_numba:NumbaBackend"


@pytest.fixture(scope="module")
def device():
    """numba:0 through the installed entry point, else through one built from the source."""
    if "numba" in hal.backends():
        yield hal.device("numba")
        return
    sys.path.insert(0, str(PACKAGE))
    try:
        yield Registry([EntryPoint("numba", ENTRY_POINT, GROUP)]).get("numba").open()
    finally:
        sys.path.remove(str(PACKAGE))
        for name in [m for m in sys.modules if m.split(".")[0] == "hal_numba"]:
            del sys.modules[name]


def _on(device, *arrays):
    return [hal.asarray(a, device=device) for a in arrays]


def test_kernels_give_numpys_answers(device):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 1, 5)).astype(np.float32)
    b = rng.standard_normal((4, 5)).astype(np.float32)
    i8 = rng.integers(-128, 128, (6, 7)).astype(np.int8)
    x, y, i = _on(device, a, b, i8)
    hal.settings.fallback = "error"  # every call below runs a numba kernel
    checks = [
        (x * y + 0.5, a * b + np.float32(0.5)),
        (hal.maximum(x, np.nan), np.maximum(a, np.float32(np.nan))),
        (hal.where(x > 0, x, y), np.where(a > 0, a, b)),
        (hal.astype(x * 10, hal.int8), (a * 10).astype(np.int8)),
        (i * i, i8 * i8),  # wraps
        (hal.sum(i, axis=(0, 1), keepdims=True), i8.sum(axis=(0, 1), keepdims=True,
                                                       dtype=np.int64)),
        (hal.max(x, axis=0), a.max(axis=0)),
        (hal.matmul(x, hal.matrix_transpose(y)), a @ b.T),
        (hal.matmul(i, hal.matrix_transpose(i)), i8 @ i8.T),
        (hal.nn.softmax(x, axis=0), ops.spec("softmax").evaluate(a, axis=0)),
        (hal.nn.layer_norm(y), ops.spec("layer_norm").evaluate(b)),
        (hal.nn.gelu(y, approximate="tanh"), ops.spec("gelu").evaluate(b, approximate="tanh")),
        (hal.exp(hal.astype(y, hal.float16)), ops.spec("exp").evaluate(b.astype(np.float16))),
    ]
    for got, want in checks:
        got = got.numpy()
        assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
        rtol = 2e-3 if want.dtype == np.float16 else 2e-5
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                                   rtol=rtol, atol=1e-6)


def test_large_inputs_take_the_parallel_loops(device):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((300, 301))
    a[7, 9] = np.nan
    i32 = rng.integers(-1000, 1000, (70, 80)).astype(np.int32)
    x, i = _on(device, a, i32)
    hal.settings.fallback = "error"
    np.testing.assert_array_equal(hal.min(x, axis=1).numpy(), a.min(axis=1))
    np.testing.assert_allclose(hal.nn.log_softmax(x, axis=0).numpy(),
                               ops.spec("log_softmax").evaluate(a, axis=0), rtol=1e-12)
    np.testing.assert_array_equal(hal.matmul(i, hal.matrix_transpose(i)).numpy(), i32 @ i32.T)


def test_take_and_int8_kernels_give_the_references_answers(device):
    rng = np.random.default_rng(2)
    table = rng.standard_normal((1000, 96)).astype(np.float32)  # an embedding: the parallel loop
    tokens = rng.integers(-1000, 1000, (4, 200)).astype(np.int32)
    c128 = rng.standard_normal((3, 5)) + 1j
    x = (rng.standard_normal((40, 3, 600)) * 200).astype(np.float32)
    x[0, :, :5] = [np.nan, np.inf, -np.inf, 2.5, -2.5]  # saturation, NaN, halves to even
    scale = np.float32([0.5, 0.7, 2.0])
    zeros = {np.int8: np.int8([-3, 0, 100]), np.uint8: np.uint8([0, 128, 255])}
    t, i, c, xs, s = _on(device, table, tokens, c128, x, scale)
    hal.settings.fallback = "error"
    take = ops.spec("take").evaluate
    np.testing.assert_array_equal(hal.take(t, i, axis=0).numpy(), take(table, tokens, axis=0))
    np.testing.assert_array_equal(hal.take(t, i).numpy(), take(table, tokens))
    last = np.array([-1, 0])
    np.testing.assert_array_equal(hal.take(c[:, ::2], hal.asarray(last, device=device),
                                           axis=1).numpy(), take(c128[:, ::2], last, axis=1))
    with pytest.raises(hal.DomainError, match="index 1000 is out of range"):
        hal.take(t, hal.asarray([1000], device=device), axis=0)
    for zero in zeros.values():
        z = hal.asarray(zero, device=device)
        want = ops.spec("quantize_linear").evaluate(x, scale, zero, axis=1)
        got = hal.quantize_linear(xs, s, z, axis=1)
        np.testing.assert_array_equal(got.numpy(), want)
        np.testing.assert_array_equal(
            hal.dequantize_linear(got, s, z, axis=1).numpy(),
            ops.spec("dequantize_linear").evaluate(want, scale, zero, axis=1))
        per_tensor = hal.quantize_linear(hal.astype(xs, hal.float64), s[1], z[2])
        np.testing.assert_array_equal(per_tensor.numpy(), ops.spec("quantize_linear").evaluate(
            x.astype(np.float64), scale[1], zero[2]))
    a = rng.integers(0, 256, (2, 30, 700)).astype(np.uint8)  # batched: one parallel GEMM
    b = rng.integers(-128, 128, (700, 40)).astype(np.int8)
    params = {"a_zero_point": 255, "b_zero_point": -128}
    np.testing.assert_array_equal(hal.qmatmul(*_on(device, a, b), **params).numpy(),
                                  ops.spec("qmatmul").evaluate(a, b, **params))


def test_a_donated_kv_cache_is_updated_in_place(device):
    def write(cache, row, position):
        return hal.dynamic_update_slice(cache, row, hal.pad(position, ((0, 1),)))

    step = hal.jit(write, donate_argnums=(0,))
    cache, row = np.arange(12, dtype=np.float32).reshape(4, 3), np.full((1, 3), -1, np.float32)
    c, r = _on(device, cache, row)
    memory = c.native
    hal.settings.fallback = "error"
    for position in (1, 9):  # 9 is clamped to the last row
        where = hal.asarray(np.array([position]), device=device)
        want = ops.spec("dynamic_update_slice").evaluate(cache, row, np.array([position, 0]))
        c, cache = step(c, r, where), want
        np.testing.assert_array_equal(c.numpy(), want)
        assert c.native is memory


@pytest.mark.parametrize(("op", "dtype", "status", "ran"), [
    ("matmul", hal.float32, kit.PASS, "kernel"),
    ("add", hal.int8, kit.PASS, "kernel"),
    ("log_softmax", hal.float64, kit.PASS, "kernel"),
    ("sum", hal.bfloat16, kit.PASS, "kernel"),  # the float32 kernel, rounded once
    ("take", hal.bfloat16, kit.PASS, "kernel"),  # bits copied as 16-bit words
    ("take", hal.complex128, kit.PASS, "kernel"),
    ("quantize_linear", hal.float64, kit.PASS, "kernel"),
    ("dequantize_linear", hal.uint8, kit.PASS, "kernel"),
    ("qmatmul", hal.int8, kit.PASS, "kernel"),
    ("dynamic_update_slice", hal.float16, kit.PASS, "kernel"),
    ("var", hal.float32, kit.PASS, "decomposed"),
    ("sort", hal.float32, kit.FALLBACK, "fallback"),
    ("fftn", hal.complex64, kit.FALLBACK, "fallback"),
])
def test_conformance_cells(device, op, dtype, status, ran):
    cell = kit.check_cell(device, ops.spec(op), dtype, examples=5)
    assert (cell.status, cell.ran) == (status, ran), cell.error


def test_device_describes_numba_and_its_target(device):
    import numba

    caps = device.capabilities
    assert caps.runtime_version == f"numba {numba.__version__}"
    assert caps.extra["llvm_cpu"] in caps.name
    assert {"matmul", "softmax", "where", "all_reduce"} <= set(caps.ops)
    assert "fftn" not in caps.ops


def test_without_numba_it_says_why(device, monkeypatch):
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "numba" else find_spec(name, *a))
    assert "numba is not installed" in type(device.backend)().why_unavailable()


def _hal_names(tree: ast.AST) -> list[str]:
    """Problems: hal imported other than as `import hal`, private hal attributes, backends."""
    problems = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                root = alias.name.split(".")[0]
                if root == "backends" or (root == "hal" and (alias.name, alias.asname) !=
                                          ("hal", None)):
                    problems.append(f"line {node.lineno}: import {alias.name}")
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and \
                node.module.split(".")[0] in ("hal", "backends"):
            problems.append(f"line {node.lineno}: from {node.module} import ...")
        elif isinstance(node, ast.Attribute):
            chain, inner = [node.attr], node.value
            while isinstance(inner, ast.Attribute):
                chain.append(inner.attr)
                inner = inner.value
            if isinstance(inner, ast.Name) and inner.id == "hal" and \
                    any(part.startswith("_") for part in chain):
                problems.append(f"line {node.lineno}: hal.{'.'.join(reversed(chain))}")
    return problems


def test_the_package_uses_public_hal_names_only():
    files = sorted((PACKAGE / "hal_numba").glob("*.py"))
    assert len(files) >= 3
    for path in files:
        assert _hal_names(ast.parse(path.read_text())) == [], path.name
    found = _hal_names(ast.parse("from hal.dispatch import call\nimport backends.cpu\n"
                                 "import hal.ops\nhal.settings._fallback = 1\n"))
    assert sorted(found) == ["line 1: from hal.dispatch import ...",
                             "line 2: import backends.cpu", "line 3: import hal.ops",
                             "line 4: hal.settings._fallback"]


def test_pyproject_declares_the_entry_point():
    project = tomllib.loads((PACKAGE / "pyproject.toml").read_text())["project"]
    assert project["name"] == "hal-numba"
    assert {d.split(">")[0].split("=")[0] for d in project["dependencies"]} == {"hal", "numba"}
    assert project["entry-points"]["hal.backends"] == {"numba": ENTRY_POINT}
    installed = {p.name: p.value for p in entry_points(group=GROUP)}
    if "numba" in installed:  # installed (ci/setup.sh does): from this package
        assert installed["numba"] == ENTRY_POINT
