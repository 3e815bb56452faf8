"""frontends.nn.resnet: ResNet-50's shape, seeded weights, and a small ResNet eager and under
hal.jit against the numpy forward of its weights."""

from __future__ import annotations

import numpy as np

import hal
from frontends.nn import resnet

SMALL = resnet.ResNetConfig(name="small", blocks=(1, 2), width=4, classes=10)


def _images(n: int = 2, side: int = 32) -> np.ndarray:
    return np.random.default_rng(5).standard_normal((n, 3, side, side)).astype(np.float32)


def test_resnet50_has_torchvisions_parameter_count_and_shapes():
    model = resnet.ResNet(resnet.RESNET50, seed=0)
    assert sum(t.size for t in model.parameters().values()) == 25_557_032
    block = model.stages[1][0]
    assert block.reduce.conv.stride == 1 and block.spatial.conv.stride == 2
    assert tuple(block.shortcut.conv.weight.shape) == (512, 256, 1, 1)
    assert tuple(model.fc.weight.shape) == (2048, 1000)


def test_a_small_resnet_eager_and_jitted_matches_the_numpy_forward(cpu):
    model = resnet.ResNet(SMALL, seed=1).eval()
    x = _images()
    expected = resnet.reference_forward(model, x)
    assert expected.shape == (2, 10)
    eager = model(hal.asarray(x, device=cpu)).numpy()
    jitted = hal.jit(lambda t: model(t))(hal.asarray(x, device=cpu)).numpy()
    scale = np.abs(expected).max()
    assert np.abs(eager - expected).max() <= 1e-4 * scale
    assert np.abs(jitted - expected).max() <= 1e-4 * scale


def test_batch_norm_is_not_an_identity_and_the_seed_fixes_every_weight():
    a, b = resnet.ResNet(SMALL, seed=1), resnet.ResNet(SMALL, seed=1)
    other = resnet.ResNet(SMALL, seed=2)
    for name, tensor in a.state_dict().items():
        assert np.array_equal(tensor.numpy(), b.state_dict()[name].numpy()), name
    assert not np.array_equal(a.fc.weight.numpy(), other.fc.weight.numpy())
    assert not np.allclose(a.stem.bn.running_var.numpy(), 1.0)
