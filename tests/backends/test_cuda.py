"""The CUDA backend (cupy): kernels against the op set's reference, runtime, bad input.

Without cupy or a GPU only the first tests run: the backend loads without importing
cupy, says why it is unavailable, and nothing else changes; the Python around the
sort, scan and take kernels runs with numpy standing in for cupy, and the C of the float
floor_divide/remainder kernel is compiled for the host. The rest are marked `gpu` and skip
with the backend's own reason. The conformance kit covers every op x dtype on cuda
through tests/conformance/ wherever the backend is available.
"""

from __future__ import annotations

import ctypes
import json
import shutil
import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest

import hal
from hal import dtypes as dt
from hal.conformance.compare import mismatch

RNG = np.random.default_rng(11)


# -- without a GPU ---------------------------------------------------------------------------
def _needs_kernel() -> set[str]:
    """The ops cuda must have kernels for: every primitive and extended op. A composite
    without a fused kernel is not missing: it runs its decomposition into those."""
    return {s.name for s in hal.ops.specs() if s.kind != hal.ops.COMPOSITE}


def test_backend_loads_without_importing_cupy():
    code = textwrap.dedent("""
        import json, sys
        import hal
        backend = hal.backend("cuda")
        print(json.dumps([sorted(backend.kernels.ops()), "cupy" in sys.modules]))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    registered, cupy_imported = json.loads(out)
    assert not cupy_imported
    assert not _needs_kernel() - set(registered), "primitive/extended ops without a cuda kernel"
    assert set(registered) <= set(hal.ops.names())


def test_devices_says_why_cuda_is_unavailable(capsys):
    from hal.cli import main

    backend = hal.backend("cuda")
    reason = backend.why_unavailable()
    assert main(["devices", "--json"]) == 0
    row = {r["backend"]: r for r in json.loads(capsys.readouterr().out)}["cuda"]
    assert row["available"] == (reason is None)
    assert row["ops_with_kernels"] == f"{len(backend.kernels.ops())}/{len(hal.ops.names())}"
    assert not set(row["missing_ops"]) & _needs_kernel()  # only composites, decomposed
    if reason is not None:
        assert row["reason"] == reason and row["devices"] == []
        assert "cupy" in reason or "CUDA" in reason
        assert "cuda" not in hal.available_backends()


def test_why_unavailable_names_the_install_when_cupy_is_missing(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_cupy(name, *args, **kwargs):
        if name == "cupy":
            raise ImportError("No module named 'cupy'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_cupy)
    from backends.cuda import CudaBackend

    reason = CudaBackend().why_unavailable()
    assert "cupy is not installed" in reason and "cupy-cuda12x" in reason
    assert "cupy-cuda13x" in reason


# -- kernels' Python on the CPU: numpy standing in for cupy ---------------------------------
NAN = float("nan")


def _radix_order(x: np.ndarray) -> np.ndarray:
    """The order CUB's radix sort gives a 1-d float array: by bit pattern with -0.0 as +0.0,
    so NaNs sort by their bits (a NaN with the sign bit set comes first)."""
    bits = np.where(x == 0, np.zeros_like(x), x).view(f"u{x.itemsize}")
    top = np.array(1, bits.dtype) << np.array(8 * x.itemsize - 1, bits.dtype)
    return np.argsort(np.where(bits & top, ~bits, bits | top), kind="stable")


@pytest.fixture
def numpy_as_cupy(monkeypatch):
    """`import cupy` gives numpy, whose sort/argsort of a 1-d float array order NaNs by
    bit pattern as cupy's does on a GPU (n-d ones put every NaN last, as cupy's do)."""
    fake = types.ModuleType("cupy")
    fake.__getattr__ = lambda name: getattr(np, name)

    def argsort(a, axis=-1):
        if a.ndim == 1 and dt.is_floating(a.dtype):
            return _radix_order(a)
        return np.argsort(a, axis=axis, kind="stable")

    fake.argsort = argsort
    fake.sort = lambda a, axis=-1: np.take_along_axis(a, argsort(a, axis), axis)
    monkeypatch.setitem(sys.modules, "cupy", fake)
    return fake


def _check_host(name, got, *host, **params):
    spec = hal.ops.spec(name)
    expected = spec.evaluate(*host, **params)
    bound = spec.bound(*host, **params) if spec.bound else None
    problem = mismatch(np.asarray(got), expected, spec.tolerance_for(expected.dtype), bound)
    assert not problem, f"{name}{params}: {problem}"


def _with_ties_and_nans(d):
    """A (4, 6) array of d with ties, signed zeros, infinities and NaNs of both signs."""
    row = np.array([2, NAN, -0.0, 1, -NAN, 0.0, 2, -np.inf, np.inf, 1, NAN, -1], np.float64)
    x = np.stack([row, row[::-1], np.roll(row, 5), -row]).reshape(4, 12)[:, :6]
    return x.astype(d)


def test_the_stand_in_orders_nans_by_bits_as_cub_does(numpy_as_cupy):
    out = numpy_as_cupy.sort(np.array([1.0, -NAN, -np.inf, NAN]))
    assert np.isnan(out[0]) and np.signbit(out[0]) and np.isnan(out[-1])  # what _keys undoes


@pytest.mark.parametrize("d", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_and_argsort_order_nans_and_ties_as_the_reference(numpy_as_cupy, d, descending):
    from backends.cuda import sorting

    if d == "bfloat16" and dt.bfloat16 is None:
        pytest.skip("no bfloat16 without ml_dtypes")
    x = _with_ties_and_nans(dt.dtype(d))
    for case, axis in ((x, -1), (x, 0), (x[1], 0), (x.ravel(), -1)):
        params = {"axis": axis, "descending": descending}
        _check_host("sort", sorting.sort(case, **params), case, **params)
        _check_host("argsort", sorting.argsort(case, **params), case, **params)


@pytest.mark.parametrize("d", ["bool", "int8", "uint8", "int64"])
def test_sort_and_argsort_exact_dtypes(numpy_as_cupy, d):
    from backends.cuda import sorting

    x = RNG.integers(0, 3, (5, 7)).astype(d)  # few values: many ties
    for axis, descending in ((-1, False), (0, True), (1, True)):
        params = {"axis": axis, "descending": descending}
        _check_host("sort", sorting.sort(x, **params), x, **params)
        _check_host("argsort", sorting.argsort(x, **params), x, **params)


@pytest.mark.parametrize("shape", [(0,), (0, 3), (3, 0)])
def test_sort_and_argsort_of_empty_tensors(numpy_as_cupy, shape):
    from backends.cuda import sorting

    x = np.zeros(shape, np.float32)
    for axis in range(len(shape)):
        _check_host("sort", sorting.sort(x, axis=axis), x, axis=axis)
        _check_host("argsort", sorting.argsort(x, axis=axis), x, axis=axis)


@pytest.mark.parametrize("d", ["bool", "int8", "uint8", "int32", "float16", "float32",
                               "complex64"])
def test_cumulative_sum_axes_dtypes_and_initial_zero(numpy_as_cupy, d):
    from backends.cuda.reduce import cumulative_sum

    x = _data((3, 4, 5), d) if d != "bool" else RNG.integers(0, 2, (3, 4, 5)).astype(bool)
    cases = [(x, {"axis": a, "include_initial": i}) for a in (0, -1, 1) for i in (False, True)]
    cases += [(x[0, 0], {"include_initial": True}), (x[0, 0], {"axis": None}),
              (x[:0], {"axis": 1, "include_initial": True}),
              (x[:, :0], {"axis": 1, "include_initial": True})]
    for case, params in cases:
        got = cumulative_sum(case, **params)
        assert got.shape == hal.ops.spec("cumulative_sum").meta(case, **params)[0]
        _check_host("cumulative_sum", got, case, **params)


@pytest.mark.parametrize("d", ["bfloat16", "float32", "complex128", "int8", "bool"])
def test_take_along_an_axis_and_flattened(numpy_as_cupy, d):
    from backends.cuda.movement import take

    if d == "bfloat16" and dt.bfloat16 is None:
        pytest.skip("no bfloat16 without ml_dtypes")
    x = _data((3, 4), "float32").astype(d) if d != "bool" else RNG.random((3, 4)) < 0.5
    for idtype in (np.int32, np.int64):
        idx = np.array([[-1, 0], [2, -3]], idtype)
        for case, axis in ((x, 0), (x, -1), (x[1], None), (x.ravel(), 0)):
            _check_host("take", take(case, idx, axis=axis), case, idx, axis=axis)
        _check_host("take", take(x, idx[0, 0], axis=1), x, idx[0, 0], axis=1)  # 0-d indices
        _check_host("take", take(x, idx[:0], axis=1), x, idx[:0], axis=1)


@pytest.mark.parametrize("d", ["bfloat16", "float32", "complex128", "int8", "bool"])
def test_dynamic_update_slice_clamps_and_writes_a_given_buffer(numpy_as_cupy, d):
    from backends.cuda.movement import dynamic_update_slice

    if d == "bfloat16" and dt.bfloat16 is None:
        pytest.skip("no bfloat16 without ml_dtypes")
    x = _data((3, 4, 5), "float32").astype(d) if d != "bool" else RNG.random((3, 4, 5)) < 0.5
    update = x[:2, :1, 1:4][::-1].copy()
    for idtype in (np.int32, np.int64):
        for starts in ([0, 0, 0], [2, -1, 9], [1, 3, 1]):
            idx = np.array(starts, idtype)
            _check_host("dynamic_update_slice", dynamic_update_slice(x, update, idx),
                        x, update, idx)
            donated = x.copy()
            got = dynamic_update_slice(donated, update, idx, out=donated)
            assert got is donated  # written in place
            _check_host("dynamic_update_slice", got, x, update, idx)
        empty = update[:, :0]
        _check_host("dynamic_update_slice", dynamic_update_slice(x, empty, idx), x, empty, idx)


def _cupy14_matmul(a, b):
    """cupy 14's matmul: bfloat16 only as one 2-d GEMM (its batched path and its vector dot
    look the dtype up by char code, which numpy does not know); the result in a's dtype."""
    rows, cols = a.shape[0] if a.ndim == 2 else 1, b.shape[-1] if b.ndim == 2 else 1
    if a.dtype == dt.bfloat16 and (max(a.ndim, b.ndim) > 2 or rows * cols == 1):
        raise TypeError("data type 'E' not understood")
    return np.matmul(a, b).astype(a.dtype)


