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


# -- the rest of the 2023.12 namespace ------------------------------------------------------
ARRAY_API_2023_12 = """
__array_namespace_info__ abs acos acosh add all any arange argmax argmin argsort asarray asin
asinh astype atan atan2 atanh bitwise_and bitwise_invert bitwise_left_shift bitwise_or
bitwise_right_shift bitwise_xor broadcast_arrays broadcast_to can_cast ceil clip concat conj
copysign cos cosh cumulative_sum divide empty empty_like equal exp expand_dims expm1 eye finfo
flip floor floor_divide from_dlpack full full_like greater greater_equal hypot iinfo imag
isdtype isfinite isinf isnan less less_equal linspace log log10 log1p log2 logaddexp
logical_and logical_not logical_or logical_xor matmul matrix_transpose max maximum mean
meshgrid min minimum moveaxis multiply negative nonzero not_equal ones ones_like permute_dims
positive pow prod real remainder repeat reshape result_type roll round searchsorted sign
signbit sin sinh sort sqrt square squeeze stack std subtract sum take tan tanh tensordot tile
tril triu trunc unique_all unique_counts unique_inverse unique_values unstack var vecdot where
zeros zeros_like""".split()
LINALG_2023_12 = """cholesky cross det diagonal eigh eigvalsh inv matmul matrix_norm
matrix_power matrix_rank matrix_transpose outer pinv qr slogdet solve svd svdvals tensordot
trace vecdot vector_norm""".split()


def test_hal_has_every_function_of_the_2023_12_standard_and_its_linalg():
    assert len(ARRAY_API_2023_12) == 128 and len(LINALG_2023_12) == 23
    assert [n for n in ARRAY_API_2023_12 if not hasattr(hal, n)] == []
    assert [n for n in LINALG_2023_12 if not hasattr(hal.linalg, n)] == []


_UNIT = np.array([-1.0, -0.5, -0.0, 0.0, 0.25, 0.999, 1.0, np.nan])
_WIDE = np.array([-np.inf, -3.5, -2.5, -0.5, 0.5, 1.5, 2.5, 1e-9, 7.0, np.inf, np.nan])
_NUMPY_NAME = {"asin": "arcsin", "acos": "arccos", "atan": "arctan", "asinh": "arcsinh",
               "acosh": "arccosh", "atanh": "arctanh", "atan2": "arctan2",
               "bitwise_invert": "invert", "bitwise_left_shift": "left_shift",
               "bitwise_right_shift": "right_shift"}


def _numpy_of(name):
    return getattr(np, _NUMPY_NAME.get(name, name))


def _close(got, want, rtol=1e-6):
    got = got.numpy()
    assert got.dtype == np.asarray(want).dtype, (got.dtype, np.asarray(want).dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-7)


@pytest.mark.parametrize("name", ["asin", "acos", "atanh", "atan", "tan", "sinh", "cosh",
                                  "asinh", "acosh", "expm1", "log1p", "log2", "log10", "floor",
                                  "ceil", "trunc", "round", "sign", "signbit"])
def test_unary_functions_match_numpy(device, name):
    fn, ref = getattr(hal, name), _numpy_of(name)
    values = _UNIT if name in ("asin", "acos", "atanh") else _WIDE
    if name == "acosh":
        values = np.concatenate([values, [1.0, 1.5, 10.0]])
    for d in (np.float64, np.float32):
        if device.supports_dtype(hal.dtype(d)):
            with np.errstate(all="ignore"):
                _close(fn(_on(device, values.astype(d))), ref(values.astype(d)),
                       1e-12 if d == np.float64 else 1e-6)
    if name in ("floor", "ceil", "trunc", "round", "sign"):
        _same(fn(_on(device, _I)), ref(_I))


@pytest.mark.parametrize("name", ["atan2", "hypot", "copysign", "logaddexp"])
def test_binary_float_functions_match_numpy(device, name):
    a = np.array([1.0, -2.0, 0.0, -0.0, np.inf, -np.inf, np.nan, 3.0, 1e300])
    b = np.array([[2.0], [-0.0], [np.inf]])
    with np.errstate(all="ignore"):
        _close(getattr(hal, name)(_on(device, a), _on(device, b)), _numpy_of(name)(a, b),
               1e-12)


