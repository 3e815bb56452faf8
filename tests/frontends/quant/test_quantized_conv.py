"""QuantizedConv: the int8 im2col convolution against the float Conv it came from, eager and
under hal.jit, and its refusals."""

from __future__ import annotations

import numpy as np
import pytest

import hal
from frontends import nn, quant


@pytest.mark.parametrize(("stride", "padding"), [(1, 1), (2, 0), (2, 1)])
def test_quantized_conv_is_within_int8_error_of_the_float_conv(cpu, stride, padding):
    conv = nn.Conv(3, 5, 3, stride=stride, padding=padding, seed=0, device=cpu)
    x = hal.asarray(np.random.default_rng(1).standard_normal((2, 3, 9, 9)).astype(np.float32),
                    device=cpu)
    expected = conv(x).numpy()
    qconv = quant.QuantizedConv.from_conv(conv)
    got = qconv(x).numpy()
    assert got.shape == expected.shape
    error = np.abs(got - expected).max() / np.abs(expected).max()
    assert 0 < error < 0.02  # int8 weights and activations: about 1% of the range
    assert np.array_equal(hal.jit(lambda t: qconv(t))(x).numpy(), got)
    assert qconv.weight.dtype == hal.int8 and tuple(qconv.weight.shape) == (27, 5)


def test_a_model_copy_has_every_conv_quantized_and_the_original_is_unchanged(cpu):
    model = nn.Sequential(nn.Conv(1, 4, 3, padding=1, seed=0), nn.MaxPool(2),
                          nn.Conv(4, 2, 3, padding=1, seed=1))
    qmodel = quant.quant_post_dynamic_conv(model)
    assert [type(layer).__name__ for layer in qmodel] == ["QuantizedConv", "MaxPool",
                                                          "QuantizedConv"]
    assert type(model[0]) is nn.Conv


@pytest.mark.parametrize("kwargs", [{"groups": 2}, {"dilation": 2}, {"dims": 1}])
def test_what_it_does_not_cover_is_refused_by_name(kwargs):
    conv = nn.Conv(4, 4, 3, seed=0, **kwargs)
    with pytest.raises(hal.HalError, match=r"QuantizedConv\.from_conv.*keep this layer float"):
        quant.QuantizedConv.from_conv(conv)


def test_replacing_a_layer_of_a_sequential_keeps_its_order(cpu):
    model = nn.Sequential(nn.Linear(4, 4, seed=0), nn.Linear(4, 3, seed=1))
    qmodel = quant.quant_post_dynamic(model, skip=("1",))
    assert [type(layer).__name__ for layer in qmodel] == ["QuantizedLinear", "Linear"]
    x = hal.asarray(np.ones((2, 4), np.float32), device=cpu)
    assert qmodel(x).shape == (2, 3)
