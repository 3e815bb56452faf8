"""Numerics every backend must share with numpy: edge values, not random ones.

var with correction >= N, relu and NaN, tanh of tiny inputs, complex functions at
infinities and NaN, integer powers with negative exponents, NaN through quantize_linear,
float16 graphs that round every node's result under hal.jit as eagerly, the NaN mean of
nothing and int64 sums that wrap (eager and under hal.jit). Each test runs on every
registered backend (a missing one is skipped with its reason) and compares with numpy, or
with ONNX Runtime where hal follows it.
"""

from __future__ import annotations

import functools
import itertools
import sys
import types

import numpy as np
import pytest

import hal
from hal import dtypes as dt
from hal.conformance.compare import mismatch


@pytest.fixture(params=hal.backends())
def dev(request):
    """Device 0 of each registered backend; the CPU fallback refused except on null (which
    has no kernels), so each backend's own kernels or decompositions are what is tested."""
    name = request.param
    if name not in hal.available_backends():
        pytest.skip(f"{name}: {hal.backend(name).why_unavailable()}")
    with hal.fallback_policy("allow" if name == "null" else "error"):
        yield hal.device(name)


def _dtypes(dev, among) -> list:
    """The dtypes of `among` the device holds (the test is skipped if none)."""
    held = [d for d in among if d is not None and d.name in dev.capabilities.dtypes]
    if not held:
        pytest.skip(f"{dev.name} holds none of {', '.join(d.name for d in among if d)}")
    return held


def _same(actual: np.ndarray, expected: np.ndarray, op: str) -> None:
    """Values within the op's tolerance, NaN and inf where numpy has them, and the sign of
    every zero numpy returns."""
    problem = mismatch(actual, expected, hal.ops.spec(op).tolerance_for(expected.dtype))
    assert not problem, f"{op}: {problem}"
    for part in (np.real, np.imag) if dt.is_complex(expected.dtype) else (np.asarray,):
        zero = part(expected) == 0
        signs = np.signbit(part(actual)) == np.signbit(part(expected))
        bad = zero & ~signs
        assert not bad.any(), f"{op}: the sign of a zero differs at {np.argwhere(bad)[0]}"


# -- var with correction >= N: inf (NaN for a constant input), never negative -------------
@pytest.mark.filterwarnings("ignore:Degrees of freedom:RuntimeWarning")
@pytest.mark.parametrize("correction", [2, 3, 4, 5.5])
def test_var_with_correction_at_or_beyond_n_is_inf_or_nan_as_numpy(dev, correction):
    rows = np.array([[1.0, 2.0, 4.0], [3.0, 3.0, 3.0]])
    for d in _dtypes(dev, (dt.float16, dt.float32, dt.float64)):
        x = hal.asarray(rows.astype(d), device=dev)
        for axis in (-1, None):
            got = hal.nn.var(x, axis=axis, correction=correction).numpy()
            with np.errstate(all="ignore"):
                expected = np.asarray(np.var(rows, axis=axis, ddof=correction)).astype(d)
            assert not (got < 0).any(), f"{d.name} axis={axis}: negative variance {got}"
            _same(got, expected, "var")


def _cupy_var(x, axis=None, ddof=0, keepdims=False):
    """numpy's var where cupy's agrees; cupy's own divisor rule where it does not (cupy 13
    gives NaN when ddof >= N, older releases raise ZeroDivisionError; numpy gives inf)."""
    n = x.size if axis is None else x.shape[axis]
    if ddof >= n:
        raise ZeroDivisionError("cupy.var: ddof >= N")
    return np.var(x, axis=axis, ddof=ddof, keepdims=keepdims)


@pytest.mark.filterwarnings("ignore:Degrees of freedom:RuntimeWarning")
def test_cuda_var_rule_on_the_cpu(monkeypatch):
    """The CUDA kernel's divisor rule, run here with numpy standing in for cupy."""
    from backends.cuda import reduce

    fake = types.SimpleNamespace(var=_cupy_var)
    monkeypatch.setitem(sys.modules, "cupy", fake)
    rows = np.array([[1.0, 2.0, 4.0], [3.0, 3.0, 3.0]], np.float32)
    for correction in (1, 3, 4.5):
        with np.errstate(all="ignore"):
            got = reduce.var(rows, axis=-1, correction=correction)
            expected = np.var(rows, axis=-1, ddof=correction)
        np.testing.assert_array_equal(got, expected, err_msg=f"correction={correction}")


