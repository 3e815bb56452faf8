"""Creation and random with bad arguments: a HalError naming the op and the value, before
numpy sees them or memory is allocated; good arguments keep numpy's values."""

from __future__ import annotations

import numpy as np
import pytest

import hal
from hal.runtime import host

NAN, INF = float("nan"), float("inf")

BAD = [
    (lambda: hal.ones((-1,)), hal.ShapeError, "ones: shape (-1,) has a negative size"),
    (lambda: hal.zeros((NAN,)), hal.ShapeError, "zeros: shape (nan,) is not an int"),
    (lambda: hal.empty(2.5), hal.ShapeError, "empty: shape 2.5"),
    (lambda: hal.zeros("float32"), hal.ShapeError, "zeros: shape 'float32'"),
    (lambda: hal.ones((1,) * 40), hal.ShapeError, "40 axes exceed"),
    (lambda: hal.full((2,), 2**70), hal.DomainError, "2**70"),
    (lambda: hal.full((2,), NAN, dtype=hal.int32), hal.DomainError, "nan does not fit int32"),
    (lambda: hal.full((2,), 1e300, dtype=hal.float32), hal.DomainError, "overflows to inf"),
    (lambda: hal.full((2,), 1j, dtype=hal.float64), hal.ArgumentError, "complex fill value"),
    (lambda: hal.full((2,), "x"), hal.HalError, "'x'"),
    (lambda: hal.full_like(hal.ones(2, dtype=hal.uint8), -1), hal.DomainError,
     "full_like: the fill value -1 does not fit uint8 (its range is 0..255)"),
    (lambda: hal.zeros_like(3), hal.ArgumentError, "zeros_like: x must be a hal Tensor"),
    (lambda: hal.ones_like([1.0]), hal.ArgumentError, "ones_like: x must be a hal Tensor"),
    (lambda: hal.arange(NAN), hal.DomainError, "arange: start must be finite, got nan"),
    (lambda: hal.arange(0, INF), hal.DomainError, "arange: stop must be finite, got inf"),
    (lambda: hal.arange(0, 5, 0), hal.DomainError, "step must not be 0"),
    (lambda: hal.arange(-1e308, 1e308, 1e-300), hal.DomainError, "overflow"),
    (lambda: hal.arange(0, 300, dtype=hal.int8), hal.DomainError,
     "the last value 299 is outside int8"),
    (lambda: hal.arange("x"), hal.ArgumentError, "arange: start must be a real number"),
    (lambda: hal.arange(2**62, dtype=hal.int8), hal.DomainError, "outside int8"),
    (lambda: hal.arange(10**15), hal.HalOutOfMemory, "for arange"),
    (lambda: hal.linspace(0, 1, -1), hal.DomainError, "linspace: num must be at least 0"),
    (lambda: hal.linspace(0, 1, 2.5), hal.ArgumentError, "num must be an integer"),
    (lambda: hal.linspace(0, INF, 3), hal.DomainError, "stop must be finite"),
    (lambda: hal.linspace(0, 300, 3, dtype=hal.uint8), hal.DomainError, "stop 300 is outside"),
    (lambda: hal.linspace(1j, 2, 3, dtype=hal.float64), hal.ArgumentError, "complex ends"),
    (lambda: hal.eye(-2), hal.DomainError, "eye: n_rows must be at least 0, got -2"),
    (lambda: hal.eye(2, k=1.5), hal.ArgumentError, "eye: k must be an integer"),
    (lambda: hal.eye(10**6), hal.HalOutOfMemory, "8,000,000,000,000 bytes for eye"),
    (lambda: hal.from_dlpack(None), hal.ArgumentError, "from_dlpack: NoneType cannot"),
    (lambda: hal.random.integers((3,), 5, 0), hal.DomainError,
     "integers: low must be below high, got low=5, high=0"),
    (lambda: hal.random.integers((3,), 0, 1000, dtype=hal.int8), hal.DomainError,
     "the largest value 999 is outside int8"),
    (lambda: hal.random.integers((3,), 0, 2.5), hal.ArgumentError, "high must be an integer"),
    (lambda: hal.random.uniform((3,), low=1, high=1), hal.DomainError, "low must be below"),
    (lambda: hal.random.uniform((3,), high=NAN), hal.DomainError, "high must be finite"),
    (lambda: hal.random.uniform((3,), low=-1e308, high=1e308), hal.DomainError, "overflows"),
    (lambda: hal.random.uniform((3,), seed=-1), hal.ArgumentError, "seed -1 is not a seed"),
    (lambda: hal.random.uniform((3,), seed=1.5), hal.ArgumentError, "seed 1.5"),
    (lambda: hal.random.normal((3,), std=-1), hal.DomainError, "std must be 0 or more"),
    (lambda: hal.random.normal((3,), mean=1j), hal.ArgumentError, "mean must be a real"),
    (lambda: hal.random.normal((-1,)), hal.ShapeError, "normal: shape (-1,)"),
    (lambda: hal.random.normal((10**6,) * 2), hal.HalOutOfMemory,
     "8,000,000,000,000 bytes for normal"),
]