def test_bitwise_and_logical_functions_and_operators_match_numpy(device):
    i8 = np.array([-128, -5, 0, 7, 127], dtype=np.int8)
    counts = np.array([0, 1, 3, 7, 8], dtype=np.int8)  # 8: every bit shifted out
    x, c = _on(device, i8), _on(device, counts)
    _same(x & c, i8 & counts)
    _same(x | 3, i8 | 3)
    _same(x ^ c, i8 ^ counts)
    _same(~x, ~i8)
    _same(x << c, np.left_shift(i8, counts))
    _same(x >> c, np.right_shift(i8, counts))
    u8 = np.array([255, 1, 128], dtype=np.uint8)
    _same(_on(device, u8) >> _on(device, np.array([8, 0, 7], np.uint8)),
          np.right_shift(u8, np.array([8, 0, 7], np.uint8)))
    p, q = np.array([True, True, False, False]), np.array([True, False, True, False])
    for name in ("logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or",
                 "bitwise_xor"):
        _same(getattr(hal, name)(_on(device, p), _on(device, q)), getattr(np, name)(p, q))
    _same(~_on(device, p), ~p)
    with pytest.raises(hal.DomainError, match="negative shift count"):
        hal.bitwise_left_shift(x, _on(device, np.array([-1], np.int8)))
    assert hal.positive(x) is x and hal.pow is hal.power


def test_can_cast_follows_promotion_within_kinds():
    assert hal.can_cast(hal.int8, hal.int64) and not hal.can_cast(hal.int64, hal.int8)
    assert hal.can_cast(hal.float32, hal.complex64) and not hal.can_cast(hal.int8, hal.float32)
    assert hal.can_cast(hal.asarray(np.zeros(2, np.uint8)), hal.int32)


_A = np.arange(24.0).reshape(2, 3, 4) - 7


def test_manipulation_functions_match_numpy(device):
    x = _on(device, _A)
    _same(hal.flip(x), np.flip(_A))
    _same(hal.flip(x, axis=(0, -1)), np.flip(_A, (0, -1)))
    _same(hal.tile(x, (2, 1, 1, 3)), np.tile(_A, (2, 1, 1, 3)))
    _same(hal.tile(x, (2,)), np.tile(_A, 2))
    _same(hal.repeat(x, 3, axis=1), np.repeat(_A, 3, axis=1))
    _same(hal.repeat(x, 2), np.repeat(_A, 2))
    _same(hal.repeat(x, _on(device, np.array([2, 0, 1])), axis=1),
          np.repeat(_A, [2, 0, 1], axis=1))
    for k in (-1, 0, 2):
        _same(hal.tril(x, k=k), np.tril(_A, k))
        _same(hal.triu(x, k=k), np.triu(_A, k))
    _same(hal.moveaxis(x, 0, -1), np.moveaxis(_A, 0, -1))
    _same(hal.moveaxis(x, (0, 1), (2, 0)), np.moveaxis(_A, (0, 1), (2, 0)))
    for got, want in zip(hal.unstack(x, axis=1), [_A[:, i] for i in range(3)]):
        _same(got, want)
    for got, want in zip(hal.broadcast_arrays(x, _on(device, _A[0, :, :1])),
                         np.broadcast_arrays(_A, _A[0, :, :1])):
        _same(got, want)
    grids = [np.arange(3.0), np.arange(4.0), np.arange(2.0)]
    for indexing in ("xy", "ij"):
        for got, want in zip(hal.meshgrid(*(_on(device, g) for g in grids), indexing=indexing),
                             np.meshgrid(*grids, indexing=indexing)):
            _same(got, want)


def test_prod_and_std_match_numpy(device):
    x = _on(device, _A / 4)
    _close(hal.prod(x, axis=1), np.prod(_A / 4, axis=1), 1e-12)
    _same(hal.prod(_on(device, _I), axis=0), np.prod(_I, axis=0, dtype=np.int64))
    _same(hal.prod(_on(device, np.zeros((0, 2)))), np.prod(np.zeros((0, 2))))
    _close(hal.std(x, axis=(0, 2), correction=1, keepdims=True),
           np.std(_A / 4, axis=(0, 2), ddof=1, keepdims=True), 1e-12)


def test_searching_and_set_functions_match_numpy(device):
    b = np.array([[0.0, 1.5, 0.0], [np.nan, 0.0, -2.0]])
    for got, want in zip(hal.nonzero(_on(device, b)), np.nonzero(b)):
        _same(got, want)
    u = np.array([[3.0, 1.0, np.nan], [3.0, np.nan, 1.0]])
    result = hal.unique_all(_on(device, u))
    values, index, inverse, counts = np.unique(u.ravel(), return_index=True,
                                               return_inverse=True, return_counts=True,
                                               equal_nan=False)
    _same(result.values, values)  # each NaN distinct, as the standard asks
    _same(result.indices, index)
    _same(result.inverse_indices, inverse.reshape(u.shape))
    _same(result.counts, counts)
    _same(hal.unique_values(_on(device, _I)), np.unique(_I))
    _same(hal.unique_counts(_on(device, _I)).counts, np.unique(_I, return_counts=True)[1])
    _same(hal.unique_inverse(_on(device, _I)).inverse_indices,
          np.unique(_I, return_inverse=True)[1].reshape(_I.shape))
    s, v = np.array([1.0, 2.0, 2.0, 3.0, np.nan]), np.array([[0.0, 2.0, np.nan], [3.0, 5.0, 2.5]])
    for side in ("left", "right"):
        _same(hal.searchsorted(_on(device, s), _on(device, v), side=side),
              np.searchsorted(s, v, side=side))
    order = np.argsort(np.array([5, 1, 3]))
    _same(hal.searchsorted(_on(device, np.array([5, 1, 3])), _on(device, np.array([0, 3, 9])),
                           sorter=_on(device, order)),
          np.searchsorted(np.array([5, 1, 3]), np.array([0, 3, 9]), sorter=order))