# -- relu keeps NaN (numpy's maximum(x, 0)) --------------------------------------------------
def _computed(dev, op: str, dtypes, arity: int = 1) -> list:
    """The dtypes the device computes `op` in without the CPU fallback (which this file
    refuses; conformance counts fallbacks): ONNX Runtime lacks most bfloat16 kernels, the
    numba plugin complex functions."""
    out = []
    for d in dtypes:
        try:
            hal.op(op, *[hal.asarray(np.ones(2, d), device=dev)] * arity)
        except hal.FallbackRefused:
            continue
        out.append(d)
    return out


def test_relu_keeps_nan_alone_and_as_the_epilogue_of_linear(dev):
    x = np.array([np.nan, -1.0, -0.0, 2.0, -np.inf, np.inf])
    for d in _computed(dev, "relu", _dtypes(dev, dt.REALS)):
        host = x.astype(d)
        np.testing.assert_array_equal(  # in float32: numpy's testing misses bfloat16's NaN
            hal.nn.relu(hal.asarray(host, device=dev)).numpy().astype(np.float32),
            np.maximum(host, 0).astype(np.float32), err_msg=d.name)
    for d in _dtypes(dev, (dt.float32, dt.float64)):
        a = np.array([[1.0, np.nan], [2.0, -3.0]], d)
        w = np.array([[1.0, -1.0], [1.0, 1.0]], d)
        got = hal.nn.linear(hal.asarray(a, device=dev), hal.asarray(w, device=dev),
                            activation="relu").numpy()
        np.testing.assert_array_equal(got, np.maximum(a @ w, 0), err_msg=d.name)


# -- tanh of tiny and subnormal inputs, relative to |tanh| -----------------------------------
def _tiny(d) -> np.ndarray:
    info = dt.machine_limits(d)
    v = np.array([1e-5, 3e-7, 1e-20, 1e-3, 0.0499, 0.05, 0.0501, 0.3, 4.0], np.float64)
    v = np.concatenate([v, -v, [info.smallest_normal, info.smallest_subnormal, 0.0, -0.0]])
    return v.astype(d)[np.isfinite(v.astype(d))]


@pytest.mark.parametrize("form", ["tanh", "linear(activation='tanh')"])
def test_tanh_of_tiny_inputs_is_accurate_to_its_tolerance(dev, form):
    for d in _computed(dev, "tanh", _dtypes(dev, dt.REALS)):
        x = _tiny(d)
        if dev.backend.name == "onnxruntime":  # its kernels flush subnormal results to zero
            x = x[(np.abs(x) >= dt.finfo(d).smallest_normal) | (x == 0)]
        t = hal.asarray(x, device=dev)
        if form == "tanh":
            got = hal.tanh(t).numpy()
        else:  # the fused epilogue: x @ identity, then tanh
            eye = hal.asarray(np.eye(1, dtype=d), device=dev)
            got = hal.nn.linear(hal.reshape(t, (-1, 1)), eye, activation="tanh").numpy()
            got = got.reshape(-1)
        expected = np.tanh(x.astype(np.float64))
        rtol = hal.ops.spec("tanh").tolerance_for(d)[0]
        err = np.abs(got.astype(np.float64) - expected)
        worst = np.argmax(err - rtol * np.abs(expected))
        assert (err <= rtol * np.abs(expected)).all(), (
            f"{form} {d.name}: tanh({x[worst]!r}) = {got[worst]!r}, numpy {expected[worst]!r}")
        if form == "tanh":  # (a product's sum starts at +0, so linear gives tanh(+0) for -0)
            assert (np.signbit(got) == np.signbit(x)).all(), f"{d.name}: sign of a zero"


