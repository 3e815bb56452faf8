"""frontends.nn's convolutional and normalisation layers against numpy references, on cpu;
a small CNN's gradient against finite differences."""

from __future__ import annotations

import numpy as np
import pytest

import hal
from frontends import autograd as ag
from frontends import nn

RNG = np.random.default_rng(3)


def np_conv2d(x, w, b, stride, pad):
    """A direct loop: the definition of a 2-d cross-correlation (groups 1)."""
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, _, h, wd = xp.shape
    o, _, kh, kw = w.shape
    ho, wo = (h - kh) // stride + 1, (wd - kw) // stride + 1
    y = np.zeros((n, o, ho, wo))
    for i in range(ho):
        for j in range(wo):
            patch = xp[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            y[:, :, i, j] = np.einsum("nchw,ochw->no", patch, w)
    return y + b[None, :, None, None]


def test_conv_matches_the_direct_loop_in_both_layouts():
    x = RNG.standard_normal((2, 3, 9, 8))
    conv = nn.Conv(3, 5, 3, stride=2, padding=1, dtype=hal.float64, seed=0)
    want = np_conv2d(x, conv.weight.numpy(), conv.bias.numpy(), 2, 1)
    np.testing.assert_allclose(conv(hal.asarray(x)).numpy(), want, rtol=1e-12, atol=1e-12)
    last = nn.Conv(3, 5, 3, stride=2, padding=1, layout="channels_last", dtype=hal.float64,
                   seed=0)
    got = last(hal.asarray(np.moveaxis(x, 1, -1))).numpy()
    np.testing.assert_allclose(np.moveaxis(got, -1, 1), want, rtol=1e-12, atol=1e-12)


def test_conv_refuses_the_wrong_channels_and_groups():
    conv = nn.Conv(4, 6, (3,), groups=2)
    with pytest.raises(hal.ShapeError, match=r"Conv\(4, 6, \(3,\)\): input of shape \(2, 3, 7\)"):
        conv(hal.zeros((2, 3, 7)))
    with pytest.raises(hal.HalError, match="groups=3 must divide"):
        nn.Conv(4, 6, 3, groups=3)


def test_pools_match_numpy():
    x = RNG.standard_normal((2, 3, 6, 6)).astype(np.float32)
    blocks = x.reshape(2, 3, 3, 2, 3, 2)
    np.testing.assert_array_equal(nn.MaxPool(2)(hal.asarray(x)).numpy(), blocks.max(axis=(3, 5)))
    np.testing.assert_allclose(nn.AvgPool(2)(hal.asarray(x)).numpy(), blocks.mean(axis=(3, 5)),
                               rtol=1e-6)
    edge = nn.AvgPool(3, stride=3, padding=1)(hal.asarray(x)).numpy()  # corners: 4 of 9 inside
    np.testing.assert_allclose(edge[:, :, 0, 0], x[:, :, :2, :2].mean(axis=(2, 3)), rtol=1e-6)
    counted = nn.AvgPool(3, stride=3, padding=1, count_include_pad=True)(hal.asarray(x)).numpy()
    np.testing.assert_allclose(counted[:, :, 0, 0], x[:, :, :2, :2].sum(axis=(2, 3)) / 9,
                               rtol=1e-6)


def test_batch_norm_trains_on_batch_statistics_and_evaluates_on_running_ones():
    x = RNG.standard_normal((4, 3, 5, 5)) * 2 + 1
    bn = nn.BatchNorm(3, momentum=0.5, dtype=hal.float64)
    y = bn(hal.asarray(x)).numpy()
    mean, var = x.mean(axis=(0, 2, 3)), x.var(axis=(0, 2, 3))
    want = (x - mean[None, :, None, None]) / np.sqrt(var[None, :, None, None] + 1e-5)
    np.testing.assert_allclose(y, want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(bn.running_mean.numpy(), 0.5 * mean, rtol=1e-12)
    np.testing.assert_allclose(bn.running_var.numpy(), 0.5 + 0.5 * x.var(axis=(0, 2, 3), ddof=1),
                               rtol=1e-12)
    bn.eval()
    rm, rv = bn.running_mean.numpy(), bn.running_var.numpy()
    want = (x - rm[None, :, None, None]) / np.sqrt(rv[None, :, None, None] + 1e-5)
    np.testing.assert_allclose(bn(hal.asarray(x)).numpy(), want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(bn.running_mean.numpy(), rm)  # eval leaves them


def test_batch_norm_in_train_mode_is_refused_under_jit():
    bn = nn.BatchNorm(3)
    with pytest.raises(hal.HalError, match=r"BatchNorm\(3\) in train mode under hal.jit"):
        hal.jit(lambda a: bn(a))(hal.zeros((2, 3, 4)))
    np.testing.assert_array_equal(bn.running_mean.numpy(), np.zeros(3))  # left as it was
    np.testing.assert_allclose(hal.jit(lambda a: bn.eval()(a))(hal.ones((2, 3, 4))).numpy(),
                               np.full((2, 3, 4), 1 / np.sqrt(1 + 1e-5)), rtol=1e-6)


def test_rms_norm_matches_numpy():
    x = RNG.standard_normal((2, 3, 8))
    norm = nn.RMSNorm(8, dtype=hal.float64)
    norm.weight = hal.asarray(RNG.standard_normal(8))
    want = x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * norm.weight.numpy()
    np.testing.assert_allclose(norm(hal.asarray(x)).numpy(), want, rtol=1e-12)
    with pytest.raises(hal.ShapeError, match=r"RMSNorm\(8\)"):
        norm(hal.zeros((2, 7)))


def test_a_small_cnn_differentiates_as_finite_differences():
    cnn = nn.Sequential(nn.Conv(2, 4, 3, padding=1, dtype=hal.float64, seed=1),
                        nn.BatchNorm(4, dtype=hal.float64).eval(), nn.MaxPool(2),
                        nn.Conv(4, 3, (2, 2), stride=1, dtype=hal.float64, seed=2),
                        nn.AvgPool(2, stride=1, padding=1))
    x = hal.asarray(RNG.standard_normal((2, 2, 6, 6)))
    ag.check_grads(lambda a: hal.sum(cnn(a) ** 2), (x,), order=1)
    grads = ag.grad(lambda p: hal.sum(cnn.call_with(p, x) ** 2))(cnn.trainable())
    assert set(grads) == set(cnn.trainable())
    assert all(np.all(np.isfinite(g.numpy())) for g in grads.values())
