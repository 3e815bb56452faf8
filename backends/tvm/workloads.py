"""The workloads `hal tune` tunes by name: each runs hal ops on a TVM device with seeded
inputs, so that the kernels compiled on the way are the ones tuned.

A spec is NAME or NAME:SHAPE, e.g. `gemm:1024x1024x1024` (M x N x K).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

import hal
from hal import HalError


@dataclass(frozen=True)
class Spec:
    """A named workload and the shape it runs at."""

    name: str
    shape: tuple[int, ...]

    def __str__(self) -> str:
        return f"{self.name}:{'x'.join(map(str, self.shape))}"


def _gemm(device, m, n, k):
    a, b = _normal(device, (m, k), 0), _normal(device, (k, n), 1)
    return hal.matmul(a, b)


def _linear_gelu(device, m, n, k):
    x, w, b = _normal(device, (m, k), 0), _normal(device, (k, n), 1), _normal(device, (n,), 2)
    return hal.nn.linear(x, w, b, activation="gelu_tanh")


def _qmatmul(device, m, n, k):
    rng = np.random.default_rng(0)
    a = hal.asarray(rng.integers(0, 256, (m, k), dtype=np.uint8), device=device)
    b = hal.asarray(rng.integers(-128, 128, (k, n), dtype=np.int8), device=device)
    return hal.op("qmatmul", a, b, a_zero_point=128)


def _quantized_linear(device, m, n, k):
    rng = np.random.default_rng(0)
    x = _normal(device, (m, k), 0)
    w = hal.asarray(rng.integers(-127, 128, (k, n), dtype=np.int8), device=device)
    scale = hal.asarray(rng.uniform(0.01, 0.02, n).astype(np.float32), device=device)
    return hal.nn.quantized_linear(x, w, scale)


def _layer_norm(device, rows, n):
    return hal.nn.layer_norm(_normal(device, (rows, n), 0))


def _softmax(device, rows, n):
    return hal.nn.softmax(_normal(device, (rows, n), 0), axis=-1)


def _attention(device, batch, length, dim):
    q, k, v = (_normal(device, (batch, length, dim), s) for s in range(3))
    return hal.nn.scaled_dot_product_attention(q, k, v)


def _normal(device, shape, seed):
    values = np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)
    return hal.asarray(values, device=device)


WORKLOADS: dict[str, tuple[Callable, tuple[int, ...], str]] = {
    "gemm": (_gemm, (1024, 1024, 1024), "float32 matmul, M x N x K"),
    "linear_gelu": (_linear_gelu, (512, 512, 512), "x @ w + b then tanh-GELU, one kernel"),
    "qmatmul": (_qmatmul, (512, 512, 512), "uint8 x int8 -> int32 (VNNI), M x N x K"),
    "quantized_linear": (_quantized_linear, (512, 512, 512),
                         "dynamic-quantized linear, per-channel weight scales"),
    "layer_norm": (_layer_norm, (4096, 1024), "rows x features"),
    "softmax": (_softmax, (4096, 1024), "rows x features"),
    "attention": (_attention, (8, 256, 64), "batch x length x head dim"),
}
DEFAULT = ("gemm", "linear_gelu", "qmatmul")


def parse(text: str) -> Spec:
    """A Spec from NAME or NAME:AxBxC; HalError naming the valid names otherwise."""
    name, _, shape = text.partition(":")
    if name not in WORKLOADS:
        raise HalError(f"unknown tuning workload {name!r}; choose from {', '.join(WORKLOADS)}")
    default = WORKLOADS[name][1]
    if not shape:
        return Spec(name, default)
    try:
        dims = tuple(int(n) for n in shape.split("x"))
    except ValueError:
        dims = ()
    if len(dims) != len(default) or min(dims) < 1:
        raise HalError(f"tuning workload {text!r}: the shape must be {len(default)} positive "
                       f"integers joined by 'x', like {name}:{'x'.join(map(str, default))}")
    return Spec(name, dims)


def run(spec: Spec, device) -> hal.Tensor:
    """Run the workload once on the device (compiling its kernels)."""
    out = WORKLOADS[spec.name][0](device, *spec.shape)
    device.synchronize()
    return out
