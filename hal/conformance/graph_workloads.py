"""The graphs the graph layer runs through `hal.jit`: the project's jit workloads written with
hal's public ops (a KdV step, a transformer block, a ResNet block, a Llama block, a
Taylor-mode pass) and a few seeded
random elementwise/reduction graphs. Each is a `GraphWorkload`: a function of hal Tensors
and the host inputs it takes, small enough to run in well under a second.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .. import fft, functions, nn
from ..runtime import dtypes as dt
from ..runtime.errors import HalError


@dataclass(frozen=True)
class GraphWorkload:
    """A function of hal Tensors returning one Tensor, its host inputs (seeded, one array per
    argument) and the dtype it runs in."""

    name: str
    fn: Callable
    inputs: Callable[[], list[np.ndarray]]
    dtype: np.dtype = dt.float32
    doc: str = ""


# -- the project's jit workloads -------------------------------------------------------------
def kdv_step(v, e, e2, q, f):
    """Two exponential Runge-Kutta stages of the KdV equation's rfft state v: the nonlinear
    term rfft(irfft(v)^2) on the grid, the linear part by the coefficient arrays."""
    n = 2 * (v.shape[-1] - 1)

    def nonlinear(w):
        u = fft.irfft(w, n)
        return fft.rfft(u * u)

    nv = nonlinear(v)
    a = e2 * v + q * nv
    return e * v + f * (nv + nonlinear(a))


def _kdv_inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(1)
    n = 32
    x = np.linspace(-np.pi, np.pi, n, endpoint=False)
    v = np.fft.rfft(np.cos(x) + 0.5 * np.sin(2 * x)).astype(np.complex64)
    k = np.arange(n // 2 + 1)
    e2 = np.exp(1j * 1e-3 * k**3).astype(np.complex64)
    coefficients = [(rng.uniform(-0.05, 0.05, k.size) * 1j).astype(np.complex64)
                    for _ in range(2)]
    return [v, (e2 * e2).astype(np.complex64), e2, *coefficients]


HEADS = 2


def transformer_block(x, ln1_w, ln1_b, w_qkv, w_out, ln2_w, ln2_b, w_up, b_up, w_down, b_down):
    """A pre-norm transformer block: causal multi-head attention and a gelu MLP, each added
    to the residual stream (batch, sequence, width)."""
    batch, length, width = x.shape
    h = nn.layer_norm(x, ln1_w, ln1_b)
    qkv = functions.reshape(nn.linear(h, w_qkv), (batch, length, 3, HEADS, width // HEADS))
    q, k, v = (functions.permute_dims(qkv[:, :, i], (0, 2, 1, 3)) for i in range(3))
    attended = nn.scaled_dot_product_attention(q, k, v, causal=True)
    merged = functions.reshape(functions.permute_dims(attended, (0, 2, 1, 3)),
                               (batch, length, width))
    x = x + nn.linear(merged, w_out)
    h = nn.layer_norm(x, ln2_w, ln2_b)
    return x + nn.linear(nn.linear(h, w_up, b_up, activation="gelu"), w_down, b_down)


def _transformer_inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(2)
    width, hidden = 8, 16

    def weight(*shape):
        return (rng.standard_normal(shape) / math.sqrt(shape[0])).astype(np.float32)

    def vector(n, centre):
        return (centre + 0.1 * rng.standard_normal(n)).astype(np.float32)

    return [rng.standard_normal((2, 5, width)).astype(np.float32), vector(width, 1),
            vector(width, 0), weight(width, 3 * width), weight(width, width), vector(width, 1),
            vector(width, 0), weight(width, hidden), vector(hidden, 0), weight(hidden, width),
            vector(width, 0)]


def resnet_block(x, w1, mean1, var1, w2, mean2, var2, scale, shift):
    """A ResNet basic block on (batch, channels, height, width): two 3x3 convolutions with
    inference batch norm, relu, the residual, then a 3x3 stride-2 max pool."""
    h = nn.relu(nn.batch_norm(nn.conv(x, w1, padding=1), mean1, var1, scale, shift))
    h = nn.batch_norm(nn.conv(h, w2, padding=1), mean2, var2)
    return nn.max_pool(nn.relu(h + x), 3, stride=2, padding=1)


def _resnet_inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(3)
    c = 4

    def weight():
        return (rng.standard_normal((c, c, 3, 3)) / math.sqrt(9 * c)).astype(np.float32)

    def positive():
        return rng.uniform(0.5, 2.0, c).astype(np.float32)

    def centred():
        return (0.1 * rng.standard_normal(c)).astype(np.float32)

    return [rng.standard_normal((2, c, 6, 6)).astype(np.float32), weight(), centred(),
            positive(), weight(), centred(), positive(), positive(), centred()]


def llama_block(x, norm1, w_qkv, cos, sin, w_out, norm2, w_gate, w_up, w_down):
    """A Llama decoder block on (batch, sequence, width): RMSNorm, causal attention with
    rotary position embedding (half-split pairs), RMSNorm and a SwiGLU MLP, each added to
    the residual stream."""
    batch, length, width = x.shape
    qkv = functions.reshape(nn.linear(nn.rms_norm(x, norm1), w_qkv),
                            (batch, length, 3, HEADS, width // HEADS))
    q, k, v = (functions.permute_dims(qkv[:, :, i], (0, 2, 1, 3)) for i in range(3))
    q, k = nn.rope(q, cos, sin), nn.rope(k, cos, sin)
    attended = nn.scaled_dot_product_attention(q, k, v, causal=True)
    x = x + nn.linear(functions.reshape(functions.permute_dims(attended, (0, 2, 1, 3)),
                                        (batch, length, width)), w_out)
    h = nn.rms_norm(x, norm2)
    return x + nn.linear(nn.linear(h, w_gate, activation="silu") * nn.linear(h, w_up), w_down)


def _llama_inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(4)
    width, hidden, length = 8, 16, 5

    def weight(*shape):
        return (rng.standard_normal(shape) / math.sqrt(shape[0])).astype(np.float32)

    half = width // HEADS // 2
    angles = np.arange(length)[:, None] * 10000.0 ** (-np.arange(half) / half)
    norm = [(1 + 0.1 * rng.standard_normal(width)).astype(np.float32) for _ in range(2)]
    return [rng.standard_normal((2, length, width)).astype(np.float32), norm[0],
            weight(width, 3 * width), np.cos(angles).astype(np.float32),
            np.sin(angles).astype(np.float32), weight(width, width), norm[1],
            weight(width, hidden), weight(width, hidden), weight(hidden, width)]


ORDER = 3


def taylor_exp_sin(x):
    """The Taylor coefficients y_0..y_ORDER of exp(sin(x(t))) from those of x(t) (the rows
    of x), by Taylor-mode recurrences: s' = c x', c' = -s x', y' = y s'."""
    xs = [x[k] for k in range(ORDER + 1)]
    s, c, y = [functions.sin(xs[0])], [functions.cos(xs[0])], []
    for k in range(1, ORDER + 1):
        s.append(sum(j * xs[j] * c[k - j] for j in range(1, k + 1)) * (1 / k))
        c.append(sum(j * xs[j] * s[k - j] for j in range(1, k + 1)) * (-1 / k))
    y.append(functions.exp(s[0]))
    for k in range(1, ORDER + 1):
        y.append(sum(j * s[j] * y[k - j] for j in range(1, k + 1)) * (1 / k))
    return functions.stack(y)


def _taylor_inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(3)
    return [(rng.uniform(-1, 1, (ORDER + 1, 12)) / np.arange(1, ORDER + 2)[:, None])
            .astype(np.float32)]


# -- seeded random graphs --------------------------------------------------------------------
UNARY = ("sin", "cos", "tanh", "negative", "abs", "square")
BINARY = ("add", "subtract", "multiply", "maximum", "minimum")
REDUCE = ("sum", "max", "min")
RANDOM_GRAPHS = 4  # random-0 .. random-3


@dataclass(frozen=True)
class RandomGraph:
    """A seeded program of elementwise ops over three inputs (4x6, 6 and 4x1), perhaps a
    reduction, perhaps an elementwise epilogue after it; `str()` writes it as one
    expression."""

    steps: tuple  # (op, operand indices into inputs then step results, params)

    def __call__(self, *inputs):
        values = list(inputs)
        for op, operands, params in self.steps:
            values.append(getattr(functions, op)(*[values[i] for i in operands], **params))
        return values[-1]

    def __str__(self) -> str:
        names = ["a", "b", "c"]
        for op, operands, params in self.steps:
            extra = "".join(f", {k}={v!r}" for k, v in params.items())
            names.append(f"{op}({', '.join(names[i] for i in operands)}{extra})")
        return names[-1]


def random_graph(seed: int) -> RandomGraph:
    """Six to nine elementwise steps, then a sum/max/min (two graphs in three) and an
    epilogue step reading an input (every other reduced graph)."""
    rng = np.random.default_rng(seed)
    steps, count = [], 3
    for _ in range(int(rng.integers(6, 10))):
        recent = int(rng.integers(max(0, count - 3), count))  # chains, not only fan-out
        if rng.random() < 0.4:
            steps.append((str(rng.choice(UNARY)), (recent,), {}))
        else:
            steps.append((str(rng.choice(BINARY)), (recent, int(rng.integers(0, count))), {}))
        count += 1
    if rng.random() < 2 / 3:
        axis = [None, -1, 0][int(rng.integers(0, 3))]
        steps.append((str(rng.choice(REDUCE)), (count - 1,), {"axis": axis, "keepdims": True}))
        count += 1
        if rng.random() < 0.5:
            steps.append((str(rng.choice(BINARY)), (count - 1, 2), {}))
    return RandomGraph(tuple(steps))


def _random_inputs(seed: int) -> Callable[[], list[np.ndarray]]:
    def inputs() -> list[np.ndarray]:
        rng = np.random.default_rng(1000 + seed)
        return [rng.uniform(-1, 1, shape).astype(np.float32) for shape in ((4, 6), (6,), (4, 1))]

    return inputs


WORKLOADS: tuple[GraphWorkload, ...] = (
    GraphWorkload("kdv_step", kdv_step, _kdv_inputs, dt.complex64, kdv_step.__doc__),
    GraphWorkload("transformer_block", transformer_block, _transformer_inputs,
                  doc=transformer_block.__doc__),
    GraphWorkload("resnet_block", resnet_block, _resnet_inputs, doc=resnet_block.__doc__),
    GraphWorkload("llama_block", llama_block, _llama_inputs, doc=llama_block.__doc__),
    GraphWorkload("taylor_exp_sin", taylor_exp_sin, _taylor_inputs, doc=taylor_exp_sin.__doc__),
    *(GraphWorkload(f"random-{i}", random_graph(i), _random_inputs(i), doc=str(random_graph(i)))
      for i in range(RANDOM_GRAPHS)),
)


def workload(name: str) -> GraphWorkload:
    """The graph workload of this name; a HalError lists them."""
    for w in WORKLOADS:
        if w.name == name:
            return w
    raise HalError(f"conformance: no graph named {name!r}; the graphs are "
                   f"{', '.join(w.name for w in WORKLOADS)}")
