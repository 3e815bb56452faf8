"""ResNet-50 (He et al. 2016, torchvision's layout: the stride on the 3x3 convolution of each
bottleneck) on frontends.nn layers, with random weights: for timing, not for classifying.

    model = ResNet(RESNET50, seed=0).eval()       # batch norm in inference mode
    logits = model(images)                        # (N, 3, H, W) -> (N, 1000)
    expected = reference_forward(model, images)   # the same weights in numpy (float64)

Every weight, and each batch norm's statistics and affine, is drawn from `seed`, so two
models of one seed are equal; a smaller `ResNetConfig` (fewer blocks, narrower) has the
same structure. Batch norm runs in eval mode (its running statistics), as served models do.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import hal
from hal import Tensor

from .conv_layers import BatchNorm, Conv, MaxPool
from .layer import Layer
from .layers import Linear, Sequential, child_seed

EXPANSION = 4  # a bottleneck's output channels over its width


@dataclass(frozen=True)
class ResNetConfig:
    """Bottleneck blocks per stage, the first stage's width (doubling per stage), classes."""

    name: str = "ResNet-50"
    blocks: tuple[int, ...] = (3, 4, 6, 3)
    width: int = 64
    classes: int = 1000
    in_channels: int = 3


RESNET50 = ResNetConfig()


class ConvBN(Layer):
    """Conv (no bias) -> BatchNorm -> ReLU (unless relu=False): sub-layers `conv`, `bn`."""

    def __init__(self, cin: int, cout: int, kernel: int, stride: int = 1, *, relu: bool = True,
                 seed=None) -> None:
        super().__init__()
        self.conv = Conv(cin, cout, kernel, stride=stride, padding=kernel // 2, bias=False,
                         seed=child_seed(seed, 0))
        self.bn = BatchNorm(cout)
        self.relu = relu
        rng = np.random.default_rng(child_seed(seed, 1))
        put = lambda a: hal.asarray(a.astype(np.float32))  # noqa: E731
        # statistics and affine near those of a trained network, so batch norm is no identity
        self.bn.update({"weight": put(rng.uniform(0.5, 1.0, cout)),
                        "bias": put(rng.uniform(-0.1, 0.1, cout)),
                        "running_mean": put(rng.uniform(-0.1, 0.1, cout)),
                        "running_var": put(rng.uniform(0.5, 1.5, cout))})

    def forward(self, x: Tensor) -> Tensor:
        """x (N, cin, H, W) -> (N, cout, H / stride, W / stride)."""
        y = self.bn(self.conv(x))
        return hal.nn.relu(y) if self.relu else y


class Bottleneck(Layer):
    """1x1 reduce -> 3x3 (stride) -> 1x1 expand, plus the shortcut (a strided 1x1 ConvBN
    where the shape changes), then ReLU."""

    def __init__(self, cin: int, width: int, stride: int = 1, *, seed=None) -> None:
        super().__init__()
        cout = width * EXPANSION
        self.reduce = ConvBN(cin, width, 1, seed=child_seed(seed, 0))
        self.spatial = ConvBN(width, width, 3, stride, seed=child_seed(seed, 1))
        self.expand = ConvBN(width, cout, 1, relu=False, seed=child_seed(seed, 2))
        self.shortcut = (ConvBN(cin, cout, 1, stride, relu=False, seed=child_seed(seed, 3))
                         if stride != 1 or cin != cout else None)

    def forward(self, x: Tensor) -> Tensor:
        """x (N, cin, H, W) -> (N, 4 width, H / stride, W / stride)."""
        identity = x if self.shortcut is None else self.shortcut(x)
        return hal.nn.relu(self.expand(self.spatial(self.reduce(x))) + identity)


class ResNet(Layer):
    """Stem (7x7/2 ConvBN, 3x3/2 max pool), bottleneck stages, global average pool, Linear:
    sub-layers `stem`, `pool`, `stages` (a Sequential of Sequentials), `fc`."""

    def __init__(self, config: ResNetConfig = RESNET50, *, seed=0) -> None:
        super().__init__()
        self.config = config
        self.stem = ConvBN(config.in_channels, config.width, 7, 2, seed=child_seed(seed, 0))
        self.pool = MaxPool(3, 2, 1)
        stages, cin = [], config.width
        for i, count in enumerate(config.blocks):
            width = config.width * 2 ** i
            blocks = []
            for j in range(count):
                stride = 2 if i > 0 and j == 0 else 1
                blocks.append(Bottleneck(cin, width, stride,
                                         seed=child_seed(seed, 1 + 100 * i + j)))
                cin = width * EXPANSION
            stages.append(Sequential(*blocks))
        self.stages = Sequential(*stages)
        self.fc = Linear(cin, config.classes, seed=child_seed(seed, 999))

    def forward(self, x: Tensor) -> Tensor:
        """Images (N, in_channels, H, W) -> logits (N, classes)."""
        y = self.stages(self.pool(self.stem(x)))
        return self.fc(hal.mean(y, axis=(2, 3)))


def _numpy(t: Tensor | None) -> np.ndarray | None:
    return None if t is None else t.numpy().astype(np.float64)


def _conv_bn_reference(layer: ConvBN, x: np.ndarray) -> np.ndarray:
    conv, bn = layer.conv, layer.bn
    y = hal.ops.spec("conv").reference(x, _numpy(conv.weight), stride=conv.stride,
                                       padding=conv.padding)
    y = hal.ops.spec("batch_norm").reference(y, _numpy(bn.running_mean),
                                             _numpy(bn.running_var), _numpy(bn.weight),
                                             _numpy(bn.bias), eps=bn.eps)
    return np.maximum(y, 0) if layer.relu else y


def reference_forward(model: ResNet, images) -> np.ndarray:
    """The model's logits computed in numpy (float64) from its weights: the check of every
    backend's output."""
    x = np.asarray(images, np.float64)
    x = _conv_bn_reference(model.stem, x)
    pool = model.pool
    x = hal.ops.spec("max_pool").reference(x, kernel=pool.kernel, stride=pool.stride,
                                           padding=pool.padding)
    for stage in model.stages:
        for block in stage:
            identity = x if block.shortcut is None else _conv_bn_reference(block.shortcut, x)
            y = x
            for part in (block.reduce, block.spatial, block.expand):
                y = _conv_bn_reference(part, y)
            x = np.maximum(y + identity, 0)
    return x.mean(axis=(2, 3)) @ _numpy(model.fc.weight) + _numpy(model.fc.bias)
