"""The cpu backend's kernels written for few calls (rms_norm and rope as numba gufuncs,
softmax, linear's silu and sigmoid epilogues, constant pad, dynamic_update_slice, and the
views and plain linears planned per graph node) give their numpy references' values bit
for bit."""

from __future__ import annotations

import numpy as np
import pytest

import hal
from hal import ops


def _kernel(op: str, dtype):
    return hal.device("cpu").kernel(op, np.dtype(dtype))


def _random(shape, dtype, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(1, 1, 256), (16, 1, 256), (3, 7)])
def test_rms_norm_and_softmax_equal_their_references(dtype, shape):
    x, w = _random(shape, dtype), _random(shape[-1:], dtype, 1)
    for args, params in (((x, w), {"eps": 1e-5}), ((x,), {"eps": 1e-6})):
        np.testing.assert_array_equal(_kernel("rms_norm", dtype)(*args, **params),
                                      ops.spec("rms_norm").reference(*args, **params))
    for axis in (-1, 0):
        np.testing.assert_array_equal(_kernel("softmax", dtype)(x, axis=axis),
                                      ops.spec("softmax").reference(x, axis=axis))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("angles", [(1, 16), (4, 1)])  # one per pair (numba), per row
def test_rope_equals_its_reference(dtype, interleaved, angles):
    x = _random((2, 2, 4, 32), dtype)
    cos, sin = np.cos(_random(angles, dtype, 1)), np.sin(_random(angles, dtype, 2))
    np.testing.assert_array_equal(
        _kernel("rope", dtype)(x, cos, sin, interleaved=interleaved),
        ops.spec("rope").reference(x, cos, sin, interleaved=interleaved))


@pytest.mark.parametrize("activation", ["silu", "sigmoid", None])
@pytest.mark.parametrize("batch", [(1, 1), ()])  # (16, 1) is one GEMM there: other rounding
def test_linear_equals_its_reference(activation, batch):
    x, w = _random((*batch, 64), np.float32), _random((64, 48), np.float32, 1)
    b = _random((48,), np.float32, 2)
    np.testing.assert_array_equal(_kernel("linear", np.float32)(x, w, b, activation=activation),
                                  ops.spec("linear").reference(x, w, b, activation=activation))


@pytest.mark.parametrize("dtype", [np.int64, np.float32, np.bool_])
def test_constant_pad_equals_numpys(dtype):
    x = (np.arange(6).reshape(2, 3) % 3).astype(dtype)
    for width, value in ((((2, 1), (0, 3)), 0), (((0, 0), (1, 1)), 1), (((1, 0), (0, 0)), 2.7)):
        got = _kernel("pad", dtype)(x, pad_width=width, value=value)
        want = ops.spec("pad").reference(x, pad_width=width, value=value)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(_kernel("pad", dtype)(x, pad_width=((1, 1), (2, 0)),
                                                        mode="edge"),
                                  np.pad(x, ((1, 1), (2, 0)), mode="edge"))


@pytest.mark.parametrize("start", [[0, 0, 5, 0], [0, 1, -3, 0], [0, 0, 300, 9]])
def test_dynamic_update_slice_clamps_its_window_as_the_reference(start):
    cache, row = _random((1, 2, 256, 32), np.float32), _random((1, 2, 1, 32), np.float32, 1)
    starts = np.array(start, np.int64)
    want = ops.spec("dynamic_update_slice").reference(cache, row, starts)
    np.testing.assert_array_equal(_kernel("dynamic_update_slice", np.float32)(
        cache, row, starts), want)
    out = cache.copy()
    assert _kernel("dynamic_update_slice", np.float32)(out, row, starts, out=out) is out
    np.testing.assert_array_equal(out, want)


def test_views_and_plain_linear_planned_per_node_equal_their_references():
    x, w = _random((2, 3, 4), np.float32), _random((4, 5), np.float32, 1)
    for op, args, params in (
            ("reshape", (x,), {"shape": (6, -1)}),
            ("permute_dims", (x,), {"axes": (2, 0, 1)}),
            ("slice", (x,), {"bounds": ((1, 1, 1), (0, 2, 2), (3, -1, 2))}),
            ("linear", (x[:1, :1], w), {"activation": None})):
        kernel = _kernel(op, np.float32)
        planned = kernel.for_shape(tuple(a.shape for a in args),
                                   tuple(a.dtype for a in args), **params)
        want = ops.spec(op).reference(*args, **params)
        for got in (planned(*args), kernel(*args, **params)):
            assert got.shape == want.shape
            np.testing.assert_array_equal(got, want)