@pytest.mark.parametrize(("a_shape", "b_shape"), [
    ((4, 5), (5, 3)), ((2, 3, 4, 5), (5, 3)), ((5,), (5, 3)), ((2, 4, 5), (5,)),
    ((5,), (5,)), ((1, 5), (5, 1)), ((2, 4, 5), (2, 5, 3)), ((4, 5), (3, 5, 2)),
    ((0, 5), (5, 3)), ((4, 0), (0, 3))])
def test_bfloat16_matmul_of_every_shape_within_what_cupy_multiplies(numpy_as_cupy, a_shape,
                                                                    b_shape):
    from backends.cuda.gemm import bfloat16_matmul

    if dt.bfloat16 is None:
        pytest.skip("no bfloat16 without ml_dtypes")
    numpy_as_cupy.matmul = _cupy14_matmul
    a, b = _data(a_shape, "bfloat16"), _data(b_shape, "bfloat16")
    got = bfloat16_matmul(a, b)
    assert got.dtype == dt.bfloat16
    _check_host("matmul", got, a, b)


@pytest.fixture
def scipy_as_cupyx(monkeypatch):
    """`from cupyx.scipy import fft` gives scipy.fft, whose irfft answers NaN for imaginary
    DC or Nyquist parts (cuFFT's C2R leaves them undefined) and with overwrite_x=True
    destroys its input afterwards, as cuFFT's C2R may."""
    import scipy.fft

    def irfft(x, *, n, axis, overwrite_x=False, **params):
        out = scipy.fft.irfft(x, n=n, axis=axis, **params)
        if np.take(x, [0, n // 2] if n % 2 == 0 else [0], axis=axis).imag.any():
            out[...] = np.nan
        if overwrite_x:
            x[...] = np.nan
        return out

    fft = types.SimpleNamespace(irfft=irfft)
    cupyx = types.ModuleType("cupyx")
    cupyx.scipy = types.SimpleNamespace(fft=fft)
    for name, module in (("cupyx", cupyx), ("cupyx.scipy", cupyx.scipy),
                         ("cupyx.scipy.fft", fft)):
        monkeypatch.setitem(sys.modules, name, module)


@pytest.mark.parametrize("d", ["complex64", "complex128"])
def test_irfftn_ignores_the_parts_numpy_ignores_and_leaves_its_input(numpy_as_cupy,
                                                                     scipy_as_cupyx, d,
                                                                     monkeypatch):
    from backends.cuda import fft_plan
    from backends.cuda.fft import irfftn

    monkeypatch.setattr(fft_plan, "layout", lambda *_: None)  # hal's plans need cuFFT

    x = _data((4, 5, 6), d)  # not Hermitian: DC and Nyquist have imaginary parts
    for axes, n in (((2,), 10), ((2,), 11), ((1,), 8), ((0, 2), 10), ((2, 0), 7), ((2,), 1)):
        case = x[..., :1] if n == 1 else x
        before = case.copy()
        _check_host("irfftn", irfftn(case, axes=axes, n=n), case, axes=axes, n=n)
        np.testing.assert_array_equal(case, before)


def _host_divmod(tmp_path):
    """The float floor_divide/remainder kernels' C (the op set's C table spelled for CUDA)
    compiled for the host: (a, b) -> (q, r)."""
    compiler = shutil.which("c++") or shutil.which("g++")
    if compiler is None:
        pytest.skip("no C++ compiler to build the divmod kernel's C for the host")
    from backends.cuda.dialect import DIALECT
    from hal.ops.expressions import c

    text = "#include <cmath>\nusing std::copysign; using std::floor; using std::fmod;\n" \
           "#define __device__\n"
    for d, t in ((np.dtype("float32"), "float"), (np.dtype("float64"), "double")):
        q, helpers = c.render("floor_divide", ["a[i]", "b[i]"], d, d, DIALECT)
        r, _ = c.render("remainder", ["a[i]", "b[i]"], d, d, DIALECT)
        text += "".join(helpers) + (
            f'extern "C" void run_{t}(const {t}* a, const {t}* b, {t}* q, {t}* r, long n)'
            f" {{ for (long i = 0; i < n; i++) {{ q[i] = {q}; r[i] = {r}; }} }}\n")
    source = tmp_path / "divmod.cpp"
    source.write_text(text)
    library = tmp_path / "divmod.so"
    subprocess.run([compiler, "-O2", "-shared", "-fPIC", "-o", library, source], check=True)
    lib = ctypes.CDLL(str(library))

    def run(a, b):
        q, r = np.empty_like(a), np.empty_like(a)
        fn = lib.run_float if a.dtype == np.float32 else lib.run_double
        fn(*(ctypes.c_void_p(v.ctypes.data) for v in (a, b, q, r)), ctypes.c_long(a.size))
        return q, r

    return run


@pytest.mark.parametrize("d", [np.float32, np.float64])
def test_float_floor_divide_and_remainder_match_numpy_bit_for_bit(tmp_path, d):
    run = _host_divmod(tmp_path)
    special = [-np.inf, -1e30, -10, -1.5, -1, -0.1, -0.0, 0.0, 0.1, 1, 1.5, 3, 1e30, np.inf,
               NAN, np.finfo(d).max, np.finfo(d).tiny]
    values = np.concatenate([special, RNG.standard_normal(300) * 10,
                             RNG.integers(-20, 20, 300) / RNG.choice([1, 2, 5, 10], 300)])
    a, b = (np.ascontiguousarray(v.ravel(), dtype=d) for v in np.meshgrid(values, values))
    q, r = run(a, b)
    with np.errstate(all="ignore"):
        for got, expected in ((q, np.floor_divide(a, b)), (r, np.remainder(a, b))):
            same = (got == expected) & (np.signbit(got) == np.signbit(expected))
            bad = ~(same | np.isnan(got) & np.isnan(expected))
            assert not bad.any(), (a[bad][:3], b[bad][:3], got[bad][:3], expected[bad][:3])
        assert np.floor_divide(d(1), d(0.1)) == 9 and np.floor(d(1) / d(0.1)) == 10  # why


# -- on a GPU ------------------------------------------------------------------------------
_REASON = hal.backend("cuda").why_unavailable()


def gpu(test):
    """Mark a test `gpu` and skip it, with the backend's reason, where cuda is unavailable."""
    skip = pytest.mark.skipif(_REASON is not None, reason=f"no CUDA GPU: {_REASON}")
    return pytest.mark.gpu(skip(test))


@pytest.fixture(scope="module")
def dev():
    """cuda:0 with CPU fallback refused, so every op must have a kernel."""
    return hal.device("cuda:0")


@pytest.fixture(autouse=True)
def _no_fallback():
    with hal.fallback_policy("error"):
        yield


def _data(shape, d):
    d = dt.dtype(d)
    if dt.is_integer(d):
        lo, hi = (0, 100) if d == dt.uint8 else (-50, 50)
        return RNG.integers(lo, hi, shape).astype(d)
    x = RNG.standard_normal(shape)
    if dt.is_complex(d):
        x = x + 1j * RNG.standard_normal(shape)
    return x.astype(d)


def _check(name, got, *host, **params):
    spec = hal.ops.spec(name)
    expected = spec.evaluate(*host, **params)
    bound = spec.bound(*host, **params) if spec.bound else None
    problem = mismatch(got.numpy(), expected, spec.tolerance_for(expected.dtype), bound)
    assert not problem, f"{name}{params}: {problem}"


@gpu
def test_capabilities(dev):
    caps = dev.capabilities
    assert caps.backend == "cuda" and caps.vendor == "NVIDIA" and caps.name
    assert caps.memory_bytes > 0 and caps.compute_units == caps.extra["sm_count"] > 0
    assert caps.extra["compute_capability"].count(".") == 1
    assert caps.driver_version.startswith("CUDA ") and "cupy" in caps.runtime_version
    # the kernel table, whatever cupy's version: every primitive and extended op, composites
    # where a fused kernel exists (the rest run their decompositions)
    assert set(caps.ops) == set(dev.backend.kernels.ops())
    assert _needs_kernel() <= set(caps.ops) <= set(hal.ops.names())
    from backends.cuda import has_bfloat16  # bfloat16 with cupy >= 14 (and ml_dtypes)

    assert ("bfloat16" in caps.dtypes) == has_bfloat16()


@gpu
@pytest.mark.parametrize("d", ["float16", "float32", "float64", "complex64", "int8", "int64"])
def test_elementwise_and_reductions(dev, d):
    a, b = _data((33, 17), d), _data((17,), d)
    ta, tb = hal.asarray(a, device=dev), hal.asarray(b, device=dev)
    for name in ("add", "multiply", "subtract", "maximum" if "complex" not in d else "equal"):
        _check(name, hal.op(name, ta, tb), a, b)
    _check("sum", hal.sum(ta, axis=0), a, axis=0)
    _check("negative", hal.negative(ta[:, ::2]), a[:, ::2])


@gpu
def test_matmul_gemm_dtypes(dev):
    for d in ("float16", "float32", "float64", "complex64", "int32"):
        a, b = _data((4, 65, 31), d), _data((31, 20), d)
        _check("matmul", hal.asarray(a, device=dev) @ hal.asarray(b, device=dev), a, b)


@gpu
def test_bfloat16_when_cupy_has_it(dev):
    if "bfloat16" not in dev.capabilities.dtypes:
        assert "cupy" in dev.capabilities.unsupported["bfloat16"]
        pytest.skip(dev.capabilities.unsupported["bfloat16"])
    a, b = _data((40, 24), "float32").astype(dt.bfloat16), _data((24, 8), "float32").astype(
        dt.bfloat16)
    ta, tb = hal.asarray(a, device=dev), hal.asarray(b, device=dev)
    assert np.array_equal(ta.numpy().view(np.uint16), a.view(np.uint16))
    _check("matmul", ta @ tb, a, b)
    stack, stack_b = np.stack([a[:20], a[20:]]), np.stack([b, b[::-1]])  # cupy's batched
    _check("matmul", hal.asarray(stack, device=dev) @ hal.asarray(stack_b, device=dev),
           stack, stack_b)  # path refuses bfloat16: hal computes it in float32
    _check("exp", hal.exp(ta), a)
    _check("softmax", hal.nn.softmax(ta), a, axis=-1)
    _check("concat", hal.concat([ta, ta], axis=0), a, a, axis=0)


@gpu
def test_fused_composites_match_their_decompositions(dev):
    x, w, b = _data((64, 300), "float32"), _data((300,), "float32"), _data((300,), "float32")
    tx, tw, tb = (hal.asarray(v, device=dev) for v in (x, w, b))
    with hal.placement() as where:
        _check("softmax", hal.nn.softmax(tx, axis=0), x, axis=0)
        _check("log_softmax", hal.nn.log_softmax(tx), x, axis=-1)
        _check("layer_norm", hal.nn.layer_norm(tx, tw, tb), x, w, b)
        _check("gelu", hal.nn.gelu(tx, approximate="tanh"), x, approximate="tanh")
        k = _data((300, 50), "float32")
        for act in (None, "relu", "gelu", "silu"):
            _check("linear", hal.nn.linear(tx, hal.asarray(k, device=dev), None, activation=act),
                   x, k, None, activation=act)
    assert all(how == "kernel" for *_, how in where.records)


@gpu
@pytest.mark.parametrize("causal", [False, True])
def test_attention(dev, causal):
    q, k, v = _data((2, 3, 7, 16), "float64"), _data((2, 3, 9, 16), "float64"), _data(
        (2, 3, 9, 5), "float64")
    out = hal.nn.scaled_dot_product_attention(*(hal.asarray(t, device=dev) for t in (q, k, v)),
                                              causal=causal)
    _check("scaled_dot_product_attention", out, q, k, v, causal=causal)


@gpu
def test_fft_family(dev):
    x = _data((6, 32, 17), "complex64")
    tx = hal.asarray(x, device=dev)
    _check("fftn", hal.fft.fftn(tx, axes=(1, 2)), x, axes=(1, 2))
    _check("ifftn", hal.fft.ifft(tx, axis=0, norm="ortho"), x, axes=(0,), norm="ortho")
    r = _data((4, 30), "float64")
    _check("rfftn", hal.fft.rfft(hal.asarray(r, device=dev)), r, axes=(1,))
    h = _data((4, 16), "complex128")  # not Hermitian: DC and Nyquist imaginary parts ignored
    _check("irfftn", hal.fft.irfft(hal.asarray(h, device=dev), n=30), h, axes=(1,), n=30)
    _check("irfftn", hal.fft.irfftn(hal.asarray(h, device=dev), s=(4, 30)), h, axes=(0, 1),
           n=30)


@gpu
def test_qmatmul_accumulates_in_int32(dev):
    a = RNG.integers(-128, 128, (16, 4096)).astype(np.int8)
    b = RNG.integers(-128, 128, (4096, 8)).astype(np.int8)
    out = hal.op("qmatmul", hal.asarray(a, device=dev), hal.asarray(b, device=dev),
                 a_zero_point=-3, b_zero_point=5)
    assert out.dtype == np.int32
    _check("qmatmul", out, a, b, a_zero_point=-3, b_zero_point=5)


@gpu
def test_quantize_round_trip(dev):
    x = _data((5, 8), "float32") * 20
    scale, zero = np.full(8, 0.25, np.float32), np.arange(8, dtype=np.int8)
    q = hal.op("quantize_linear", *(hal.asarray(v, device=dev) for v in (x, scale, zero)),
               axis=1)
    _check("quantize_linear", q, x, scale, zero, axis=1)
    back = hal.op("dequantize_linear", q, hal.asarray(scale, device=dev),
                  hal.asarray(zero, device=dev), axis=1)
    _check("dequantize_linear", back, q.numpy(), scale, zero, axis=1)


@gpu
def test_memory_stats_count_the_pool(dev):
    before = dev.memory_stats()
    t = hal.asarray(np.zeros(1 << 20, np.float32), device=dev)
    during = dev.memory_stats()
    assert during.allocated >= before.allocated + (1 << 22)
    assert during.peak >= during.allocated and during.allocations > before.allocations
    del t
    assert dev.memory_stats().allocated <= during.allocated - (1 << 22)
    dev.empty_cache()
    after = dev.memory_stats()
    assert after.reserved <= during.reserved and after.total == dev.capabilities.memory_bytes


@gpu
def test_event_timing_brackets_device_work(dev):
    a = hal.asarray(_data((2048, 2048), "float32"), device=dev)
    start = dev.record_event()
    for _ in range(5):
        a = a @ a * 1e-3
    end = dev.record_event()
    seconds = dev.elapsed(start, end)
    assert 0 < seconds < 60


@gpu
def test_dlpack_zero_copy_with_cupy(dev):
    import cupy

    with cupy.cuda.Device(0):
        c = cupy.arange(12, dtype=cupy.float32).reshape(3, 4)
    t = hal.from_dlpack(c, device=dev)
    assert t.native.data.ptr == c.data.ptr and t.shape == (3, 4)
    back = cupy.from_dlpack(t)
    assert back.data.ptr == c.data.ptr
    np.testing.assert_array_equal(t.numpy(), np.arange(12, dtype=np.float32).reshape(3, 4))
    host = hal.from_dlpack(np.ones(3, np.float64), device=dev)  # a host producer is copied
    assert isinstance(host.native, cupy.ndarray)


@gpu
def test_dlpack_zero_copy_with_torch(dev):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA here")
    x = torch.arange(10, dtype=torch.float32, device="cuda:0")
    t = hal.from_dlpack(x, device=dev)
    assert t.native.data.ptr == x.data_ptr()
    y = torch.from_dlpack(hal.exp(t))
    assert y.device.type == "cuda" and torch.allclose(y, torch.exp(x))


@gpu
def test_out_of_memory_is_a_hal_error_and_the_pool_is_released(dev):
    n = int((dev.capabilities.memory_bytes / 4) ** 0.5 * 1.2)  # an n x n float32 > memory
    col = hal.asarray(np.ones((n, 1), np.float32), device=dev)
    row = hal.asarray(np.ones((1, n), np.float32), device=dev)
    with pytest.raises(hal.HalOutOfMemory, match=r"cuda:0: out of memory in add for float32"):
        hal.add(col, row)
    stats = dev.memory_stats()
    assert stats.reserved - stats.allocated < 1 << 30
    _check("add", hal.add(col[:4], row[:, :4]), np.ones((4, 1), np.float32),
           np.ones((1, 4), np.float32))  # the device still works


@gpu
def test_compile_error_names_the_op_and_carries_the_log(dev):
    import cupy

    from backends.cuda.device import CudaCompileError

    broken = cupy.ElementwiseKernel("T x", "T y", "y = x +* ;", "hal_broken")
    x = hal.asarray(np.ones(4, np.float32), device=dev)
    with pytest.raises(CudaCompileError, match="gelu on cuda:0") as info:
        dev.launch("gelu", broken, (x.native,), {})
    assert "error" in info.value.log and info.value.log in str(info.value)


@gpu
def test_unsupported_dtype_and_other_gpus(dev):
    # as on every device: an array outside the dtype set becomes the set's dtype that holds
    # it exactly, and a dtype outside the set asked for by name is refused
    assert hal.asarray(np.ones(3, np.int16), device=dev).dtype == hal.int32
    with pytest.raises(hal.UnsupportedDType, match="int16"):
        hal.zeros(3, dtype=np.int16, device=dev)
    if hal.backend("cuda").device_count() < 2:
        pytest.skip("one GPU: the cross-device check needs two")
    a = hal.asarray(np.ones(3, np.float32), device="cuda:0")
    b = hal.asarray(np.ones(3, np.float32), device="cuda:1")
    with pytest.raises(hal.HalError, match="different devices"):
        hal.add(a, b)
    moved = a.to("cuda:1")
    assert moved.native.device.id == 1
    np.testing.assert_array_equal(hal.add(moved, b).numpy(), np.full(3, 2, np.float32))
