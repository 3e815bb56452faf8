"""A Llama-style decoder on hal: RMSNorm, rotary positions, SwiGLU, grouped-query attention
and a KV cache, with prefill, decode and greedy generation.

    model = Llama(CONFIGS["tiny"], seed=0).eval()      # random weights drawn from the seed
    logits = model(ids)                                # full causal forward (batch, t, vocab)
    cache = model.new_cache(batch)                     # per layer (k, v) at max_seq, zeros
    last, cache = model.prefill(ids, cache)            # the prompt at once: (batch, vocab)
    last, cache = model.decode(next_ids, position, cache)   # one token a step
    out = generate(model, ids, 16, jit=True)           # greedy, one jitted step per bucket

The cache is a tuple of (k, v) tensors per layer, each (batch, n_kv_heads, max_seq,
head_dim). A step writes the new keys and values into it with `hal.dynamic_update_slice`
at `position` and returns the new cache: the cache and the position are graph inputs, so
one jitted step serves every position, and `greedy_steps` donates the cache to it, so on
the cpu the row is written in place instead of the cache copied. `window` (a static
length >= position + 1) limits the keys a step reads to the first `window` rows;
`generate` rounds it up to a power-of-two bucket, so a run traces one step per bucket,
not one per token.
Named configs of released shapes (CONFIGS["llama-3.2-1b"], ...) carry random weights only.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

import hal
from hal import HalError, ShapeError, Tensor

from .conv_layers import RMSNorm
from .layer import Layer
from .layers import Embedding, Linear, Sequential, as_tensor, child_seed


@dataclasses.dataclass(frozen=True)
class LlamaConfig:
    """A Llama architecture: vocabulary, width, layers, query and key/value heads, the
    SwiGLU hidden size, the longest sequence (the cache's length), RoPE's base, RMSNorm's
    eps."""

    vocab_size: int = 256
    dim: int = 64
    n_layers: int = 2
    n_heads: int = 4
    n_kv_heads: int = 2
    hidden_dim: int = 128
    max_seq: int = 64
    rope_theta: float = 10000.0
    norm_eps: float = 1e-5

    def __post_init__(self) -> None:
        if self.dim % self.n_heads or (self.dim // self.n_heads) % 2:
            raise HalError(f"LlamaConfig: dim {self.dim} must be n_heads {self.n_heads} times "
                           "an even head size")
        if self.n_kv_heads < 1 or self.n_heads % self.n_kv_heads:
            raise HalError(f"LlamaConfig: n_kv_heads {self.n_kv_heads} must divide n_heads "
                           f"{self.n_heads}")

    @property
    def head_dim(self) -> int:
        """The size of one head."""
        return self.dim // self.n_heads

    def parameters(self) -> int:
        """The number of weights (embedding and output head untied)."""
        kv = self.n_kv_heads * self.head_dim
        layer = 2 * self.dim * self.dim + 2 * self.dim * kv + 3 * self.dim * self.hidden_dim
        return self.n_layers * (layer + 2 * self.dim) + 2 * self.vocab_size * self.dim + self.dim


CONFIGS = {
    "tiny": LlamaConfig(),
    "small": LlamaConfig(vocab_size=512, dim=256, n_layers=4, n_heads=8, n_kv_heads=2,
                         hidden_dim=688, max_seq=256),
    # released shapes, random weights: for a GPU
    "llama-3.2-1b": LlamaConfig(vocab_size=128256, dim=2048, n_layers=16, n_heads=32,
                                n_kv_heads=8, hidden_dim=8192, max_seq=2048,
                                rope_theta=500000.0),
    "llama-3-8b": LlamaConfig(vocab_size=128256, dim=4096, n_layers=32, n_heads=32,
                              n_kv_heads=8, hidden_dim=14336, max_seq=2048,
                              rope_theta=500000.0),
}


def rope_tables(config: LlamaConfig) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin (max_seq, head_dim / 2) of position * theta^(-2i / head_dim), float64."""
    half = config.head_dim // 2
    inverse = config.rope_theta ** (-np.arange(half, dtype=np.float64) / half)
    angles = np.outer(np.arange(config.max_seq, dtype=np.float64), inverse)
    return np.cos(angles), np.sin(angles)


class SwiGLU(Layer):
    """down(silu(gate(x)) * up(x)): Llama's feed-forward block, no biases."""

    def __init__(self, dim: int, hidden: int, *, dtype=hal.float32, device=None,
                 seed=None) -> None:
        super().__init__()
        self.gate = Linear(dim, hidden, False, activation="silu", dtype=dtype, device=device,
                           seed=child_seed(seed, 0))
        self.up = Linear(dim, hidden, False, dtype=dtype, device=device,
                         seed=child_seed(seed, 1))
        self.down = Linear(hidden, dim, False, dtype=dtype, device=device,
                           seed=child_seed(seed, 2))

    def forward(self, x: Tensor) -> Tensor:
        """x (..., dim) -> (..., dim)."""
        return self.down(self.gate(x) * self.up(x))


class Attention(Layer):
    """Grouped-query self-attention with rotary positions: n_heads query heads share
    n_kv_heads key/value heads (query head h reads key/value head h // group, as Hugging
    Face's repeat_kv). Sub-layers query, key, value, out (Linear, no bias)."""

    def __init__(self, config: LlamaConfig, *, dtype=hal.float32, device=None,
                 seed=None) -> None:
        super().__init__()
        c = config
        self.config = c
        kv = c.n_kv_heads * c.head_dim
        for i, (name, n_out) in enumerate((("query", c.dim), ("key", kv), ("value", kv))):
            setattr(self, name, Linear(c.dim, n_out, False, dtype=dtype, device=device,
                                       seed=child_seed(seed, i)))
        self.out = Linear(c.dim, c.dim, False, dtype=dtype, device=device,
                          seed=child_seed(seed, 3))

    def _heads(self, x: Tensor, cos: Tensor, sin: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """q (batch, n_kv, group, t, hd) and k, v (batch, n_kv, t, hd), q and k rotated."""
        c = self.config
        batch, t, _ = x.shape
        group = c.n_heads // c.n_kv_heads
        q = hal.reshape(self.query(x), (batch, t, c.n_kv_heads, group, c.head_dim))
        q = hal.nn.rope(hal.permute_dims(q, (0, 2, 3, 1, 4)), cos, sin)
        k, v = (hal.permute_dims(hal.reshape(layer(x), (batch, t, c.n_kv_heads, c.head_dim)),
                                 (0, 2, 1, 3)) for layer in (self.key, self.value))
        return q, hal.nn.rope(k, cos, sin), v

    def _merge(self, context: Tensor) -> Tensor:
        """(batch, n_kv, group, t, hd) -> out((batch, t, dim))."""
        batch, _, _, t, _ = context.shape
        merged = hal.permute_dims(context, (0, 3, 1, 2, 4))
        return self.out(hal.reshape(merged, (batch, t, self.config.dim)))

    def forward(self, x: Tensor, cos: Tensor, sin: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Causal attention over x (batch, t, dim) at positions 0..t-1 (cos, sin (t, hd/2)):
        (output (batch, t, dim), k, v (batch, n_kv, t, hd)) for the cache."""
        q, k, v = self._heads(x, cos, sin)
        expand = lambda a: hal.expand_dims(a, axis=2)  # noqa: E731  (one key head per group)
        context = hal.nn.scaled_dot_product_attention(q, expand(k), expand(v), causal=True)
        return self._merge(context), k, v

    def step(self, x: Tensor, cos: Tensor, sin: Tensor, start: Tensor, seen: Tensor,
             cache_k: Tensor, cache_v: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """One token x (batch, 1, dim): its key and value written into the cache at `start`
        (int64 (0, 0, position, 0)), attention over the first len(seen) rows where `seen`
        (bool (window,)) is true; (output (batch, 1, dim), new cache_k, new cache_v).

        With one token, (batch, 1, heads * head_dim) is (batch, heads, head_dim) as it lies
        in memory: the heads are reshapes, never transposes."""
        c = self.config
        batch, group = x.shape[0], c.n_heads // c.n_kv_heads
        q = hal.nn.rope(hal.reshape(self.query(x), (batch, c.n_kv_heads, group, c.head_dim)),
                        cos, sin)
        k = hal.nn.rope(hal.reshape(self.key(x), (batch, c.n_kv_heads, 1, c.head_dim)),
                        cos, sin)
        v = hal.reshape(self.value(x), (batch, c.n_kv_heads, 1, c.head_dim))
        cache_k = hal.dynamic_update_slice(cache_k, k, start)
        cache_v = hal.dynamic_update_slice(cache_v, v, start)
        window = seen.shape[0]
        keys, values = cache_k[:, :, :window], cache_v[:, :, :window]
        scores = hal.matmul(q, hal.matrix_transpose(keys)) * (1 / math.sqrt(c.head_dim))
        probs = hal.nn.softmax(hal.where(seen, scores, -math.inf), axis=-1)
        context = hal.matmul(probs, values)  # (batch, n_kv, group, head_dim)
        return self.out(hal.reshape(context, (batch, 1, c.dim))), cache_k, cache_v


class DecoderLayer(Layer):
    """x + attention(norm(x)), then x + mlp(norm(x)): sub-layers attention_norm, attention,
    mlp_norm, mlp (SwiGLU)."""

    def __init__(self, config: LlamaConfig, *, dtype=hal.float32, device=None,
                 seed=None) -> None:
        super().__init__()
        c = config
        self.attention_norm = RMSNorm(c.dim, c.norm_eps, dtype=dtype, device=device)
        self.attention = Attention(c, dtype=dtype, device=device, seed=child_seed(seed, 0))
        self.mlp_norm = RMSNorm(c.dim, c.norm_eps, dtype=dtype, device=device)
        self.mlp = SwiGLU(c.dim, c.hidden_dim, dtype=dtype, device=device,
                          seed=child_seed(seed, 1))

    def forward(self, x: Tensor, cos: Tensor, sin: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """(x out, k, v) over a whole sequence, as Attention.forward."""
        a, k, v = self.attention(self.attention_norm(x), cos, sin)
        x = x + a
        return x + self.mlp(self.mlp_norm(x)), k, v

    def step(self, x, cos, sin, start, seen, cache_k, cache_v):
        """(x out, cache_k, cache_v) for one token, as Attention.step."""
        a, cache_k, cache_v = self.attention.step(self.attention_norm(x), cos, sin, start,
                                                  seen, cache_k, cache_v)
        x = x + a
        return x + self.mlp(self.mlp_norm(x)), cache_k, cache_v


class Llama(Layer):
    """A Llama-style decoder: token embedding, `n_layers` DecoderLayers (sub-layer `layers`),
    a final RMSNorm and an untied output head; buffers rope_cos, rope_sin (max_seq, hd/2).

    Weights are random, drawn from `seed` (Linear's and Embedding's initialisation).
    """

    def __init__(self, config: LlamaConfig, *, dtype=hal.float32, device=None,
                 seed=0) -> None:
        super().__init__()
        c = config
        self.config = c
        self.embedding = Embedding(c.vocab_size, c.dim, dtype=dtype, device=device,
                                   seed=child_seed(seed, 0))
        self.layers = Sequential(*(DecoderLayer(c, dtype=dtype, device=device,
                                                seed=child_seed(seed, 1 + i))
                                   for i in range(c.n_layers)))
        self.norm = RMSNorm(c.dim, c.norm_eps, dtype=dtype, device=device)
        self.output = Linear(c.dim, c.vocab_size, False, dtype=dtype, device=device,
                             seed=child_seed(seed, 1000))
        cos, sin = rope_tables(c)
        device = self.output.weight.device
        self.register_buffer("rope_cos", hal.asarray(cos, dtype=dtype, device=device))
        self.register_buffer("rope_sin", hal.asarray(sin, dtype=dtype, device=device))

    @property
    def device(self) -> hal.Device:
        """The device holding the weights."""
        return self.output.weight.device

    def _ids(self, ids) -> Tensor:
        ids = as_tensor(ids, self.device)
        if ids.ndim != 2:
            raise ShapeError(f"Llama: ids of shape {tuple(ids.shape)} must be (batch, t)")
        if ids.shape[1] > self.config.max_seq:
            raise ShapeError(f"Llama: {ids.shape[1]} tokens exceed max_seq "
                             f"{self.config.max_seq}; build the config with a larger max_seq")
        return ids

    def _run(self, ids: Tensor) -> tuple[Tensor, list[tuple[Tensor, Tensor]]]:
        """The final hidden state (batch, t, dim) and each layer's (k, v) at 0..t-1."""
        t = ids.shape[1]
        cos, sin = self.rope_cos[:t], self.rope_sin[:t]
        x = self.embedding(ids)
        kv = []
        for layer in self.layers:
            x, k, v = layer(x, cos, sin)
            kv.append((k, v))
        return self.norm(x), kv

    def forward(self, ids) -> Tensor:
        """Logits (batch, t, vocab) of integer ids (batch, t): the full causal forward."""
        return self.output(self._run(self._ids(ids))[0])

    def new_cache(self, batch: int) -> tuple[tuple[Tensor, Tensor], ...]:
        """An empty KV cache: per layer (k, v) zeros (batch, n_kv_heads, max_seq, head_dim)."""
        c = self.config
        shape = (batch, c.n_kv_heads, c.max_seq, c.head_dim)
        dtype = self.output.weight.dtype
        return tuple((hal.zeros(shape, dtype=dtype, device=self.device),
                      hal.zeros(shape, dtype=dtype, device=self.device))
                     for _ in range(c.n_layers))

    def _check_cache(self, where: str, cache, batch: int) -> None:
        c = self.config
        want = (batch, c.n_kv_heads, c.max_seq, c.head_dim)
        if len(cache) != c.n_layers or any(tuple(t.shape) != want for kv in cache for t in kv):
            raise ShapeError(f"Llama.{where}: the cache must be {c.n_layers} (k, v) pairs of "
                             f"shape {want}; make one with new_cache({batch})")

    def prefill(self, ids, cache):
        """The prompt ids (batch, t) at positions 0..t-1 in one causal pass: (logits of the
        last position (batch, vocab), the cache with rows 0..t-1 written)."""
        ids = self._ids(ids)
        self._check_cache("prefill", cache, ids.shape[0])
        t = ids.shape[1]
        x, kv = self._run(ids)
        written = tuple((hal.dynamic_update_slice(old_k, k, (0, 0, 0, 0)),
                         hal.dynamic_update_slice(old_v, v, (0, 0, 0, 0)))
                        for (k, v), (old_k, old_v) in zip(kv, cache, strict=True))
        return self.output(x[:, t - 1]), written

    def decode(self, ids, position, cache, window: int | None = None):
        """One token per sequence, ids (batch, 1), at `position` (an int or an int64 tensor
        (1,)), the cache holding positions 0..position-1: (logits (batch, vocab), the cache
        with the position's row written). Keys are read from the first `window` rows
        (default max_seq; at least position + 1)."""
        c = self.config
        window = c.max_seq if window is None else window
        if not 0 < window <= c.max_seq:
            raise ShapeError(f"Llama.decode: window {window} must be in 1..{c.max_seq}")
        ids = self._ids(ids)
        self._check_cache("decode", cache, ids.shape[0])
        if isinstance(position, int):
            if not 0 <= position < window:
                raise ShapeError(f"Llama.decode: position {position} must be in 0..{window - 1}")
            position = hal.asarray(np.array([position], np.int64), device=self.device)
        cos, sin = (hal.take(table, position, axis=0) for table in (self.rope_cos,
                                                                   self.rope_sin))
        start = hal.pad(position, ((2, 1),))  # (0, 0, position, 0): the row written
        seen = hal.less(hal.arange(window, device=self.device), position + 1)  # less: a primitive
        x = self.embedding(ids)
        written = []
        for layer, (k, v) in zip(self.layers, cache, strict=True):
            x, k, v = layer.step(x, cos, sin, start, seen, k, v)
            written.append((k, v))
        return self.output(self.norm(x)[:, 0]), tuple(written)


def bucket(length: int, max_seq: int) -> int:
    """The power of two >= length (at least 16), at most max_seq: the window a decode
    step at position length - 1 reads."""
    return min(max(16, 1 << (length - 1).bit_length()), max_seq)


def greedy_steps(model: Llama, jit: bool = False):
    """(prefill, decode) functions giving the next ids (batch,) int64 and the new cache:
    prefill(ids, cache), decode(ids (batch, 1), position (1,), cache, window). With jit
    each is a hal.jit function (the window static) that donates the cache it is given
    (use the one it returns): the cache and the position are graph inputs, so decode
    traces once per window."""

    def prefill(ids, cache):
        logits, cache = model.prefill(ids, cache)
        return hal.argmax(logits, axis=-1), cache

    def decode(ids, position, cache, window):
        logits, cache = model.decode(ids, position, cache, window)
        return hal.argmax(logits, axis=-1), cache

    if jit:
        return (hal.jit(prefill, donate_argnums=(1,)),
                hal.jit(decode, static_argnums=(3,), donate_argnums=(2,)))
    return prefill, decode


def generate(model: Llama, ids, n: int, *, jit: bool = False, steps=None) -> np.ndarray:
    """ids (batch, t) continued by n greedy tokens: int64 numpy (batch, t + n). `steps`
    (from greedy_steps) reuses jitted functions across calls."""
    ids = np.asarray(ids, dtype=np.int64)
    if ids.ndim != 2 or ids.shape[1] < 1:
        raise ShapeError(f"generate: ids of shape {ids.shape} must be (batch, t) with t >= 1")
    t, limit = ids.shape[1], model.config.max_seq
    if t + n > limit:
        raise ShapeError(f"generate: {t} prompt tokens + {n} new exceed max_seq {limit}")
    prefill, decode = steps or greedy_steps(model, jit)
    device = model.device
    cache = model.new_cache(ids.shape[0])
    out = [ids]
    if n == 0:
        return ids
    token, cache = prefill(hal.asarray(ids, device=device), cache)
    out.append(token.numpy().astype(np.int64)[:, None])
    for position in range(t, t + n - 1):
        where = hal.asarray(np.array([position], np.int64), device=device)
        token, cache = decode(hal.reshape(token, (-1, 1)), where, cache,
                              bucket(position + 1, limit))
        out.append(token.numpy().astype(np.int64)[:, None])
    return np.concatenate(out, axis=1)
