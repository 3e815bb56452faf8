"""A small CNN trained on scikit-learn's handwritten digits (`load_digits`: 1,797 8x8 images
of 0-9, pixel values 0-16), then served in INT8.

    python -m frontends.nn.digits                     # train on cpu, print FP32/INT8 accuracy
    result = train()                                  # DigitsResult: model, losses, accuracy
    int8 = quantized(result.model)                    # every Conv and Linear in int8
    accuracy(int8, *test_split())

The split is fixed (a seeded shuffle, TEST_SHARE of the images held out), the weights and
the batches are drawn from the seed, and each step is one `hal.jit` graph of the loss and
its gradient, so a run repeats exactly. Batch norm trains with batch statistics eagerly
only, so this model has none: two Conv+ReLU+MaxPool stages and a Linear head.
"""

from __future__ import annotations

import argparse
import functools
import time
from dataclasses import dataclass, field

import numpy as np

import hal
from frontends import autograd as ag
from frontends import optim, quant
from hal import HalError, Tensor

from .conv_layers import Conv, MaxPool
from .layer import Layer
from .layers import Linear, child_seed

CLASSES = 10
TEST_SHARE = 0.2
SPLIT_SEED = 0
ACCURACY_TARGET = 0.95  # the FP32 test accuracy a run must reach
RETENTION_TARGET = 0.99  # INT8 accuracy over FP32 accuracy
DEFAULT_CONFIG = {"steps": 150, "batch_size": 64, "learning_rate": 1e-2, "weight_decay": 1e-4,
                  "seed": 0}


@functools.cache
def _dataset() -> tuple[np.ndarray, np.ndarray]:
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        raise HalError("the digits task needs scikit-learn (pip install scikit-learn)") from None
    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)[:, None]  # (N, 1, 8, 8) in [0, 1]
    return images, digits.target.astype(np.int64)


def _split(train: bool) -> tuple[np.ndarray, np.ndarray]:
    images, labels = _dataset()
    order = np.random.default_rng(SPLIT_SEED).permutation(len(labels))
    cut = round(len(labels) * (1 - TEST_SHARE))
    chosen = order[:cut] if train else order[cut:]
    return images[chosen], labels[chosen]


def train_split() -> tuple[np.ndarray, np.ndarray]:
    """(images (N, 1, 8, 8) float32 in [0, 1], labels (N,) int64) the model trains on."""
    return _split(True)


def test_split() -> tuple[np.ndarray, np.ndarray]:
    """The held-out images and labels (TEST_SHARE of the 1,797)."""
    return _split(False)


class DigitsCNN(Layer):
    """Conv 1->16 3x3, ReLU, 2x2 max pool (8x8 -> 4x4); Conv 16->32 3x3, ReLU, 2x2 max pool
    (-> 2x2); Linear 128 -> 10 logits."""

    def __init__(self, *, seed=0, device=None) -> None:
        super().__init__()
        self.conv1 = Conv(1, 16, 3, padding=1, seed=child_seed(seed, 0), device=device)
        self.conv2 = Conv(16, 32, 3, padding=1, seed=child_seed(seed, 1), device=device)
        self.pool = MaxPool(2)
        self.head = Linear(32 * 2 * 2, CLASSES, seed=child_seed(seed, 2), device=device)

    def forward(self, x: Tensor) -> Tensor:
        """Images (N, 1, 8, 8) -> logits (N, 10)."""
        y = self.pool(hal.nn.relu(self.conv1(x)))
        y = self.pool(hal.nn.relu(self.conv2(y)))
        return self.head(hal.reshape(y, (y.shape[0], -1)))


def cross_entropy(logits: Tensor, one_hot: Tensor) -> Tensor:
    """The mean over the batch of -log softmax(logits)[label], labels given one-hot."""
    return -hal.sum(hal.nn.log_softmax(logits, axis=-1) * one_hot) / logits.shape[0]


@dataclass
class DigitsResult:
    """A training run: the trained model, the loss per step, seconds per step and its
    FP32 test accuracy."""

    model: DigitsCNN
    config: dict
    losses: list[float] = field(default_factory=list)
    seconds_per_step: float = 0.0
    accuracy: float = 0.0


