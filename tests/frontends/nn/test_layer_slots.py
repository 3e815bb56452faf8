"""Assigning to a Layer attribute that exists keeps its kind and its place."""

from __future__ import annotations

import numpy as np

import hal
from frontends import nn


def test_a_replaced_sublayer_keeps_its_place_in_a_sequential():
    model = nn.Sequential(nn.Linear(2, 3, seed=0), nn.Linear(3, 4, seed=1))
    model.__setattr__("0", nn.Linear(2, 3, seed=2))
    assert [layer.weight.shape for layer in model] == [(2, 3), (3, 4)]


def test_batch_norm_statistics_stay_buffers_after_a_training_step(cpu):
    bn = nn.BatchNorm(3)
    bn(hal.asarray(np.random.default_rng(0).standard_normal((4, 3, 2, 2)).astype(np.float32),
                   device=cpu))
    assert set(bn.trainable()) == {"weight", "bias"}
    assert not np.allclose(bn.running_mean.numpy(), 0)
