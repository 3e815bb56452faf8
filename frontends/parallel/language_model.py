"""The LM `hal train` trains: a small decoder-only transformer over bytes.

`LanguageModel` reads bytes (vocabulary 256, no tokenizer) and predicts the next one. It is
ordinary single-device code with Megatron's split written on it as annotations: in each
attention the query, key and value projections are column parallel (`parallel(split_dim=1)`)
and the output projection row parallel (`split_dim=0`); in each MLP fc1 is column and fc2
row parallel. On one device the annotations do nothing; with tp > 1 `parallelize` gives
each rank its shards, and the copy it returns runs distributed. Its forward is a chain
(`pipeline_pieces`: embed, each block, logits) that `pipeline` cuts into pp stages.
`cross_entropy` is its next-token loss and `generate` its greedy sample.
"""

from __future__ import annotations

import numpy as np

import hal
from frontends.nn import MLP, Embedding, Layer, LayerNorm, Linear, Sequential
from frontends.nn.layers import child_seed
from hal import HalError, ShapeError, Tensor

from .annotate import parallel
from .pipeline import Piece

VOCAB = 256  # byte-level tokens


class CausalSelfAttention(Layer):
    """Multi-head self-attention where position i sees positions <= i; (batch, seq, dim) in
    and out. Sub-layers query, key, value (column parallel) and out (row parallel)."""

    def __init__(self, dim: int, heads: int, *, dtype=hal.float32, device=None,
                 seed=None) -> None:
        super().__init__()
        if heads < 1 or dim % heads:
            raise ShapeError(f"CausalSelfAttention: dim {dim} must be a multiple of heads "
                             f"{heads}")
        self.heads = heads
        make = lambda i: Linear(dim, dim, dtype=dtype, device=device,  # noqa: E731
                                seed=child_seed(seed, i))
        self.query = parallel(make(0), split_dim=1)
        self.key = parallel(make(1), split_dim=1)
        self.value = parallel(make(2), split_dim=1)
        self.out = parallel(make(3), split_dim=0)

    def forward(self, x: Tensor) -> Tensor:
        """x (batch, seq, dim) -> (batch, seq, dim)."""
        batch, seq, dim = x.shape
        split = (batch, seq, self.heads, dim // self.heads)
        q, k, v = (hal.permute_dims(hal.reshape(layer(x), split), (0, 2, 1, 3))
                   for layer in (self.query, self.key, self.value))
        context = hal.nn.scaled_dot_product_attention(q, k, v, causal=True)
        return self.out(hal.reshape(hal.permute_dims(context, (0, 2, 1, 3)), (batch, seq, dim)))


class Block(Layer):
    """A pre-LN decoder layer: x + attention(LN(x)), then x + mlp(LN(x)) (hidden 4 * dim,
    fc1 column and fc2 row parallel)."""

    def __init__(self, dim: int, heads: int, *, dtype=hal.float32, device=None,
                 seed=None) -> None:
        super().__init__()
        self.attention_norm = LayerNorm(dim, dtype=dtype, device=device)
        self.attention = CausalSelfAttention(dim, heads, dtype=dtype, device=device,
                                             seed=child_seed(seed, 0))
        self.mlp_norm = LayerNorm(dim, dtype=dtype, device=device)
        self.mlp = MLP(dim, 4 * dim, dtype=dtype, device=device, seed=child_seed(seed, 1))
        parallel(self.mlp.fc1, split_dim=1)
        parallel(self.mlp.fc2, split_dim=0)

    def forward(self, x: Tensor) -> Tensor:
        """x (batch, seq, dim) -> (batch, seq, dim)."""
        x = x + self.attention(self.attention_norm(x))
        return x + self.mlp(self.mlp_norm(x))


class LanguageModel(Layer):
    """A decoder-only transformer over byte ids: token and learned position embeddings,
    `layers` Blocks (sub-layer `blocks`), a final LayerNorm and a linear head to `vocab`
    logits.

    forward(ids) takes integer ids (batch, t) with t <= seq and returns logits
    (batch, t, vocab); logit i scores the token after position i.
    """

    def __init__(self, vocab: int = VOCAB, dim: int = 128, heads: int = 4, layers: int = 2,
                 seq: int = 64, *, dtype=hal.float32, device=None, seed=0) -> None:
        super().__init__()
        self.seq = seq
        self.tokens = Embedding(vocab, dim, dtype=dtype, device=device, seed=child_seed(seed, 0))
        self.positions = Embedding(seq, dim, dtype=dtype, device=device,
                                   seed=child_seed(seed, 1))
        self.blocks = Sequential(*(Block(dim, heads, dtype=dtype, device=device,
                                         seed=child_seed(seed, 2 + i)) for i in range(layers)))
        self.norm = LayerNorm(dim, dtype=dtype, device=device)
        self.head = Linear(dim, vocab, dtype=dtype, device=device, seed=child_seed(seed, 1000))

    def forward(self, ids) -> Tensor:
        """Logits (batch, t, vocab) of integer ids (batch, t)."""
        return self.logits(self.blocks(self.embed(ids)))

    def embed(self, ids) -> Tensor:
        """Token plus position embeddings (batch, t, dim) of integer ids (batch, t)."""
        t = ids.shape[-1]
        if t > self.seq:
            raise ShapeError(f"LanguageModel: {t} tokens exceed its seq {self.seq}; pass at "
                             f"most {self.seq} (the last ones) or build it with a larger seq")
        return self.tokens(ids) + self.positions(hal.arange(t, device=self.head.weight.device))

    def logits(self, x: Tensor) -> Tensor:
        """The final LayerNorm and head: (batch, t, dim) -> (batch, t, vocab)."""
        return self.head(self.norm(x))

    def pipeline_pieces(self) -> list[Piece]:
        """The forward as a chain for `pipeline`: embed, each block, logits."""
        blocks = [Piece((f"blocks.{i}",), lambda m, x, i=i: m.blocks[i](x))
                  for i in range(len(self.blocks))]
        return [Piece(("tokens", "positions"), LanguageModel.embed), *blocks,
                Piece(("norm", "head"), LanguageModel.logits)]


def cross_entropy(logits: Tensor, targets: Tensor) -> Tensor:
    """The mean over positions of -log softmax(logits)[target]: logits (..., vocab), integer
    targets (...)."""
    vocab = logits.shape[-1]
    one_hot = hal.astype(hal.equal(hal.expand_dims(targets, axis=-1),
                                   hal.arange(vocab, device=logits.device)), logits.dtype)
    picked = hal.sum(hal.nn.log_softmax(logits, axis=-1) * one_hot)
    return -picked / (targets.size if targets.size else 1)


def generate(model: LanguageModel, prompt: str, n: int) -> str:
    """prompt continued by n bytes, each the most likely one (greedy), as text. With a
    parallelized model every rank of its group must call it."""
    ids = list(prompt.encode())
    if not ids:
        raise HalError("generate: the prompt is empty; give at least one character")
    device = model.head.weight.device
    for _ in range(n):
        window = hal.asarray(np.array([ids[-model.seq:]], dtype=np.int64), device=device)
        logits = model(window)
        ids.append(int(np.argmax(logits.numpy()[0, -1])))
    return bytes(ids).decode("utf-8", errors="replace")

