"""The standard layers on hal Tensors: Linear, Embedding, LayerNorm, Dropout, MLP,
MultiHeadAttention, TransformerEncoderLayer and Sequential (each a `Layer`).

Every layer checks the last dimension of its input and names itself and the shape it
expected. Seeds make initialisation (and dropout masks) repeat exactly; a composite layer
derives one seed per part from its own.
"""

from __future__ import annotations

import math

import numpy as np

import hal
from hal import HalError, ShapeError, Tensor, UnsupportedDType

from .layer import Layer


def child_seed(seed, index: int) -> int | None:
    """A seed for the index-th part of a layer seeded with `seed` (None stays None)."""
    if seed is None:
        return None
    return int(np.random.SeedSequence([seed, index]).generate_state(1)[0])


def check_last_dim(layer: str, x: Tensor, expected: int, meaning: str = "features") -> None:
    """ShapeError naming `layer` unless x's last dimension is `expected`."""
    if not x.shape or x.shape[-1] != expected:
        raise ShapeError(f"{layer}: input of shape {tuple(x.shape)} must end in {expected} "
                         f"({meaning}); pass a tensor of shape (..., {expected})")


def as_tensor(x, device) -> Tensor:
    """x as a hal Tensor on `device` (numpy arrays and lists are uploaded)."""
    return x if isinstance(x, Tensor) else hal.asarray(np.asarray(x), device=device)


class Linear(Layer):
    """y = x @ weight + bias, weight (in_features, out_features): hal.nn.linear's layout.

    Initialised as PyTorch does (uniform in +-1/sqrt(in_features)), drawn from `seed`.
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, *,
                 activation: str | None = None, dtype=hal.float32, device=None,
                 seed=None) -> None:
        super().__init__()
        bound = 1.0 / math.sqrt(in_features)
        self.weight = hal.random.uniform((in_features, out_features), low=-bound, high=bound,
                                         seed=seed, dtype=dtype, device=device)
        self.bias = (hal.random.uniform((out_features,), low=-bound, high=bound,
                                        seed=None if seed is None else seed + 1, dtype=dtype,
                                        device=device) if bias else None)
        self.activation = activation

    def forward(self, x: Tensor) -> Tensor:
        """x (..., in_features) -> (..., out_features)."""
        n_in, n_out = self.weight.shape
        check_last_dim(f"Linear({n_in}, {n_out})", x, n_in, "in_features")
        return hal.nn.linear(x, self.weight, self.bias, activation=self.activation)


class Embedding(Layer):
    """A lookup table: integer ids (...) -> rows of weight (num, dim), shaped (..., dim).

    Initialised from N(0, 1) as PyTorch does.
    """

    def __init__(self, num: int, dim: int, *, dtype=hal.float32, device=None,
                 seed=None) -> None:
        super().__init__()
        self.weight = hal.random.normal((num, dim), seed=seed, dtype=dtype, device=device)

    def forward(self, ids) -> Tensor:
        """Rows of weight at `ids` (an integer tensor, array or list)."""
        ids = as_tensor(ids, self.weight.device)
        if not hal.isdtype(ids.dtype, "integral"):
            num, dim = self.weight.shape
            raise UnsupportedDType(f"Embedding({num}, {dim}): ids must be integers, got "
                                   f"{ids.dtype.name}; cast them with hal.astype(ids, hal.int64)")
        return hal.take(self.weight, ids, axis=0)


class LayerNorm(Layer):
    """Normalisation over the last dimension, then * weight + bias (ones and zeros at first)."""

    def __init__(self, dim: int, eps: float = 1e-5, *, dtype=hal.float32, device=None) -> None:
        super().__init__()
        self.weight = hal.ones((dim,), dtype=dtype, device=device)
        self.bias = hal.zeros((dim,), dtype=dtype, device=device)
        self.eps = eps

    def forward(self, x: Tensor) -> Tensor:
        """x (..., dim) normalised along its last axis."""
        dim = self.weight.shape[0]
        check_last_dim(f"LayerNorm({dim})", x, dim)
        return hal.nn.layer_norm(x, self.weight, self.bias, eps=self.eps)


class Dropout(Layer):
    """Zeroes each element with probability p in training and scales the rest by 1/(1-p).

    The identity in eval mode or when p == 0. Each call draws a new mask from (seed, number
    of calls so far), so a run repeats exactly from its seed; seed None draws fresh masks.
    Under hal.jit the mask is drawn once, when the function is traced.
    """

    def __init__(self, p: float = 0.5, seed=None) -> None:
        super().__init__()
        if not 0 <= p < 1:
            raise HalError(f"Dropout: p={p} must be in [0, 1)")
        self.p = p
        self.seed = seed
        self.calls = 0

    def forward(self, x: Tensor) -> Tensor:
        """x with a fresh random mask applied in training; x itself otherwise."""
        if not self.training or self.p == 0:
            return x
        seed = None if self.seed is None else (self.seed, self.calls)
        self.calls += 1
        draw = hal.random.uniform(x.shape, seed=seed, dtype=x.dtype, device=x.device)
        return hal.where(hal.greater_equal(draw, self.p), x * (1 / (1 - self.p)), 0)


class Sequential(Layer):
    """Layers applied in order; the sub-layers are named "0", "1", ..."""

    def __init__(self, *layers: Layer) -> None:
        super().__init__()
        for i, layer in enumerate(layers):
            setattr(self, str(i), layer)

    def __len__(self) -> int:
        return len(self._layers)

    def __iter__(self):
        return iter(self._layers.values())

    def __getitem__(self, index: int) -> Layer:
        return list(self._layers.values())[index]

    def forward(self, x):
        """Each layer on the previous one's output."""
        for layer in self:
            x = layer(x)
        return x