def test_value_dependent_shapes_are_refused_under_jit():
    f = hal.jit(lambda t: hal.nonzero(t)[0])
    with pytest.raises(hal.HalError, match="nonzero: its result's shape depends on the input"):
        f(hal.asarray(np.array([0.0, 1.0])))
    g = hal.jit(lambda t: hal.searchsorted(t, t))  # composed of ops: traced like any other
    _same(g(hal.asarray(np.array([1.0, 2.0]))), np.array([0, 1]))


def test_linalg_matches_numpy(device):
    if not device.supports_dtype(hal.float64):
        pytest.skip(f"{device.name} has no float64")
    rng = np.random.default_rng(3)
    a = rng.standard_normal((2, 4, 4))
    spd = a @ np.swapaxes(a, -1, -2) + 4 * np.eye(4)
    r, rhs = rng.standard_normal((3, 5)), rng.standard_normal((2, 4, 3))
    L, x, rect = hal.linalg, _on(device, spd), _on(device, r)

    def close(got, want):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-9, atol=1e-10)

    close(L.det(x), np.linalg.det(spd))
    close(L.inv(x), np.linalg.inv(spd))
    close(L.solve(x, _on(device, rhs)), np.linalg.solve(spd, rhs))
    close(L.solve(x, _on(device, rhs[0, :, 0])),
          np.stack([np.linalg.solve(m, rhs[0, :, 0]) for m in spd]))
    close(L.cholesky(x), np.linalg.cholesky(spd))
    close(L.cholesky(x, upper=True), np.swapaxes(np.linalg.cholesky(spd), -1, -2))
    values, vectors = L.eigh(x)
    close(values, np.linalg.eigvalsh(spd))
    close((vectors * values[..., None, :]) @ L.matrix_transpose(vectors), spd)
    close(L.slogdet(x).logabsdet, np.linalg.slogdet(spd)[1])
    q, rr = L.qr(rect)
    close(q @ rr, r)
    u, s, vh = L.svd(rect, full_matrices=False)
    close(s, np.linalg.svd(r, compute_uv=False))
    close((u * s[None, :]) @ vh, r)
    assert L.svd(rect).U.shape == (3, 3) and L.svd(rect).Vh.shape == (5, 5)
    close(L.pinv(rect), np.linalg.pinv(r))
    _same(L.matrix_rank(_on(device, np.ones((3, 3)))), np.array(1))
    close(L.matrix_power(x, -2), np.linalg.matrix_power(spd, -2))
    close(L.matrix_power(x, 5), np.linalg.matrix_power(spd, 5))
    close(L.outer(_on(device, r[0]), _on(device, r[1])), np.outer(r[0], r[1]))
    close(hal.vecdot(rect, rect), np.sum(r * r, axis=-1))
    t = rng.standard_normal((4, 4, 2))
    close(hal.tensordot(x, _on(device, t), axes=2), np.tensordot(spd, t, 2))
    close(hal.tensordot(x, _on(device, t), axes=([1, 2], [0, 1])),
          np.tensordot(spd, t, ([1, 2], [0, 1])))
    close(L.diagonal(rect, offset=1), np.diagonal(r, 1))
    close(L.trace(x, offset=-1), np.trace(spd, -1, axis1=-2, axis2=-1))
    v, w = rng.standard_normal((5, 3)), rng.standard_normal(3)
    close(L.cross(_on(device, v), _on(device, w)), np.cross(v, w))
    for order in (2, 1, np.inf, -np.inf, 0, 3):
        close(L.vector_norm(rect, axis=1, ord=order), np.linalg.norm(r, ord=order, axis=1))
    for order in ("fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf):
        close(L.matrix_norm(x, ord=order), np.linalg.norm(spd, ord=order, axis=(-2, -1)))
    with pytest.raises(hal.ShapeError, match=r"linalg\.det: needs a stack of square matrices"):
        L.det(rect)


@pytest.mark.parametrize("repeats", ["float32", [1.5, 2.0, 1.0], np.array([True, False, True])])
def test_repeat_refuses_counts_that_are_not_integers(repeats):
    with pytest.raises(hal.UnsupportedDType, match="repeat: repeats must be an int or integer"):
        hal.repeat(hal.asarray(_A), repeats, axis=1)
