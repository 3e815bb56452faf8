"""The CUDA backend's vector kernels (backends/cuda/vector.py) and the eager elementwise ops'
choice between them and the strided path.

Without a GPU: which path an operand set takes (contiguity, shape, alignment, dtype), the
generated source as text, and each kernel compiled for the host and run one call per
thread, a length that leaves a partial last vector, against the op's numpy reference
(float16/bfloat16 included, rounded once). With a GPU (marked `gpu`, skipped with the
backend's reason elsewhere) both paths run on cuda:0 against the reference.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

import hal
from backends.cuda import vector
from hal.conformance.compare import mismatch
from tests.backends.cuda_host import FLOAT16, SHIM, compile_library, launch

F16, BF16, F32, F64 = hal.float16, hal.bfloat16, hal.float32, hal.float64
I8, B = hal.int8, hal.bool


# -- the path ---------------------------------------------------------------------------------
def test_contiguous_aligned_operands_take_the_vector_path():
    a, b = np.zeros(1024, np.float32), np.zeros(1024, np.float32)
    assert vector.choose([a, b], (1024,), F32) == (False, False)
    scalar = np.ones((), np.float32)  # a 0-d value, read once
    assert vector.choose([a, scalar], (1024,), F32) == (False, True)
    assert vector.choose([a, b], (1024,), B) == (False, False)  # bool out: 4 bytes a vector


def test_strides_broadcasting_misalignment_and_complex_take_the_strided_path():
    a = np.zeros((64, 64), np.float32)
    assert vector.choose([a.T, a], (64, 64), F32) is None  # not C-contiguous
    assert vector.choose([a[:, :1], a], (64, 64), F32) is None  # broadcast
    flat = np.zeros(1025, np.float32)
    shifted = flat[1:] if flat.ctypes.data % 16 == 0 else flat[:-1]
    assert vector.address(shifted) % 16 and vector.choose([shifted], (1024,), F32) is None
    z = np.zeros(16, np.complex64)
    assert vector.choose([z, z], (16,), hal.complex64) is None
    assert vector.choose([np.zeros(1, np.float32)], (1,), F32) is None  # under one vector
    c = np.zeros(8, np.complex128)
    assert vector.choose([c.real.copy()], (8,), hal.complex128) is None


def test_a_vector_is_16_bytes_of_the_widest_dtype():
    assert vector.width((F32, F32)) == 4  # float4
    assert vector.width((F16,)) == vector.width((BF16,)) == 8  # 8 halves
    assert vector.width((F32, B)) == 4 and vector.width((I8,)) == 16
    assert vector.width((F64,)) == 2


def test_source_loads_vectors_and_keeps_half_precision_16_bits():
    text = vector.source("add", BF16, BF16, (False, True)).text
    assert "hal_vec<unsigned short, 8> x0 = *reinterpret_cast" in text
    assert "const unsigned short s1 = p1[0];" in text  # the 0-d value, read once
    assert "unsigned short* __restrict__ out" in text  # 2 + 2 bytes in, 2 out: no float32
    assert "hal_to_bfloat16((hal_from_bfloat16(x0.v[k]) + hal_from_bfloat16(s1)))" in text
    f32 = vector.source("multiply", F32, F32, (False, False)).text
    assert "hal_vec<float, 4>" in f32 and "hal_from" not in f32


# -- the kernels compiled for the host ---------------------------------------------------------
CASES = [("add", F32, (False, False)), ("multiply", BF16, (False, True)),
         ("exp", F16, (False,)), ("greater", F32, (False, False)), ("add", I8, (False, True)),
         ("maximum", F64, (False, False)), ("divide", BF16, (False, False)),
         ("gelu_tanh", F16, (False,)), ("tanh", BF16, (False,))]


def _host(d, n, seed, scalar):
    rng = np.random.default_rng(seed)
    shape = () if scalar else (n,)
    if d == I8:
        return np.asarray(rng.integers(-128, 128, shape)).astype(d)
    x = rng.standard_normal(shape).astype(np.float32) * 3
    if not scalar:
        x[:4] = [np.nan, np.inf, -0.0, 1e-3]
    return np.asarray(x).astype(d)


def _reference(op, host):
    if op == "gelu_tanh":
        return hal.ops.spec("gelu").evaluate(*host, approximate="tanh"), "gelu"
    return hal.ops.spec(op).evaluate(*host), op


@pytest.mark.parametrize("op, d, scalars", CASES, ids=lambda x: getattr(x, "name", str(x)))
def test_vector_kernel_computes_the_reference_on_the_host(tmp_path, op, d, scalars):
    n = 1003  # a partial last vector: the tail goes element by element
    host = [_host(d, n, k, s) for k, s in enumerate(scalars)]
    with np.errstate(all="ignore"):
        expected, spec = _reference(op, host)
    generated = vector.source(op, d, expected.dtype, scalars)
    text = generated.text.replace(vector.HALF_HELPERS[F16], FLOAT16)
    lib = compile_library(tmp_path, generated.name, SHIM % vector.BLOCK + text)
    out = np.full(n, 7, expected.dtype)
    threads = -(-n // generated.width)
    launch(lib, generated.name, -(-threads // vector.BLOCK), vector.BLOCK,
           [ctypes.c_void_p(x.ctypes.data) for x in (out, *host)] + [ctypes.c_longlong(n)])
    problem = mismatch(out, expected, hal.ops.spec(spec).tolerance_for(expected.dtype))
    assert not problem, problem


def test_bfloat16_rounds_to_nearest_even_and_keeps_nan_on_the_host(tmp_path):
    source = vector.HALF_HELPERS[BF16] + (
        'extern "C" void round_all(const float* x, unsigned short* y, long n) '
        "{ for (long j = 0; j < n; j++) y[j] = hal_to_bfloat16(x[j]); }")
    lib = compile_library(tmp_path, "bf16", SHIM % vector.BLOCK + source)
    x = np.concatenate([np.random.default_rng(3).standard_normal(4000) * 1e3,
                        [np.nan, np.inf, -np.inf, 0.0, -0.0, 3.4e38, 1e-40]]).astype(np.float32)
    x = np.concatenate([x, (np.arange(1, 9, dtype=np.uint32) * 0x8000 + 0x3f800000)
                        .view(np.float32)])  # exact ties and near ties
    y = np.empty(x.size, np.uint16)
    lib.round_all(ctypes.c_void_p(x.ctypes.data), ctypes.c_void_p(y.ctypes.data),
                  ctypes.c_long(x.size))
    expected = x.astype(BF16)
    assert np.array_equal(y.view(BF16).astype(np.float32), expected.astype(np.float32),
                          equal_nan=True)


# -- on a GPU ------------------------------------------------------------------------------
_REASON = hal.backend("cuda").why_unavailable()
gpu = pytest.mark.skipif(_REASON is not None, reason=f"no CUDA GPU: {_REASON}")


@pytest.mark.gpu
@gpu
@pytest.mark.parametrize("d", [F32, F16, BF16])
def test_both_paths_on_the_gpu(d):
    host = np.random.default_rng(1).standard_normal((256, 130)).astype(np.float32).astype(d)
    x = hal.asarray(host, device="cuda:0")
    t = hal.matrix_transpose(x)
    wide = host.astype(np.float32)
    for got, expected in ((x * x, wide ** 2), (t * t, wide.T ** 2)):  # vector, strided
        problem = mismatch(got.numpy(), expected.astype(d),
                           hal.ops.spec("multiply").tolerance_for(d))
        assert not problem, problem
