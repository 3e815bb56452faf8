"""The CUDA backend (cupy): kernels against the op set's reference, runtime, bad input.

Without cupy or a GPU only the first tests run: the backend loads without importing
cupy, says why it is unavailable, and nothing else changes. The rest are marked `gpu`
and skip with the backend's own reason. The conformance kit covers every op x dtype on
cuda through tests/conformance/ wherever the backend is available.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import hal
from hal import dtypes as dt
from hal.conformance.compare import mismatch

RNG = np.random.default_rng(11)


# -- without a GPU ---------------------------------------------------------------------------
def test_backend_loads_without_importing_cupy():
    code = textwrap.dedent("""
        import sys
        import hal
        backend = hal.backend("cuda")
        print(len(backend.kernels.ops()), "cupy" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == [str(len(hal.ops.names())), "False"]


def test_devices_says_why_cuda_is_unavailable(capsys):
    from hal.cli import main

    backend = hal.backend("cuda")
    reason = backend.why_unavailable()
    assert main(["devices", "--json"]) == 0
    row = {r["backend"]: r for r in json.loads(capsys.readouterr().out)}["cuda"]
    assert row["available"] == (reason is None)
    assert row["ops_with_kernels"] == f"{len(hal.ops.names())}/{len(hal.ops.names())}"
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
    assert set(caps.ops) == set(hal.ops.names())


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
    assert t._data.data.ptr == c.data.ptr and t.shape == (3, 4)
    back = cupy.from_dlpack(t)
    assert back.data.ptr == c.data.ptr
    np.testing.assert_array_equal(t.numpy(), np.arange(12, dtype=np.float32).reshape(3, 4))
    host = hal.from_dlpack(np.ones(3, np.float64), device=dev)  # a host producer is copied
    assert isinstance(host._data, cupy.ndarray)


@gpu
def test_dlpack_zero_copy_with_torch(dev):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA here")
    x = torch.arange(10, dtype=torch.float32, device="cuda:0")
    t = hal.from_dlpack(x, device=dev)
    assert t._data.data.ptr == x.data_ptr()
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
        dev.launch("gelu", broken, (x._data,), {})
    assert "error" in info.value.log and info.value.log in str(info.value)


@gpu
def test_unsupported_dtype_and_other_gpus(dev):
    with pytest.raises(hal.UnsupportedDType):
        hal.asarray(np.ones(3, np.int16), device=dev)
    if hal.backend("cuda").device_count() < 2:
        pytest.skip("one GPU: the cross-device check needs two")
    a = hal.asarray(np.ones(3, np.float32), device="cuda:0")
    b = hal.asarray(np.ones(3, np.float32), device="cuda:1")
    with pytest.raises(hal.HalError, match="different devices"):
        hal.add(a, b)
    moved = a.to("cuda:1")
    assert moved._data.device.id == 1
    np.testing.assert_array_equal(hal.add(moved, b).numpy(), np.full(3, 2, np.float32))