class MLP(Layer):
    """Linear(dim, hidden, activation) -> Linear(hidden, dim) -> dropout: a transformer's
    feed-forward block, sub-layers `fc1` and `fc2`."""

    def __init__(self, dim: int, hidden: int, activation: str | None = "gelu",
                 dropout: float = 0.0, *, dtype=hal.float32, device=None, seed=None) -> None:
        super().__init__()
        self.fc1 = Linear(dim, hidden, activation=activation, dtype=dtype, device=device,
                          seed=child_seed(seed, 0))
        self.fc2 = Linear(hidden, dim, dtype=dtype, device=device, seed=child_seed(seed, 1))
        self.dropout = Dropout(dropout, seed=child_seed(seed, 2))

    def forward(self, x: Tensor) -> Tensor:
        """x (..., dim) -> (..., dim)."""
        dim, hidden = self.fc1.weight.shape
        check_last_dim(f"MLP({dim}, {hidden})", x, dim)
        return self.dropout(self.fc2(self.fc1(x)))


def padding_bias(mask, batch: int, seq: int, dtype, device) -> Tensor:
    """A (batch, seq) 0/1 key-padding mask (1 = keep) as an additive bias (batch, 1, 1, seq):
    0 where kept, the dtype's most negative finite value where masked."""
    mask = as_tensor(mask, device)
    if tuple(mask.shape) != (batch, seq):
        raise ShapeError(f"attention mask: shape {tuple(mask.shape)} must be (batch, seq) = "
                         f"{(batch, seq)}, 1 for tokens to attend to and 0 for padding")
    masked = 1 - hal.astype(mask, dtype)
    return hal.reshape(masked * float(hal.finfo(dtype).min), (batch, 1, 1, seq))