@pytest.mark.parametrize(("make", "error", "words"), BAD, ids=[w for _, _, w in BAD])
def test_bad_arguments_are_hal_errors_naming_the_op_and_value(make, error, words):
    with pytest.raises(error) as caught:
        make()
    assert words in str(caught.value).replace("1180591620717411303424", "2**70")


def test_a_draw_that_does_not_fit_the_host_is_refused_before_it_is_made(monkeypatch):
    monkeypatch.setattr(host, "lacks_memory_for", lambda nbytes: 1000 if nbytes > 1000 else None)
    with pytest.raises(hal.HalOutOfMemory, match="1,600 bytes on the host for normal: the host "
                                                 "has 1,000 bytes available"):
        hal.random.normal((100,), dtype=hal.complex64)
    with pytest.raises(hal.HalOutOfMemory, match="on the host for zeros"):
        hal.zeros((200,))
    assert hal.zeros((100,)).shape == (100,)


def test_the_host_knows_what_fits():
    assert host.lacks_memory_for(1) is None
    assert 0 < host.lacks_memory_for(1 << 62) < 1 << 62


def test_good_arguments_keep_numpys_values(cpu):
    cases = [
        (hal.arange(5, 0, -2), np.arange(5, 0, -2)),
        (hal.arange(1, 2, 0.25), np.arange(1, 2, 0.25)),
        (hal.arange(3.0), np.arange(3.0)),
        (hal.arange(-3, dtype=hal.int8), np.arange(-3, dtype=np.int8)),
        (hal.arange(0, 128, 16, dtype=hal.int8), np.arange(0, 128, 16, dtype=np.int8)),
        (hal.linspace(1j, 2, 3), np.linspace(1j, 2, 3)),
        (hal.linspace(0, np.float32(1.5), 3), np.linspace(0, np.float32(1.5), 3)),
        (hal.linspace(np.float32(0), 2j, 3), np.linspace(np.float32(0), 2j, 3)),
        (hal.arange(np.float32(3)), np.arange(np.float32(3))),
        (hal.linspace(0, 255, 4, dtype=hal.uint8), np.linspace(0, 255, 4, dtype=np.uint8)),
        (hal.linspace(0, 1, 4, endpoint=False), np.linspace(0, 1, 4, endpoint=False)),
        (hal.eye(2, 3, k=1), np.eye(2, 3, k=1)),
        (hal.eye(0), np.eye(0)),
        (hal.full((2,), 2.5, dtype=hal.int8), np.full((2,), 2.5, dtype=np.int8)),
        (hal.full((2,), -128, dtype=hal.int8), np.full((2,), -128, dtype=np.int8)),
        (hal.full((), True), np.full((), True)),
        (hal.full(np.int64(2), 1 + 2j), np.full(2, 1 + 2j)),
        (hal.zeros([2, 0]), np.zeros((2, 0))),
        (hal.random.integers((4,), 0, 3, seed=1), np.random.default_rng(1).integers(0, 3, 4)),
        (hal.random.integers((4,), -128, 128, seed=1, dtype=hal.int8),
         np.random.default_rng(1).integers(-128, 128, 4).astype(np.int8)),
        (hal.random.uniform(3, seed=1), np.random.default_rng(1).uniform(0, 1, 3)),
    ]
    for got, expected in cases:
        assert got.dtype == expected.dtype and got.shape == expected.shape
        np.testing.assert_array_equal(got.numpy(), expected)


