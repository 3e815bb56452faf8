"""Tensor creation, conversion, indexing and operators against numpy."""

from __future__ import annotations

import numpy as np
import pytest

import hal


def test_creation_functions_match_numpy(cpu):
    assert np.array_equal(hal.zeros((2, 3), device=cpu).numpy(), np.zeros((2, 3)))
    assert hal.ones(4, dtype="float32").dtype == hal.float32
    assert np.array_equal(hal.full((2,), 7, dtype="int8").numpy(), [7, 7])
    assert np.array_equal(hal.arange(1, 10, 3).numpy(), [1, 4, 7])
    assert np.allclose(hal.linspace(0, 1, 5).numpy(), np.linspace(0, 1, 5))
    assert np.array_equal(hal.eye(3).numpy(), np.eye(3))
    x = hal.asarray([[1, 2], [3, 4]])
    assert x.dtype == hal.int64 and x.shape == (2, 2) and x.ndim == 2 and x.size == 4
    assert hal.zeros_like(x).dtype == hal.int64
    assert hal.asarray([1.0, 2.0]).dtype == hal.float64
    assert hal.asarray(np.arange(3, dtype=np.uint16)).dtype == hal.int64


def test_random_is_seeded_and_same_on_every_device(cpu, null):
    a = hal.random.normal((3, 4), seed=1, dtype="float32", device=cpu)
    b = hal.random.normal((3, 4), seed=1, dtype="float32", device=null)
    assert np.array_equal(a.numpy(), b.numpy())
    u = hal.random.uniform((1000,), low=2, high=3, seed=0)
    assert 2 <= u.numpy().min() and u.numpy().max() < 3
    z = hal.random.normal((5,), seed=0, dtype="complex64")
    assert z.dtype == hal.complex64 and np.abs(z.numpy().imag).sum() > 0
    with pytest.raises(hal.UnsupportedDType):
        hal.random.normal((2,), dtype="int32")


def test_to_moves_between_devices(cpu, null):
    x = hal.asarray(np.arange(6.0).reshape(2, 3), device=cpu)
    y = x.to(null)
    assert y.device is null and np.array_equal(y.numpy(), x.numpy())
    assert y.to("cpu").device is cpu
    assert x.to(cpu) is x


def test_indexing_matches_numpy(cpu):
    host = np.arange(60).reshape(3, 4, 5)
    x = hal.asarray(host, device=cpu)
    for key in [1, -1, (0, 2), (slice(None), 1), (..., 2), (None, 1, ..., None),
                (slice(1, None), slice(None, None, -2), slice(4, 0, -3)), (slice(5, 9),),
                (Ellipsis,), (0, 0, 0)]:
        assert np.array_equal(x[key].numpy(), host[key]), key


def test_bad_indices_are_clear_errors(cpu):
    x = hal.zeros((2, 3), device=cpu)
    with pytest.raises(hal.ShapeError, match="out of bounds"):
        x[2]
    with pytest.raises(hal.ShapeError, match="3 indices for a 2-d"):
        x[0, 0, 0]
    with pytest.raises(hal.ShapeError, match="basic indexing"):
        x[[0, 1]]
    with pytest.raises(hal.HalError, match="immutable"):
        x[0] = 1


def test_operators_dispatch_to_the_op_set(cpu):
    a_host = np.array([[1.0, -2.0], [3.0, 0.5]])
    a = hal.asarray(a_host, device=cpu)
    assert np.allclose((a + 1).numpy(), a_host + 1)
    assert np.allclose((2 - a).numpy(), 2 - a_host)
    assert np.allclose((a * a / 2).numpy(), a_host * a_host / 2)
    assert np.allclose((a ** 2).numpy(), a_host ** 2)
    assert np.allclose((a @ a).numpy(), a_host @ a_host)
    assert np.allclose((-a).numpy(), -a_host) and np.allclose(abs(a).numpy(), abs(a_host))
    assert np.array_equal((a == 1).numpy(), a_host == 1)
    assert np.array_equal((a != 1).numpy(), a_host != 1)
    assert np.array_equal((a <= 1).numpy(), a_host <= 1)
    assert np.array_equal((a >= 1).numpy(), a_host >= 1)
    assert np.allclose(a.T.numpy(), a_host.T) and np.allclose(a.mT.numpy(), a_host.T)
    assert float(hal.sum(a)) == pytest.approx(a_host.sum())
    assert a.reshape(4).shape == (4,) and a.astype("float32").dtype == hal.float32


def test_comparisons_with_nan_follow_numpy(cpu):
    host = np.array([np.nan, 1.0, 2.0])
    x = hal.asarray(host, device=cpu)
    assert np.array_equal((x <= 1.0).numpy(), host <= 1.0)
    assert np.array_equal((x >= 1.0).numpy(), host >= 1.0)


def test_scalar_conversions(cpu):
    x = hal.asarray([3.5], device=cpu)
    assert float(x) == 3.5 and int(x) == 3 and bool(x) and x.item() == 3.5
    assert hal.asarray([1, 2]).tolist() == [1, 2] and len(hal.zeros((4, 2))) == 4
    with pytest.raises(hal.ShapeError):
        hal.zeros(3).item()
    assert "device=cpu:0" in repr(x)


def test_dlpack_round_trip_with_numpy(cpu, null):
    host = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = hal.from_dlpack(host, device=cpu)
    assert np.shares_memory(x.numpy(), host)
    assert np.array_equal(np.from_dlpack(x), host)
    total = hal.max(hal.asarray(host, device=cpu))  # a 0-d numpy result
    assert np.from_dlpack(total) == 5
    y = hal.from_dlpack(host, device=null)
    assert np.array_equal(y.numpy(), host)
    with pytest.raises(hal.DeviceError, match="DLPack"):
        y.__dlpack__()


def test_stack_squeeze_expand_dims(cpu):
    a, b = hal.asarray([1, 2], device=cpu), hal.asarray([3, 4], device=cpu)
    assert np.array_equal(hal.stack([a, b], axis=1).numpy(), np.stack([[1, 2], [3, 4]], 1))
    assert hal.expand_dims(a, axis=0).shape == (1, 2)
    assert hal.squeeze(hal.zeros((1, 3, 1)), axis=(0, 2)).shape == (3,)
    with pytest.raises(hal.ShapeError, match="not all size 1"):
        hal.squeeze(hal.zeros((2, 3)), axis=0)
