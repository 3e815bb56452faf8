"""Eager dispatch overhead: hal `add` against the bare numpy call (pytest-benchmark), and
what a repeated eager or jitted call runs (counted, not timed).

Run with timing: `pytest tests/hal/test_dispatch_overhead.py --benchmark-enable
--benchmark-group-by=param:n`. In the normal test run the benchmarks execute once and
only their values are checked; speed goals live in benchmark reports, not assertions.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

import hal
from hal import dispatch
from hal.compile.capture import WARMUP
from hal.compile.executable import Executable
from hal.dispatch import _call

SIZES = [1_000, 1_000_000]


@pytest.fixture(params=SIZES, ids=lambda n: f"n={n}")
def operands(request):
    rng = np.random.default_rng(0)
    a, b = (rng.random(request.param, dtype=np.float32) for _ in range(2))
    return a, b


def test_numpy_add(benchmark, operands):
    a, b = operands
    out = benchmark(np.add, a, b)
    assert out.dtype == np.float32


def test_hal_add(benchmark, operands):
    a, b = operands
    x, y = hal.asarray(a, device="cpu"), hal.asarray(b, device="cpu")
    out = benchmark(hal.add, x, y)
    np.testing.assert_array_equal(out.numpy(), a + b)


def test_hal_operator_add(benchmark, operands):
    a, b = operands
    x, y = hal.asarray(a, device="cpu"), hal.asarray(b, device="cpu")
    out = benchmark(lambda: x + y)
    np.testing.assert_array_equal(out.numpy(), a + b)


def test_hal_jit_add(benchmark, operands):
    a, b = operands
    x, y = hal.asarray(a, device="cpu"), hal.asarray(b, device="cpu")
    jitted = hal.jit(lambda p, q: p + q)
    for _ in range(WARMUP + 1):
        jitted(x, y)
    out = benchmark(jitted, x, y)
    np.testing.assert_array_equal(out.numpy(), a + b)


# -- what a repeated call does (structure, not time) --------------------------------------------
def _operands(cpu, n=5, dtype=np.float32):
    rng = np.random.default_rng(1)
    a, b = (rng.random(n).astype(dtype) for _ in range(2))
    return a, b, hal.asarray(a, device=cpu), hal.asarray(b, device=cpu)


def _python_frames(fn) -> list[str]:
    """The Python functions of hal (module:name) that run inside fn()."""
    seen = []

    def profile(frame, event, arg):
        module = frame.f_globals.get("__name__", "")
        if event == "call" and module.startswith("hal."):
            seen.append(f"{module}:{frame.f_code.co_name}")

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return seen


def test_a_repeated_eager_call_runs_its_kernel_in_one_frame(cpu, monkeypatch):
    a, b, x, y = _operands(cpu)
    np.testing.assert_array_equal((x + y).numpy(), a + b)  # the first call binds
    slow = []
    monkeypatch.setattr(dispatch, "_call", lambda *args: slow.append(args) or _call(*args))
    for op, want in ((lambda: x + y, a + b), (lambda: hal.add(x, y), a + b),
                     (lambda: hal.op("add", x, y), a + b)):
        out = op()
        np.testing.assert_array_equal(out.numpy(), want)
        assert out.shape == (5,) and out.dtype == hal.float32 and out.device is cpu
    assert slow == []  # no operand checks, promotion or meta rule again
    assert _python_frames(lambda: x + y) == ["hal.dispatch:fn"]
    np.testing.assert_array_equal(hal.exp(x).numpy(), np.exp(a))
    assert _python_frames(lambda: hal.exp(x)) == ["hal.dispatch:fn"]


def test_a_bound_call_still_reports_to_placement_and_observers(cpu):
    a, b, x, y = _operands(cpu)
    x * y
    with hal.placement() as where:
        x * y
    assert where.records == [("multiply", "cpu:0", "float32", "kernel")]
    seen = []
    with hal.dispatch.observe(lambda spec, args, params, out, how: seen.append(spec.name)):
        np.testing.assert_array_equal((x * y).numpy(), a * b)
    assert seen == ["multiply"]


def test_a_bound_call_keeps_the_errors_of_other_shapes_dtypes_and_values(cpu):
    a, b, x, y = _operands(cpu)
    x - y
    with pytest.raises(hal.ShapeError, match="subtract"):
        x - hal.asarray(np.ones(4, np.float32), device=cpu)
    mixed = x - hal.asarray(b.astype(np.float64), device=cpu)  # promoted, not the bound call
    assert mixed.dtype == hal.float64
    np.testing.assert_allclose(mixed.numpy(), a.astype(np.float64) - b)
    with pytest.raises(hal.UnsupportedDType, match="subtract"):
        hal.asarray([True], device=cpu) - hal.asarray([False], device=cpu)
    ints = hal.asarray(np.array([2, 3], np.int64), device=cpu)
    for _ in range(2):  # an op that checks values is never bound
        with pytest.raises(hal.DomainError):
            ints ** hal.asarray(np.array([-1, 1], np.int64), device=cpu)


def test_a_bound_kernel_that_raises_is_a_kernel_error(cpu, monkeypatch):
    *_, x, y = _operands(cpu, n=7)
    x + y
    key = ("add", cpu, x.dtype, x.shape, cpu, y.dtype, y.shape)
    _, shape, dtype, name = dispatch._bound[key]

    def broken(*natives):
        raise RuntimeError("device lost")

    monkeypatch.setitem(dispatch._bound, key, (broken, shape, dtype, name))
    with pytest.raises(hal.KernelError, match=r"add on cpu:0 .*float32\(7,\).*RuntimeError: "
                       "device lost"):
        x + y


def test_eager_binding_leaves_tracing_to_hal_jit(cpu):
    a, b, x, y = _operands(cpu)
    x + y
    jitted = hal.jit(lambda p, q: p + q * 2.0)
    assert [n.op for n in jitted.graph(x, y).nodes] == ["multiply", "add"]
    np.testing.assert_allclose(jitted(x, y).numpy(), a + b * 2, rtol=1e-6)


def test_a_repeated_jit_call_runs_the_generated_function(cpu, monkeypatch):
    a, b, x, y = _operands(cpu)
    jitted = hal.jit(lambda p, q: (p + q, q))
    for _ in range(WARMUP + 2):  # checked, offered for capture (the cpu refuses): then ready
        jitted(x, y)
    slow = []
    checked = Executable._call
    monkeypatch.setattr(Executable, "_call",
                        lambda self, inputs: slow.append(inputs) or checked(self, inputs))
    total, same = jitted(x, y)
    np.testing.assert_array_equal(total.numpy(), a + b)
    assert same is y and total.shape == (5,) and total.dtype == hal.float32
    assert slow == []
    assert _python_frames(lambda: jitted(x, y)) == ["hal.compile.jit:__call__"]
    with hal.placement() as where:  # recording takes the executable's checked way
        jitted(x, y)
    assert len(slow) == 1 and where.records == [("fused(add)", "cpu:0", "float32", "compiled")]


def test_a_jitted_step_that_raises_later_names_its_node(cpu, monkeypatch):
    *_, x, y = _operands(cpu)
    lost = []
    bind = Executable._bind

    def flaky(self, node):  # each step as bound, raising once `lost` says so
        step = bind(self, node)

        def run(*natives, **out):
            if lost:
                raise RuntimeError("device lost")
            return step(*natives, **out)

        run.takes_out = getattr(step, "takes_out", False)
        return run

    monkeypatch.setattr(Executable, "_bind", flaky)
    jitted = hal.jit(lambda p, q: hal.exp(p) * q)
    for _ in range(WARMUP + 2):
        jitted(x, y)
    lost.append(True)
    with pytest.raises(hal.KernelError, match=r"node %0 .* on cpu:0.*RuntimeError: device lost"):
        jitted(x, y)


def test_a_tensor_and_a_number_are_bound_with_the_number(cpu, monkeypatch):
    a, _, x, _ = _operands(cpu)
    cases = [(lambda: x * 2.0, a * np.float32(2.0)), (lambda: 2.0 * x, a * np.float32(2.0)),
             (lambda: x - 3, a - 3), (lambda: 1.5 - x, np.float32(1.5) - a),
             (lambda: x + 0.5, a + np.float32(0.5)), (lambda: x * 3.0, a * np.float32(3.0))]
    for op, _ in cases:
        op()
    slow = []
    monkeypatch.setattr(dispatch, "_call", lambda *args: slow.append(args) or _call(*args))
    for op, want in cases:
        out = op()
        np.testing.assert_array_equal(out.numpy(), want)
        assert out.dtype == hal.float32 and out.shape == (5,)
    assert slow == []
    assert "hal.dispatch:_call" not in _python_frames(lambda: 2.0 * x)


def test_numbers_a_key_cannot_tell_apart_are_not_bound(cpu, monkeypatch):
    z = hal.asarray(np.array([-0.0, 0.0]), device=cpu)
    ints = hal.asarray(np.array([1, 2], np.int8), device=cpu)
    for _ in range(2):  # -0.0 == 0.0, NaN != NaN, True == 1, a promoted tensor: never bound
        np.testing.assert_array_equal(np.signbit((z + -0.0).numpy()), [True, False])
        np.testing.assert_array_equal(np.signbit((z * -0.0).numpy()), [False, True])
        np.testing.assert_array_equal(np.signbit((z * 0.0).numpy()), [True, False])
        assert np.isnan((z + float("nan")).numpy()).all()
        np.testing.assert_array_equal((ints * 2.5).numpy(), [2.5, 5.0])
        assert (ints * 2.5).dtype == hal.float64 and (ints + True).dtype == hal.int8
        with pytest.raises(hal.HalError, match="300 does not fit int8"):
            ints + 300
    numbers = [k for k in dispatch._bound if len(k) == 7 and k[4] in (float, int, bool)]
    assert not [k for k in numbers if k[4] is bool or k[5] != k[5]
                or (k[4] is float and k[5] == 0) or (k[2] == hal.int8 and k[5] in (2.5, 300))]


def test_a_bound_call_with_a_number_names_it_when_the_kernel_raises(cpu, monkeypatch):
    *_, x, _ = _operands(cpu, n=3)
    x * 7.0
    key = ("multiply", cpu, x.dtype, x.shape, float, 7.0, 1)
    _, shape, dtype, name = dispatch._bound[key]

    def broken(native):
        raise RuntimeError("device lost")

    monkeypatch.setitem(dispatch._bound, key, (broken, shape, dtype, name))
    with pytest.raises(hal.KernelError, match=r"multiply on cpu:0 .*float32\(3,\), 7.0"):
        x * 7.0


def test_one_tensor_and_parameters_are_bound_with_the_parameters(cpu, monkeypatch):
    rng = np.random.default_rng(1)
    a = rng.random((3, 8))
    c = (a + 1j * rng.random((3, 8))).astype(np.complex64)
    x, z = hal.asarray(a, device=cpu), hal.asarray(c, device=cpu)
    cases = [(lambda: hal.sum(x, axis=0), a.sum(axis=0)),
             (lambda: hal.sum(x, axis=1, keepdims=True), a.sum(axis=1, keepdims=True)),
             (lambda: hal.fft.fft(z), np.fft.fft(c)),
             (lambda: hal.fft.fft(z, norm="ortho"), np.fft.fft(c, norm="ortho")),
             (lambda: hal.fft.fft(z, axis=0), np.fft.fft(c, axis=0))]
    for op, _ in cases:
        op()
    slow = []
    monkeypatch.setattr(dispatch, "_call", lambda *args: slow.append(args) or _call(*args))
    for op, want in cases:  # each its own parameters' result
        np.testing.assert_allclose(op().numpy(), want, rtol=2e-6, atol=1e-5)
    assert slow == []


def test_parameters_a_key_cannot_tell_apart_are_not_bound(cpu):
    x = hal.asarray(np.arange(6.0).reshape(2, 3), device=cpu)
    for _ in range(2):
        np.testing.assert_array_equal(hal.sum(x, axis=1).numpy(), [3.0, 12.0])
        with pytest.raises(hal.HalError, match="sum"):  # True == 1, yet no axis
            hal.sum(x, axis=True)
        with pytest.raises(hal.HalError, match="sum"):
            hal.sum(x, axis=[1])  # unhashable: the checked way
    assert [k for k in dispatch._bound if k[0] == "sum" and k[3] == (2, 3)]  # axis=1 was
