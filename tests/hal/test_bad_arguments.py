"""Functions, methods and op parameters given the wrong kind of argument: a HalError naming
the function and the argument, never an AttributeError or TypeError from inside hal or
numpy, and never a result some backends give and others refuse."""

from __future__ import annotations

import numpy as np
import pytest

import hal

X = hal.asarray(np.arange(6.0).reshape(2, 3))
V = hal.asarray(np.arange(3.0))
Q = hal.asarray(np.ones((2, 3), dtype=np.int8))

BAD = [
    (lambda: hal.matrix_transpose(1), hal.ArgumentError, "matrix_transpose: x must be a hal"),
    (lambda: hal.expand_dims(2.5), hal.ArgumentError, "expand_dims: x must be a hal Tensor"),
    (lambda: hal.squeeze(None, 0), hal.ArgumentError, "squeeze: x must be a hal Tensor"),
    (lambda: hal.squeeze(X, 1.5), hal.ShapeError, "squeeze: axis must be None, an int or a"),
    (lambda: hal.stack((1, 0)), hal.ArgumentError, "stack: each of arrays must be a hal"),
    (lambda: hal.stack(5), hal.ArgumentError, "stack: arrays must be a list or tuple"),
    (lambda: hal.concat(None), hal.ArgumentError, "concat: arrays must be a list or tuple"),
    (lambda: hal.pad(2.5, 0), hal.ArgumentError, "pad: x must be a hal Tensor"),
    (lambda: hal.pad(X, "x"), hal.ShapeError, "pad: pad_width 'x' is neither an int nor"),
    (lambda: hal.clip(True, -7), hal.ArgumentError, "clip: x must be a hal Tensor"),
    (lambda: hal.astype(0, "float32", device="cpu"), hal.ArgumentError, "astype: x must be"),
    (lambda: hal.quantize_linear((1, 1), 1.0, 0), hal.ArgumentError, "quantize_linear: x must"),
    (lambda: hal.quantize_linear(X, "s", 0), hal.ArgumentError,
     "quantize_linear: scale 's' is not a number"),
    (lambda: hal.quantize_linear(X, 1j, 0), hal.ArgumentError, "scale 1j is not a number"),
    (lambda: hal.dequantize_linear(Q, 0.5, "s"), hal.ArgumentError,
     "dequantize_linear: zero_point 's'"),
    (lambda: hal.qmatmul(Q, Q.T, a_zero_point=float("inf")), hal.ArgumentError,
     "qmatmul: a_zero_point must be an integer, got inf"),
    (lambda: hal.broadcast_to(X, 2.5), hal.ShapeError, "broadcast_to: shape 2.5"),
    (lambda: hal.broadcast_to(X, (1,) * 40), hal.ShapeError, "40 axes exceed"),
    (lambda: hal.op("broadcast_to", X, shape=(1,) * 40), hal.ShapeError, "40 axes exceed"),
    (lambda: hal.asarray([2**70], dtype=hal.int32), hal.HalError, "asarray: cannot make"),
    (lambda: X.__array_namespace__(api_version=np.ones(2)), hal.HalError,
     "hal implements the Array API 2023.12, not array"),
    (lambda: hal.permute_dims(X, 1.5), hal.ShapeError, "permute_dims: axes 1.5 is not an int"),
    (lambda: hal.slice(X, 3), hal.ShapeError, "slice: bounds must be one (start, step, count)"),
    (lambda: hal.slice(X, None), hal.ShapeError, "slice: bounds must be one"),
    (lambda: hal.slice(X, ["x", "y"]), hal.ShapeError, "slice: bounds 'x' is not an int"),
    (lambda: hal.reshape(X, None), hal.ShapeError, "reshape: shape None is not an int"),
    (lambda: X.reshape(None), hal.ShapeError, "reshape: shape None"),
    (lambda: X[::0], hal.ShapeError, "index: slice slice(None, None, 0) of axis 0"),
    (lambda: int(hal.asarray(1j)), hal.UnsupportedDType, "__int__: a complex128 tensor"),
    (lambda: float(hal.asarray(1j)), hal.UnsupportedDType, "__float__: a complex128 tensor"),
    (lambda: hal.fft.irfftn(hal.asarray(1j)), hal.ShapeError, "irfftn: no axis to transform"),
    (lambda: hal.fft.irfft2(hal.asarray(np.ones((2, 2), complex)), ()), hal.ShapeError,
     "irfftn: 0 sizes for 2 axes"),
    (lambda: hal.fft.fftn(V, 2.5), hal.ShapeError, "fftn: s 2.5 is not an int"),
    (lambda: hal.fft.fftn(V, None, "x"), hal.ShapeError, "fftn: axes 'x' is not an int"),
    (lambda: hal.sum(X, keepdims=2.5), hal.ArgumentError, "sum: keepdims must be True or False"),
    (lambda: hal.argmax(X, keepdims=None), hal.ArgumentError, "argmax: keepdims must be"),
    (lambda: hal.sum(X, axis=[0]), hal.ShapeError, "sum: axis must be None, an int or a tuple"),
    (lambda: hal.sort(X, descending="yes"), hal.ArgumentError, "sort: descending must be"),
    (lambda: hal.argsort(X, stable=1), hal.ArgumentError, "argsort: stable must be"),
    (lambda: hal.cumulative_sum(V, include_initial=2), hal.ArgumentError,
     "cumulative_sum: include_initial must be True or False"),
    (lambda: hal.nn.scaled_dot_product_attention(X, X, X, causal=None), hal.ArgumentError,
     "scaled_dot_product_attention: causal must be True or False"),
]


