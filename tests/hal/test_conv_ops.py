"""conv, max_pool, avg_pool, batch_norm, rms_norm and rope: their numpy references against
direct definitions, and bad input refused with a HalError naming the op, the shape and
what to do."""

from __future__ import annotations

import numpy as np
import pytest

import hal
from hal import ops

RNG = np.random.default_rng(11)


def _direct_conv1d(x, w, stride, pad, dilation, groups):
    """The definition, one output element at a time."""
    xp = np.pad(x, ((0, 0), (0, 0), pad))
    n, _, length = xp.shape
    o, cg, k = w.shape
    og = o // groups
    out = (length - dilation * (k - 1) - 1) // stride + 1
    y = np.zeros((n, o, out))
    for b in range(n):
        for oc in range(o):
            g = oc // og
            for i in range(out):
                taps = xp[b, g * cg:(g + 1) * cg][:, i * stride + dilation * np.arange(k)]
                y[b, oc, i] = np.sum(taps * w[oc])
    return y


@pytest.mark.parametrize("stride,pad,dilation,groups", [(1, (0, 0), 1, 1), (2, (1, 2), 1, 2),
                                                        (3, (2, 0), 2, 1), (1, (1, 1), 3, 4)])
def test_conv_reference_is_the_definition(stride, pad, dilation, groups):
    x = RNG.standard_normal((2, 4, 11))
    w = RNG.standard_normal((8, 4 // groups, 3))
    got = ops.spec("conv").evaluate(x, w, None, stride=stride, padding=(pad,),
                                    dilation=dilation, groups=groups)
    np.testing.assert_allclose(got, _direct_conv1d(x, w, stride, pad, dilation, groups),
                               rtol=1e-12, atol=1e-12)


def test_rope_rotates_pairs_by_their_angle_in_both_pairings():
    x = RNG.standard_normal((3, 4))
    theta = RNG.standard_normal((3, 2))
    half = ops.spec("rope").evaluate(x, np.cos(theta), np.sin(theta))
    z = (x[:, :2] + 1j * x[:, 2:]) * np.exp(1j * theta)
    np.testing.assert_allclose(half, np.concatenate([z.real, z.imag], axis=-1), rtol=1e-12)
    inter = ops.spec("rope").evaluate(x, np.cos(theta), np.sin(theta), interleaved=True)
    z = (x[:, 0::2] + 1j * x[:, 1::2]) * np.exp(1j * theta)
    np.testing.assert_allclose(inter, np.stack([z.real, z.imag], -1).reshape(3, 4), rtol=1e-12)


def _z(*shape):
    return hal.zeros(shape)


BAD = {
    "conv rank": (lambda: hal.nn.conv(_z(3, 8), _z(4, 3, 3)), r"conv: input of shape \(3, 8\) must "
                  r"be 3-d to 5-d.*add a batch axis"),
    "conv weight rank": (lambda: hal.nn.conv(_z(1, 3, 8), _z(4, 3)),
                         r"conv: weight of shape \(4, 3\) must be 3-d"),
    "conv groups": (lambda: hal.nn.conv(_z(1, 6, 8, 8), _z(4, 3, 3, 3), groups=4),
                    r"conv: input of shape \(1, 6, 8, 8\).*do not fit groups=4"),
    "conv channels": (lambda: hal.nn.conv(_z(1, 6, 8, 8), _z(4, 2, 3, 3)),
                      r"weight.shape\[1\] must be channels / groups \(6 / 1\)"),
    "conv kernel too large": (lambda: hal.nn.conv(_z(1, 1, 4, 4), _z(1, 1, 5, 3), padding=0),
                              r"conv: kernel \(5, 3\).*larger than the padded input: spatial "
                              r"size \(4, 4\).*pad more"),
    "conv dilated kernel": (lambda: hal.nn.conv(_z(1, 1, 6), _z(1, 1, 3), dilation=3),
                            r"conv: kernel \(3,\) \(dilation \(3,\)\) is larger"),
    "conv negative stride": (lambda: hal.nn.conv(_z(1, 1, 6), _z(1, 1, 3), stride=-1),
                             r"conv: stride must be at least 1, got -1"),
    "conv stride count": (lambda: hal.nn.conv(_z(1, 1, 6, 6), _z(1, 1, 3, 3), stride=(1, 2, 3)),
                          r"conv: stride \(1, 2, 3\) must be an int or 2 ints"),
    "conv negative padding": (lambda: hal.nn.conv(_z(1, 1, 6), _z(1, 1, 3), padding=((-1, 0),)),
                              r"conv: padding must be at least 0, got -1"),
    "conv bias": (lambda: hal.nn.conv(_z(1, 1, 6), _z(2, 1, 3), _z(3)),
                  r"conv: bias of shape \(3,\) must be \(2,\)"),
    "conv layout": (lambda: hal.nn.conv(_z(1, 1, 6), _z(1, 1, 3), layout="NCHW"),
                    r"conv: layout 'NCHW' is not one of channels_first, channels_last"),
    "max_pool padding": (lambda: hal.nn.max_pool(_z(1, 1, 6, 6), 2, padding=2),
                         r"max_pool: padding .* must be smaller than the kernel"),
    "avg_pool kernel": (lambda: hal.nn.avg_pool(_z(1, 1, 3), 5),
                        r"avg_pool: kernel \(5,\).*larger than the padded input"),
    "avg_pool flag": (lambda: hal.nn.avg_pool(_z(1, 1, 6), 2, count_include_pad=1),
                      r"avg_pool: count_include_pad must be True or False"),
    "batch_norm channels": (lambda: hal.nn.batch_norm(_z(2, 3, 4), _z(4), _z(4)),
                            r"batch_norm: mean of shape \(4,\) must be \(3,\), one per channel"),
    "rms_norm weight": (lambda: hal.nn.rms_norm(_z(2, 3), _z(4)),
                        r"rms_norm: weight of shape \(4,\) must be \(3,\)"),
    "rope odd": (lambda: hal.nn.rope(_z(2, 5), _z(2, 2), _z(2, 2)),
                 r"rope: input of shape \(2, 5\) needs an even last axis"),
    "rope angles": (lambda: hal.nn.rope(_z(2, 6), _z(3, 3), _z(3, 3)),
                    r"rope: cos and sin of shape \(3, 3\) must broadcast to \(2, 3\)"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_is_a_hal_error_naming_op_and_shape(case):
    fn, message = BAD[case]
    with pytest.raises(hal.HalError, match=message):
        fn()