# -- complex functions at zeros, infinities, NaN and near overflow (C99 Annex G) --------------
def _special(d) -> np.ndarray:
    """Every pair of special and boundary values as (real, imag)."""
    big = np.finfo(dt.real_dtype(d)).max / 2
    parts = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, big, -big, 1e-40, 30.0, -30.0,
             100.0, 1.5707964, 800.0 if d == dt.complex128 else 89.5]
    re, im = np.array(list(itertools.product(parts, parts))).T
    z = np.empty(re.shape, d)
    z.real, z.imag = re, im  # assigned part by part: re + 1j*im would turn inf*0 into NaN
    return z


@pytest.mark.parametrize("op", ["exp", "tanh", "sqrt", "sin", "cos"])
def test_complex_functions_give_numpys_special_values(dev, op):
    for d in _computed(dev, op, _dtypes(dev, dt.COMPLEX)):
        z = _special(d)
        got = getattr(hal, op)(hal.asarray(z, device=dev)).numpy()
        with np.errstate(all="ignore"):
            expected = getattr(np, op)(z)
        _same(got, expected, op)


def test_complex_division_by_zero_and_infinities_is_numpys(dev):
    for d in _computed(dev, "divide", _dtypes(dev, dt.COMPLEX), arity=2):
        z = _special(d)
        a, b = np.repeat(z[::16], 15), np.tile(z[::15], len(z[::16]))
        got = hal.divide(hal.asarray(a, device=dev), hal.asarray(b, device=dev)).numpy()
        with np.errstate(all="ignore"):
            expected = a / b
        _same(got, expected, "divide")


# -- integer powers with negative exponents: one DomainError everywhere ----------------------
def test_integer_power_refuses_negative_exponents_and_keeps_exact_results(dev):
    for d in _dtypes(dev, (dt.int8, dt.int32, dt.int64)):
        base = hal.asarray(np.array([2, -3, 1], d), device=dev)
        with pytest.raises(hal.DomainError, match=f"power: {d.name} .*negative.*floating"):
            hal.power(base, hal.asarray(np.array([1, -1, 2], d), device=dev))
        with pytest.raises(hal.DomainError, match="cast the operands to a floating dtype"):
            hal.power(base, -2)  # a Python scalar exponent becomes a tensor of d
        exps = np.array([0, 3, 5], d)
        with hal.fallback_policy("allow"):  # tvm has no integer power kernel: the CPU's
            got = hal.power(base, hal.asarray(exps, device=dev)).numpy()
        np.testing.assert_array_equal(got, np.power(np.array([2, -3, 1], d), exps))
    for d in _dtypes(dev, (dt.float32, dt.float64)):  # floats take negative powers
        got = hal.power(hal.asarray(np.array([2.0, 4.0], d), device=dev), -1).numpy()
        np.testing.assert_array_equal(got, np.array([0.5, 0.25], d))


# -- NaN through quantize_linear: the dtype's minimum, as ONNX Runtime gives -----------------
_QX = np.array([np.nan, -np.nan, 1.0, 2.5, np.inf, -np.inf, 300.0, -300.0, 0.0], np.float32)


def _quantize_expected(zdtype) -> np.ndarray:
    """What ONNX Runtime 1.x returns for _QX with scale 0.5 and zero point 3."""
    lo, hi = np.iinfo(zdtype).min, np.iinfo(zdtype).max
    return np.array([lo, lo, 5, 8, hi, lo, hi, lo, 3]).astype(zdtype)


def test_quantize_linear_sends_nan_to_the_minimum_on_every_backend(dev):
    for d in _dtypes(dev, hal.ops.spec("quantize_linear").dtypes):
        if "quantize_linear" not in dev.capabilities.ops:
            pytest.skip(f"{dev.name} has no quantize_linear kernel")
        for zdtype in (np.uint8, np.int8):
            x = hal.asarray(_QX.astype(d), device=dev)
            scale = hal.asarray(np.float32(0.5), device=dev)
            zero = hal.asarray(np.array(3, zdtype), device=dev)
            got = hal.quantize_linear(x, scale, zero).numpy()
            np.testing.assert_array_equal(got, _quantize_expected(zdtype),
                                          err_msg=f"{d.name} -> {zdtype.__name__}")
            per_channel = hal.quantize_linear(  # the same through the per-channel path
                hal.reshape(x, (3, 3)), hal.asarray(np.full(3, 0.5, np.float32), device=dev),
                hal.asarray(np.full(3, 3, zdtype), device=dev), axis=0).numpy()
            np.testing.assert_array_equal(per_channel.reshape(-1), _quantize_expected(zdtype))