def train(config: dict | None = None, *, device=None, log=None) -> DigitsResult:
    """Train DigitsCNN with AdamW on batches of the training split drawn from the seed, and
    measure its test accuracy."""
    config = {**DEFAULT_CONFIG, **(config or {})}
    unknown = sorted(set(config) - set(DEFAULT_CONFIG))
    if unknown:
        raise HalError(f"digits.train: unknown config key(s) {', '.join(unknown)}; the keys "
                       f"are {', '.join(DEFAULT_CONFIG)}")
    device = hal.device(device)
    model = DigitsCNN(seed=config["seed"], device=device)
    images, labels = train_split()
    one_hot = np.eye(CLASSES, dtype=np.float32)[labels]
    rng = np.random.default_rng(config["seed"])
    optimizer = optim.AdamW(config["learning_rate"], weight_decay=config["weight_decay"])
    step = hal.jit(ag.value_and_grad(
        lambda params, x, y: cross_entropy(model.call_with(params, x), y)))
    params = model.trainable()
    result = DigitsResult(model, config)
    put = lambda a: hal.asarray(a, device=device)  # noqa: E731
    start = time.perf_counter()
    for n in range(config["steps"]):
        pick = rng.choice(len(labels), config["batch_size"], replace=False)
        loss, grads = step(params, put(images[pick]), put(one_hot[pick]))
        params = optimizer.step(params, grads)
        result.losses.append(float(loss))
        if log and (n % 50 == 0 or n == config["steps"] - 1):
            log(f"step {n:4d}  loss {result.losses[-1]:.4f}")
    result.seconds_per_step = (time.perf_counter() - start) / max(config["steps"], 1)
    model.update(params)
    model.eval()
    result.accuracy = accuracy(model, *test_split())
    return result


def predict(model: Layer, images: np.ndarray) -> np.ndarray:
    """The most likely digit of each image."""
    device = next(iter(model.state_dict().values())).device
    return np.argmax(model(hal.asarray(images, device=device)).numpy(), axis=-1)


def accuracy(model: Layer, images: np.ndarray, labels: np.ndarray) -> float:
    """The share of images whose predicted digit is the label."""
    return float(np.mean(predict(model, images) == labels))


def reference_logits(model: DigitsCNN, images: np.ndarray) -> np.ndarray:
    """The model's logits computed in numpy (float64) from its weights."""
    spec = hal.ops.spec
    w = {name: t.numpy().astype(np.float64) for name, t in model.state_dict().items()}
    y = np.asarray(images, np.float64)
    for conv in ("conv1", "conv2"):
        y = spec("conv").reference(y, w[f"{conv}.weight"], w[f"{conv}.bias"], padding=1)
        y = spec("max_pool").reference(np.maximum(y, 0), kernel=(2, 2))
    return y.reshape(len(y), -1) @ w["head.weight"] + w["head.bias"]


def quantized(model: DigitsCNN, per_channel: bool = True) -> Layer:
    """The INT8 model: int8 weights and uint8 activations quantized per call in every layer,
    the head by `quant_post_dynamic`, the convolutions by `quant_post_dynamic_conv`."""
    linear = quant.quant_post_dynamic(model, per_channel=per_channel)
    return quant.quant_post_dynamic_conv(linear, per_channel=per_channel).eval()


def main(argv=None) -> int:
    """Train, quantize, and print the FP32 and INT8 test accuracy and the retention."""
    parser = argparse.ArgumentParser(prog="python -m frontends.nn.digits",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=DEFAULT_CONFIG["steps"])
    parser.add_argument("--device", default=None, help="a hal device, e.g. cpu or opencl:0")
    args = parser.parse_args(argv)
    result = train({"steps": args.steps}, device=args.device, log=print)
    int8 = accuracy(quantized(result.model), *test_split())
    print(f"{len(result.losses)} steps, {result.seconds_per_step * 1e3:.1f} ms/step; test "
          f"accuracy FP32 {result.accuracy:.4f} INT8 {int8:.4f} retention "
          f"{int8 / result.accuracy:.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
