"""The Array API namespace: the functions it grew, against numpy, on cpu, null and opencl;
and the Array API Consortium's own suite (third_party/array-api-tests) against hal."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import hal

_BACKENDS = ("cpu", "null", "opencl")
_SUITE = Path(__file__).resolve().parents[2] / "third_party" / "array-api-tests"


@pytest.fixture(params=_BACKENDS)
def device(request):
    """cpu (the kernels), null (decompositions and fallback) and opencl where it opens."""
    if request.param not in hal.available_backends():
        pytest.skip(f"backend {request.param}: {hal.backend(request.param).why_unavailable()}")
    hal.settings.fallback = "allow"  # ops a device lacks run on the CPU, counted, silently
    return hal.device(request.param)


_X = np.array([[3.0, np.nan, 1.0, 3.0], [-np.inf, 2.0, 2.0, 0.5], [0.0, -0.0, np.inf, -2.0]])
_I = np.array([[5, -3, 5, 0], [7, 7, -8, 1], [0, 0, 0, 0]], dtype=np.int32)


def _on(device, a):
    return hal.asarray(a, device=device)


def _same(got, want):
    got = got.numpy()
    assert got.dtype == np.asarray(want).dtype, (got.dtype, np.asarray(want).dtype)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", ["isnan", "isinf", "isfinite"])
def test_predicates_match_numpy(device, name):
    fn, ref = getattr(hal, name), getattr(np, name)
    for a in (_X, _X.astype(np.float32), _I, np.array([1 + 1j, np.nan + 0j, 1e308 + 1e308j,
                                                       complex(0, -np.inf)])):
        if device.supports_dtype(hal.dtype(a.dtype)):
            _same(fn(_on(device, a)), ref(a))


@pytest.mark.parametrize("name", ["all", "any"])
@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)])
def test_all_any_match_numpy(device, name, axis):
    fn, ref = getattr(hal, name), getattr(np, name)
    for a in (_X, _I, _I > 0, np.zeros((0, 3))):
        if axis == 1 and a.ndim < 2:
            continue
        _same(fn(_on(device, a), axis=axis), ref(a, axis=axis))
        _same(fn(_on(device, a), axis=axis, keepdims=True), ref(a, axis=axis, keepdims=True))


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_argmax_argmin_take_the_first_extreme_or_nan(device, name, axis):
    fn, ref = getattr(hal, name), getattr(np, name)
    for a in (_X, _I, _X[1:]):  # _X[1:] ties and infinities without NaN
        _same(fn(_on(device, a), axis=axis), ref(a, axis=axis))
        _same(fn(_on(device, a), axis=axis, keepdims=True), ref(a, axis=axis, keepdims=True))


def test_cumulative_sum_matches_numpy(device):
    a = np.arange(12.0).reshape(3, 4) - 5.5
    _same(hal.cumulative_sum(_on(device, a), axis=1), np.cumsum(a, axis=1))
    _same(hal.cumulative_sum(_on(device, a), axis=0, include_initial=True),
          np.concatenate([np.zeros((1, 4)), np.cumsum(a, axis=0)]))
    i8 = np.array([100, 100, 100], dtype=np.int8)
    _same(hal.cumulative_sum(_on(device, i8)), np.cumsum(i8, dtype=np.int64))
    _same(hal.cumulative_sum(_on(device, i8), dtype=hal.int8), np.cumsum(i8, dtype=np.int8))
    with pytest.raises(hal.ShapeError, match="axis must be given"):
        hal.cumulative_sum(_on(device, a))


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_sort_and_argsort_are_stable(device, descending, axis):
    for a in (_X[:, [0, 2, 3]], _I):  # no NaN: its place is the backend's choice
        x = _on(device, a)
        order = np.argsort(-a if descending else a, axis=axis, kind="stable")
        _same(hal.argsort(x, axis=axis, descending=descending), order)
        _same(hal.sort(x, axis=axis, descending=descending), np.take_along_axis(a, order, axis))


def test_take_is_an_embedding_lookup(device):
    table = np.arange(15.0).reshape(5, 3)
    ids = np.array([[4, 0], [-1, 2]], dtype=np.int32)
    _same(hal.take(_on(device, table), _on(device, ids), axis=0), np.take(table, ids, axis=0))
    _same(hal.take(_on(device, table), _on(device, ids % 3), axis=1),
          np.take(table, ids % 3, axis=1))
    _same(hal.take(_on(device, table), _on(device, ids)), np.take(table, ids))
    with pytest.raises(hal.DomainError, match="index 5 is out of range for an axis of size 5"):
        hal.take(_on(device, table), _on(device, np.array([5])), axis=0)
    with pytest.raises(hal.UnsupportedDType, match="take: indices dtype float64"):
        hal.take(_on(device, table), _on(device, np.array([1.0])), axis=0)


@pytest.mark.parametrize("name", ["floor_divide", "remainder"])
def test_integer_division_matches_numpy(device, name):
    fn, ref = getattr(hal, name), getattr(np, name)
    a, b = np.array([-7, 7, -7, 7, 0]), np.array([2, 2, -2, -2, 3])
    _same(fn(_on(device, a), _on(device, b)), ref(a, b))
    _same(fn(_on(device, a * 1.5), _on(device, b * 1.0)), ref(a * 1.5, b * 1.0))
    _same(fn(_on(device, a), 3), ref(a, 3))


def test_clip_keeps_the_dtype_and_nan(device):
    _same(hal.clip(_on(device, _X), -1.0, 2.5), np.clip(_X, -1.0, 2.5))
    _same(hal.clip(_on(device, _X), None, 0.0), np.minimum(_X, 0.0))
    u8 = np.array([0, 7, 200, 255], dtype=np.uint8)
    _same(hal.clip(_on(device, u8), -5, 1000), u8)  # bounds beyond uint8 clamp, not wrap
    _same(hal.clip(_on(device, u8), _on(device, np.array([1, 2, 3, 4])), 100),
          np.clip(u8, np.array([1, 2, 3, 4], dtype=np.uint8), 100))
    with pytest.raises(hal.UnsupportedDType, match="clip: bound 0\\.5"):
        hal.clip(_on(device, u8), 0.5)


def test_roll_is_in_the_main_namespace(device):
    _same(hal.roll(_on(device, _I), 1, axis=1), np.roll(_I, 1, axis=1))
    _same(hal.roll(_on(device, _I), -5), np.roll(_I, -5))


def test_sum_dtype_concat_flat_and_integer_true_division(device):
    i = _on(device, _I)
    _same(hal.sum(i, dtype=hal.float32, axis=0), np.sum(_I, axis=0, dtype=np.float32))
    _same(hal.sum(i, dtype=hal.int8), np.sum(_I, dtype=np.int8))
    _same(hal.concat([i, _on(device, _X)], axis=None), np.concatenate([_I, _X], axis=None))
    _same(i / _on(device, np.array([2, 4, 8, 16])), _I / np.array([2, 4, 8, 16]))
    _same(i / 2, _I / 2)
    _same(7 / _on(device, np.array([2, 4])), 7 / np.array([2, 4]))


def test_mean_and_var_of_an_empty_axis_are_nan(device):
    e = _on(device, np.zeros((0, 3)))
    _same(hal.mean(e, axis=0), np.full(3, np.nan))
    _same(hal.var(e, axis=0), np.full(3, np.nan))
    _same(hal.mean(e), np.array(np.nan))
    _same(hal.mean(e, axis=1), np.zeros(0))


def test_decompositions_run_where_a_device_has_no_kernel(null):
    hal.settings.fallback = "allow"  # the primitives of the decompositions run on the CPU
    x = hal.asarray(_X, device=null)
    with hal.placement() as where:
        for fn in (hal.isnan, hal.isinf, hal.isfinite, hal.all, hal.any, hal.argmax,
                   hal.argmin, lambda t: hal.clip(t, 0.0, 1.0)):
            fn(x)
    how = {op: h for op, _, _, h in where.records}
    for op in ("isnan", "isinf", "isfinite", "all", "any", "argmax", "argmin", "clip"):
        assert how[op] == "decomposed", (op, how[op])


def test_creation_defaults_and_uint64():
    assert hal.zeros(2).dtype == hal.float64 and hal.ones((2,), dtype=None).dtype == hal.float64
    assert hal.eye(2, 3, k=1).numpy().tolist() == [[0, 1, 0], [0, 0, 1]]
    exact = hal.asarray(np.array([2**62, 7], dtype=np.uint64))
    assert exact.dtype == hal.int64 and exact.numpy().tolist() == [2**62, 7]
    with pytest.raises(hal.UnsupportedDType, match="uint64 values up to 18446744073709551615"):
        hal.asarray(np.array([2**64 - 1], dtype=np.uint64))
    with pytest.raises(hal.UnsupportedDType, match="do not fit int64"):
        hal.asarray(2**63)


def test_dtype_inspection():
    x = hal.asarray([1.0], dtype=hal.float32)
    assert hal.result_type(x, hal.asarray([1], dtype=hal.int8), 2.0) == hal.float32
    assert hal.result_type(hal.int8, hal.uint8) == hal.int32
    f = hal.finfo(hal.complex64)
    assert (f.bits, f.eps, f.dtype) == (32, float(np.finfo(np.float32).eps), hal.float32)
    assert isinstance(f.max, float) and hal.finfo(x).smallest_normal == 2.0**-126
    assert (hal.iinfo(hal.uint8).max, hal.iinfo(hal.int8).min) == (255, -128)
    with pytest.raises(hal.UnsupportedDType, match="finfo: int32 is not a floating dtype"):
        hal.finfo(hal.int32)
    assert hal.isdtype(hal.uint8, "integral") and not hal.isdtype(hal.uint8, "signed integer")
    assert hal.isdtype(hal.float16, ("bool", "real floating"))
    assert not hal.isdtype(hal.complex64, "real floating")
    with pytest.raises(hal.UnsupportedDType, match="isdtype: kind 'float'"):
        hal.isdtype(hal.float32, "float")
    info = hal.__array_namespace_info__()
    assert info.default_dtypes()["real floating"] == hal.float64
    assert set(info.dtypes(device="cpu", kind="integral").values()) == set(hal.INTEGERS)
    assert hal.__array_api_version__ == "2023.12"


@pytest.mark.slow
def test_array_api_suite_passes_for_every_function_hal_has():
    """The Array API Consortium's suite, 2023.12, bounded examples; skips list what hal lacks."""
    env = {**os.environ, "ARRAY_API_TESTS_MODULE": "hal", "ARRAY_API_TESTS_VERSION": "2023.12",
           "HAL_DEVICE": "cpu", "HAL_FALLBACK": "error"}
    cmd = [sys.executable, "-m", "pytest", "array_api_tests", "-q", "-p", "no:cacheprovider",
           "--max-examples=5", "--derandomize", "--disable-deadline",  # no clock in a test
           "--skips-file", "hal-skips.txt",
           "--xfails-file", "hal-xfails.txt", "-W", "ignore::hypothesis.errors.HypothesisWarning"]
    current = subprocess.run([sys.executable, "ci/array_api_skips.py", "--check"],
                             cwd=_SUITE.parents[1], capture_output=True, text=True, timeout=300)
    assert current.returncode == 0, current.stdout + current.stderr
    run = subprocess.run(cmd, cwd=_SUITE, env=env, capture_output=True, text=True, timeout=900)
    tail = run.stdout[-6000:]
    assert run.returncode == 0, tail
    assert " passed" in tail and " failed" not in tail, tail


@pytest.mark.parametrize("key", [True, False, (True, True), (False, True), (Ellipsis, True),
                                 (slice(None), False, slice(1, None)), (None, True)])
def test_boolean_scalar_indexing_adds_an_axis_as_numpy(key):
    a = np.arange(6.0).reshape(2, 3)
    _same(hal.asarray(a)[key], a[key])


def test_boolean_scalar_indexing_refuses_what_numpy_does_otherwise():
    assert hal.asarray(5.0)[True].numpy().tolist() == [5.0]
    with pytest.raises(hal.ShapeError, match="x\\[False\\] of a 0-d tensor"):
        hal.asarray(5.0)[False]
    with pytest.raises(hal.ShapeError, match="bools beside integer indices"):
        hal.asarray(np.zeros((2, 3)))[0, True]