def test_quantize_reference_agrees_with_onnx_runtime():
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    for zdtype, proto in ((np.uint8, TensorProto.UINT8), (np.int8, TensorProto.INT8)):
        graph = helper.make_graph(
            [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"])], "q",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(_QX.shape))],
            [helper.make_tensor_value_info("y", proto, list(_QX.shape))],
            initializer=[helper.make_tensor("s", TensorProto.FLOAT, [], [0.5]),
                         helper.make_tensor("z", proto, [], [3])])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
        session = ort.InferenceSession(model.SerializeToString(),
                                       providers=["CPUExecutionProvider"])
        expected = session.run(None, {"x": _QX})[0]
        reference = hal.ops.spec("quantize_linear").evaluate(
            _QX, np.array(0.5, np.float32), np.array(3, zdtype))
        np.testing.assert_array_equal(reference, expected, err_msg=zdtype.__name__)
        np.testing.assert_array_equal(_quantize_expected(zdtype), expected)


# -- float16 graphs round every node's result, under hal.jit as eagerly ----------------------
_ROUNDS = {  # (xp, a, b) -> result, where a float16 intermediate differs from a float32 one
    "overflow": (lambda xp, a, b: (a * a - b) / 3.0, [300, 2, 1], [65504, 1, 0.5]),  # a*a: inf
    "rounding": (lambda xp, a, b: (a + b) - a, [2048, 2048, 1], [1, 3, 1e-4]),  # 2049: 2048
    "argmax tie": (lambda xp, a, b: xp.argmax(a + b), [2048, 2048], [0.5, 1]),  # both 2048
}


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
@pytest.mark.parametrize("case", _ROUNDS)
def test_float16_graphs_round_every_node_under_jit_as_eagerly(dev, case):
    _dtypes(dev, (dt.float16,))
    fn, a, b = _ROUNDS[case]
    host = [np.array(a, np.float16), np.array(b, np.float16)]
    args = [hal.asarray(h, device=dev) for h in host]
    expected = fn(np, *host)  # numpy rounds each op's result to float16
    np.testing.assert_array_equal(fn(hal, *args).numpy(), expected, err_msg="eager")
    np.testing.assert_array_equal(hal.jit(lambda a, b: fn(hal, a, b))(*args).numpy(), expected,
                                  err_msg="hal.jit")


# -- reductions at the edges: the mean of nothing is NaN, int64 sums wrap exactly ------------
_BIG = [[2**62, 2**62, 2**62], [2**53 + 1, 1, 0]]  # a sum past the maximum; one past 2**53


@pytest.mark.filterwarnings("ignore:Mean of empty slice:RuntimeWarning",
                            "ignore:invalid value encountered:RuntimeWarning")
@pytest.mark.parametrize("how", ["eager", "jit"])
def test_the_mean_of_nothing_is_nan_and_int64_sums_wrap(dev, how):
    cases = [(lambda xp, x: xp.mean(x), np.zeros(0, d)) for d in
             _dtypes(dev, (dt.float16, dt.float32, dt.float64))]
    cases.append((lambda xp, x: xp.mean(x, axis=1, keepdims=True), np.zeros((2, 0), "f4")))
    if "int64" in dev.capabilities.dtypes:
        big = np.array(_BIG, np.int64)
        cases += [(lambda xp, x: xp.sum(x, axis=1), big), (lambda xp, x: xp.sum(x), big),
                  (lambda xp, x: xp.sum(x, axis=0), big.T)]
    for fn, host in cases:
        on_hal = functools.partial(fn, hal)
        got = (on_hal if how == "eager" else hal.jit(on_hal))(hal.asarray(host, device=dev))
        got = got.numpy()
        expected = fn(np, host)
        assert got.shape == expected.shape, (host.dtype, host.shape)
        np.testing.assert_array_equal(got, expected, err_msg=f"{host.dtype} {host.shape}")