@pytest.mark.parametrize(("make", "error", "words"), BAD, ids=[w for _, _, w in BAD])
def test_wrong_kinds_of_arguments_are_hal_errors(make, error, words):
    with pytest.raises(error) as caught:
        make()
    assert words in str(caught.value)


@pytest.mark.parametrize("device", ["cpu", "null", "opencl"])
def test_parameters_are_checked_before_any_kernel(device):
    """One answer on every device, where the opencl kernels accepted a bad keepdims, a list
    axis, a softmax over nothing or over axes a 0-d tensor lacks, and a tuple shift of a
    flattened roll (answering what numpy's refuse, or roll otherwise), cpu's numpy kernels
    failed on some and the decompositions on a 0-d softmax."""
    if device not in hal.available_backends():
        pytest.skip(f"{device} is not available here")
    x = X.to(device)
    with pytest.raises(hal.ArgumentError, match="keepdims"):
        hal.max(x, keepdims=2.5)
    with pytest.raises(hal.ShapeError, match="axis must be None"):
        hal.op("all", x, axis=[0])
    with pytest.raises(hal.ShapeError, match=r"softmax: axis -1 of shape \(2, 0\) is empty"):
        hal.nn.softmax(hal.zeros((2, 0), device=device))
    with pytest.raises(hal.ShapeError, match="log_softmax: axis 0 of shape"):
        hal.nn.log_softmax(hal.zeros((0,), device=device), axis=0)
    with pytest.raises(hal.ShapeError, match="roll: shift \\(0, 1\\) with axis None"):
        hal.nn.roll(V.to(device), (0, 1))
    np.testing.assert_array_equal(hal.nn.roll(x, (1, 1), axis=(0, 1)).numpy(),
                                  np.roll(X.numpy(), (1, 1), axis=(0, 1)))
    np.testing.assert_array_equal(hal.nn.softmax(hal.zeros((0, 2), device=device)).numpy(),
                                  np.zeros((0, 2)))
    scalar = hal.asarray(3.0, device=device)
    with pytest.raises(hal.ShapeError, match="softmax: axis must be an int, got"):
        hal.nn.softmax(scalar, axis=(0, 1))
    assert hal.nn.softmax(scalar).item() == 1.0 and hal.nn.log_softmax(scalar, axis=0).item() == 0


def test_good_arguments_still_work():
    np.testing.assert_array_equal(hal.pad(V, 1).numpy(), np.pad(np.arange(3.0), 1))
    np.testing.assert_array_equal(hal.reshape(X, [3, 2]).numpy(), X.numpy().reshape(3, 2))
    np.testing.assert_array_equal(hal.permute_dims(X, [1, 0]).numpy(), X.numpy().T)
    np.testing.assert_array_equal(hal.broadcast_to(V, [2, 3]).numpy(), [[0, 1, 2]] * 2)
    np.testing.assert_array_equal(hal.sum(X, axis=(0, 1), keepdims=True).numpy(), [[15.0]])
    with pytest.raises(hal.ArgumentError, match=r"got np\.True_"):
        hal.sum(X, keepdims=np.bool_(True))  # the cpu kernel (numpy) would refuse it
    np.testing.assert_array_equal(hal.stack([V, V], axis=1).numpy(),
                                  np.stack([np.arange(3.0)] * 2, axis=1))
    assert hal.qmatmul(Q, Q.T, a_zero_point=np.int8(1)).numpy().tolist() == [[0, 0], [0, 0]]
    assert int(hal.asarray(3)) == 3 and complex(hal.asarray(1j)) == 1j
    q = hal.quantize_linear(V, [0.5, 0.5, 1.0], [0, 0, 0], axis=0)
    np.testing.assert_array_equal(q.numpy(), [0, 2, 2])
