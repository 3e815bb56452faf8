"""frontends.nn.llama's decoder written plainly in numpy or torch, from its weights: the
reference its outputs are checked against and the peers it is timed beside.

    weights = {k: v.numpy() for k, v in model.state_dict().items()}
    ref = ArrayLlama(weights, model.config)                          # numpy, float64
    logits, kv = ref.forward(ids)                                    # full causal forward
    cache = ref.new_cache(batch)
    last = ref.prefill(ids, cache); last = ref.decode(next_ids, position, cache)

The cache is a list of per-layer (k, v) arrays (batch, n_kv_heads, max_seq, head_dim),
written in place as a library with mutable arrays does. Query head h reads key/value head
h // group (Hugging Face's repeat_kv), rotary pairs are half-split (rotate_half).
"""

from __future__ import annotations

import math
import types
from collections.abc import Mapping

import numpy as np

from .llama import LlamaConfig, rope_tables


def numpy_ops(dtype=np.float64) -> types.SimpleNamespace:
    """The array functions ArrayLlama uses, in numpy with `dtype`."""
    return types.SimpleNamespace(
        asarray=lambda a: np.asarray(a, dtype=dtype), ids=lambda a: np.asarray(a, np.int64),
        zeros=lambda shape: np.zeros(shape, dtype), exp=np.exp, sqrt=np.sqrt,
        mean=lambda x: x.mean(-1, keepdims=True), amax=lambda x: x.max(-1, keepdims=True),
        sum=lambda x: x.sum(-1, keepdims=True), cat=lambda xs: np.concatenate(xs, -1),
        swap=lambda x, a, b: np.swapaxes(x, a, b), repeat=lambda x, n: np.repeat(x, n, 1),
        tril=lambda n: np.tril(np.ones((n, n), bool)), where=np.where,
        numpy=np.asarray)


def torch_ops(torch, dtype=None, device="cpu") -> types.SimpleNamespace:
    """The array functions ArrayLlama uses, in torch (float32 by default) on `device`."""
    dtype = dtype or torch.float32
    return types.SimpleNamespace(
        asarray=lambda a: torch.as_tensor(np.asarray(a), dtype=dtype, device=device),
        ids=lambda a: torch.as_tensor(np.asarray(a), dtype=torch.int64, device=device),
        zeros=lambda shape: torch.zeros(shape, dtype=dtype, device=device), exp=torch.exp,
        sqrt=torch.sqrt, mean=lambda x: x.mean(-1, keepdim=True),
        amax=lambda x: x.amax(-1, keepdim=True), sum=lambda x: x.sum(-1, keepdim=True),
        cat=lambda xs: torch.cat(xs, -1), swap=lambda x, a, b: x.transpose(a, b),
        repeat=lambda x, n: x.repeat_interleave(n, 1),
        tril=lambda n: torch.ones((n, n), dtype=torch.bool, device=device).tril(),
        where=torch.where, numpy=lambda t: t.detach().cpu().numpy())


class ArrayLlama:
    """The decoder on an array library's ops (`numpy_ops()`, `torch_ops(torch)`), weights
    by frontends.nn.llama.Llama's state-dict names (Linear weights (in, out))."""

    def __init__(self, weights: Mapping[str, np.ndarray], config: LlamaConfig,
                 ops: types.SimpleNamespace | None = None) -> None:
        self.c, self.o = config, ops or numpy_ops()
        self.w = {k: self.o.asarray(v) for k, v in weights.items()
                  if not k.startswith("rope_")}
        cos, sin = rope_tables(config)
        self.cos, self.sin = (self.o.asarray(np.concatenate([t, t], -1)) for t in (cos, sin))

    def _rms(self, x, weight):
        return x / self.o.sqrt(self.o.mean(x * x) + self.c.norm_eps) * weight

    def _rotate(self, x, start: int):
        t, half = x.shape[-2], x.shape[-1] // 2
        cos, sin = self.cos[start:start + t], self.sin[start:start + t]
        return x * cos + self.o.cat([-x[..., half:], x[..., :half]]) * sin

    def _heads(self, x, n: int):
        return self.o.swap(x.reshape(x.shape[0], x.shape[1], n, self.c.head_dim), 1, 2)

    def _layer(self, i: int, x, start: int, cache, mask):
        """Layer i over x (batch, t, dim) at positions start..start+t-1; (x out, k, v) with
        the keys and values up to there (from the cache when one is given)."""
        c, o, p = self.c, self.o, f"layers.{i}."
        w = self.w
        h = self._rms(x, w[p + "attention_norm.weight"])
        q = self._rotate(self._heads(h @ w[p + "attention.query.weight"], c.n_heads), start)
        k = self._rotate(self._heads(h @ w[p + "attention.key.weight"], c.n_kv_heads), start)
        v = self._heads(h @ w[p + "attention.value.weight"], c.n_kv_heads)
        if cache is not None:
            end = start + x.shape[1]
            cache[i][0][:, :, start:end], cache[i][1][:, :, start:end] = k, v
            k, v = cache[i][0][:, :, :end], cache[i][1][:, :, :end]
        group = c.n_heads // c.n_kv_heads
        scores = q @ o.swap(o.repeat(k, group), 2, 3) * (1 / math.sqrt(c.head_dim))
        if mask is not None:
            scores = o.where(mask, scores, -math.inf)
        probs = o.exp(scores - o.amax(scores))
        probs = probs / o.sum(probs)
        context = o.swap(probs @ o.repeat(v, group), 1, 2).reshape(*x.shape)
        x = x + context @ w[p + "attention.out.weight"]
        h = self._rms(x, w[p + "mlp_norm.weight"])
        gate = h @ w[p + "mlp.gate.weight"]
        up = h @ w[p + "mlp.up.weight"]
        return x + (gate / (1 + o.exp(-gate)) * up) @ w[p + "mlp.down.weight"], k, v

    def _run(self, ids, start: int, cache):
        ids = self.o.ids(ids)
        x = self.w["embedding.weight"][ids]
        t = ids.shape[1]
        mask = self.o.tril(t) if t > 1 else None  # a prompt from position 0, or one token
        kv = []
        for i in range(self.c.n_layers):
            x, k, v = self._layer(i, x, start, cache, mask)
            kv.append((k, v))
        return self._rms(x, self.w["norm.weight"]) @ self.w["output.weight"], kv

    def forward(self, ids):
        """(logits (batch, t, vocab), per layer (k, v) (batch, n_kv, t, hd)) of ids (batch, t)."""
        return self._run(ids, 0, None)

    def new_cache(self, batch: int) -> list:
        """Per layer (k, v) zeros (batch, n_kv_heads, max_seq, head_dim)."""
        c = self.c
        shape = (batch, c.n_kv_heads, c.max_seq, c.head_dim)
        return [(self.o.zeros(shape), self.o.zeros(shape)) for _ in range(c.n_layers)]

    def prefill(self, ids, cache):
        """The prompt (batch, t) at positions 0..t-1 written into `cache`; last logits."""
        return self._run(ids, 0, cache)[0][:, -1]

    def decode(self, ids, position: int, cache):
        """One token per sequence (batch, 1) at `position`, written into `cache`; logits
        (batch, vocab)."""
        return self._run(ids, position, cache)[0][:, -1]