def test_ends_beyond_int64_are_numbers_not_objects(cpu):
    np.testing.assert_array_equal(hal.linspace(-(2**70), 5, 3).numpy(),
                                  np.linspace(-(2.0**70), 5, 3))
    assert hal.arange(2**70, 1).shape == (0,)


def test_asarray_copy_true_always_copies_on_the_same_device(cpu, null):
    source = np.arange(6.0).reshape(2, 3)
    for x in (hal.asarray(source), hal.asarray(source, device=null)):
        copied = hal.asarray(x, copy=True)
        assert copied is not x and copied.device is x.device
        assert copied.native is not x.native
        np.testing.assert_array_equal(copied.numpy(), source)
    shared, copied = hal.asarray(source), hal.asarray(hal.asarray(source), copy=True)
    source[0, 0] = -1.0  # a write to the numpy array shows through the shared tensor only
    assert shared.numpy()[0, 0] == -1.0 and copied.numpy()[0, 0] == 0.0
    moved = hal.asarray(hal.asarray(source, device=null), copy=True, device=cpu,
                        dtype=hal.float32)
    assert moved.device is cpu and moved.dtype == hal.float32
    np.testing.assert_array_equal(moved.numpy(), source.astype(np.float32))


def test_asarray_copy_none_copies_only_where_needed(cpu, null):
    source = np.arange(4, dtype=np.float32)
    x = hal.asarray(source)
    assert np.shares_memory(x.numpy(), source)
    assert hal.asarray(x) is x and hal.asarray(x, copy=False) is x
    assert hal.asarray(x, dtype=hal.float32, device=cpu) is x
    assert np.shares_memory(hal.asarray(source, copy=False).numpy(), source)
    np.testing.assert_array_equal(hal.asarray(x, dtype=hal.float64).numpy(),
                                  source.astype(np.float64))
    assert hal.asarray(x, device=null).device is null


@pytest.mark.parametrize(("make", "words"), [
    (lambda x, a: hal.asarray(x, copy=False, dtype=hal.float64),
     "the float32 tensor (4,) on cpu:0 cannot be shared as a float64 tensor on cpu:0"),
    (lambda x, a: hal.asarray(x, copy=False, device="null"),
     "the float32 tensor (4,) on cpu:0 cannot be shared as a float32 tensor on null:0"),
    (lambda x, a: hal.asarray(a, copy=False, dtype=hal.int32),
     "a ndarray of shape (4,) cannot be shared as a int32 tensor on cpu:0"),
    (lambda x, a: hal.asarray(a, copy=False, device="null"),
     "a ndarray of shape (4,) cannot be shared as a float32 tensor on null:0"),
    (lambda x, a: hal.asarray([1.0, 2.0], copy=False), "a list of shape (2,)"),
    (lambda x, a: hal.asarray(x, copy=1), "asarray: copy must be True or False, got 1"),
], ids=["dtype", "device", "numpy dtype", "numpy device", "list", "flag"])
def test_asarray_copy_false_refuses_a_needed_copy(cpu, make, words):
    a = np.arange(4, dtype=np.float32)
    with pytest.raises(hal.ArgumentError) as caught:
        make(hal.asarray(a), a)
    assert words in str(caught.value)