class MultiHeadAttention(Layer):
    """Self-attention over (batch, seq, dim) with `heads` heads of dim // heads each.

    Sub-layers `query`, `key`, `value` and `out` (Linear); `dropout` acts on the attention
    probabilities. forward(x, attention_mask) takes an optional (batch, seq) 0/1 key-padding
    mask (1 = attend), added to the scores as a large negative bias where 0.
    """

    def __init__(self, dim: int, heads: int, dropout: float = 0.0, bias: bool = True, *,
                 dtype=hal.float32, device=None, seed=None) -> None:
        super().__init__()
        if heads < 1 or dim % heads:
            raise HalError(f"MultiHeadAttention: dim {dim} must be a multiple of heads {heads}")
        self.dim, self.heads = dim, heads
        for i, name in enumerate(("query", "key", "value", "out")):
            setattr(self, name, Linear(dim, dim, bias, dtype=dtype, device=device,
                                       seed=child_seed(seed, i)))
        self.dropout = Dropout(dropout, seed=child_seed(seed, 4))

    def forward(self, x: Tensor, attention_mask=None) -> Tensor:
        """x (batch, seq, dim) -> (batch, seq, dim)."""
        where = f"MultiHeadAttention({self.dim}, heads={self.heads})"
        check_last_dim(where, x, self.dim)
        if x.ndim != 3:
            raise ShapeError(f"{where}: input of shape {tuple(x.shape)} must be "
                             f"(batch, seq, {self.dim})")
        batch, seq, _ = x.shape
        split = (batch, seq, self.heads, self.dim // self.heads)
        q, k, v = (hal.permute_dims(hal.reshape(layer(x), split), (0, 2, 1, 3))
                   for layer in (self.query, self.key, self.value))
        if attention_mask is None and not (self.training and self.dropout.p > 0):
            context = hal.nn.scaled_dot_product_attention(q, k, v)
        else:
            scores = hal.matmul(q, hal.matrix_transpose(k)) * (1 / math.sqrt(split[-1]))
            if attention_mask is not None:
                scores = scores + padding_bias(attention_mask, batch, seq, x.dtype, x.device)
            context = hal.matmul(self.dropout(hal.nn.softmax(scores, axis=-1)), v)
        merged = hal.reshape(hal.permute_dims(context, (0, 2, 1, 3)), (batch, seq, self.dim))
        return self.out(merged)


class TransformerEncoderLayer(Layer):
    """Self-attention then a feed-forward block, each with a residual connection.

    Post-LN as BERT (norm_first=False): x = LN(x + dropout(attn(x))); x = LN(x + mlp(x)).
    Pre-LN (norm_first=True): x = x + dropout(attn(LN(x))); x = x + mlp(LN(x)).
    Sub-layers `attention`, `attention_norm`, `dropout`, `mlp`, `mlp_norm`;
    `attention_dropout` (default: dropout) acts on the attention probabilities.
    """

    def __init__(self, dim: int, heads: int, hidden: int, activation: str | None = "gelu",
                 dropout: float = 0.0, eps: float = 1e-12, norm_first: bool = False, *,
                 attention_dropout: float | None = None, dtype=hal.float32, device=None,
                 seed=None) -> None:
        super().__init__()
        attention_dropout = dropout if attention_dropout is None else attention_dropout
        self.attention = MultiHeadAttention(dim, heads, attention_dropout, dtype=dtype,
                                            device=device, seed=child_seed(seed, 0))
        self.attention_norm = LayerNorm(dim, eps, dtype=dtype, device=device)
        self.dropout = Dropout(dropout, seed=child_seed(seed, 1))
        self.mlp = MLP(dim, hidden, activation, dropout, dtype=dtype, device=device,
                       seed=child_seed(seed, 2))
        self.mlp_norm = LayerNorm(dim, eps, dtype=dtype, device=device)
        self.norm_first = norm_first

    def forward(self, x: Tensor, attention_mask=None) -> Tensor:
        """x (batch, seq, dim) -> (batch, seq, dim); attention_mask as MultiHeadAttention's."""
        a = self.attention
        check_last_dim(f"TransformerEncoderLayer({a.dim}, heads={a.heads})", x, a.dim)
        if self.norm_first:
            x = x + self.dropout(self.attention(self.attention_norm(x), attention_mask))
            return x + self.mlp(self.mlp_norm(x))
        x = self.attention_norm(x + self.dropout(self.attention(x, attention_mask)))
        return self.mlp_norm(x + self.mlp(x))
