"""BERT on hal: BertConfig, BertModel, the HF checkpoint name mapping, and sentence encoding.

    config = BertConfig.from_json("config.json")
    bert = BertModel(config, seed=0).eval()
    bert.load_state_dict(from_hf_state(safetensors.numpy.load_file("model.safetensors")))
    hidden = bert(input_ids, attention_mask)              # (batch, seq, hidden_size)

hal names: `embeddings.{word,position,token_type}_embeddings.weight`, `embeddings.norm.*`,
`layers.<i>.attention.{query,key,value,out}.*`, `layers.<i>.attention_norm.*`,
`layers.<i>.mlp.{fc1,fc2}.*`, `layers.<i>.mlp_norm.*`; Linear weights are (in, out).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

import hal
from hal import HalError, ShapeError, Tensor

from .layer import Layer
from .layers import (
    Dropout,
    Embedding,
    LayerNorm,
    Sequential,
    TransformerEncoderLayer,
    as_tensor,
    child_seed,
)

# HF's hidden_act -> hal.nn.linear's activation
ACTIVATIONS = {"gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh",
               "relu": "relu", "silu": "silu", "swish": "silu", "tanh": "tanh"}


@dataclasses.dataclass(frozen=True)
class BertConfig:
    """A BERT architecture, with HF config.json's key names and bert-base's defaults."""

    vocab_size: int = 30522
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    hidden_act: str = "gelu"

    def __post_init__(self) -> None:
        if self.hidden_act not in ACTIVATIONS:
            raise HalError(f"BertConfig: hidden_act {self.hidden_act!r} is not supported; "
                           f"use one of {', '.join(ACTIVATIONS)}")

    @classmethod
    def from_json(cls, source: str | Path | Mapping) -> BertConfig:
        """Read an HF config.json (a path or its parsed dict); other keys are ignored.

        Only absolute position embeddings of model_type "bert" are supported.
        """
        if not isinstance(source, Mapping):
            path = Path(source)
            try:
                source = json.loads(path.read_text())
            except (OSError, ValueError) as e:
                raise HalError(f"BertConfig.from_json: cannot read {path}: {e}") from None
        for key, wanted in (("model_type", "bert"), ("position_embedding_type", "absolute")):
            if source.get(key, wanted) != wanted:
                raise HalError(f"BertConfig.from_json: {key} {source[key]!r} is not supported "
                               f"(only {wanted!r})")
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in source.items() if k in names})


class BertEmbeddings(Layer):
    """Word + position + token-type embeddings, then LayerNorm and dropout."""

    def __init__(self, config: BertConfig, *, dtype=hal.float32, device=None,
                 seed=None) -> None:
        super().__init__()
        c = config
        self.word_embeddings = Embedding(c.vocab_size, c.hidden_size, dtype=dtype,
                                         device=device, seed=child_seed(seed, 0))
        self.position_embeddings = Embedding(c.max_position_embeddings, c.hidden_size,
                                             dtype=dtype, device=device,
                                             seed=child_seed(seed, 1))
        self.token_type_embeddings = Embedding(c.type_vocab_size, c.hidden_size, dtype=dtype,
                                               device=device, seed=child_seed(seed, 2))
        self.norm = LayerNorm(c.hidden_size, c.layer_norm_eps, dtype=dtype, device=device)
        self.dropout = Dropout(c.hidden_dropout_prob, seed=child_seed(seed, 3))

    def forward(self, input_ids: Tensor, token_type_ids=None) -> Tensor:
        """(batch, seq) ids -> (batch, seq, hidden); token types default to 0."""
        seq = input_ids.shape[1]
        limit = self.position_embeddings.weight.shape[0]
        if seq > limit:
            raise ShapeError(f"BertModel: sequence length {seq} exceeds "
                             f"max_position_embeddings {limit}; truncate the input")
        if token_type_ids is None:
            token_type_ids = hal.zeros(input_ids.shape, dtype=hal.int64,
                                       device=input_ids.device)
        x = (self.word_embeddings(input_ids)
             + self.position_embeddings.weight[:seq]
             + self.token_type_embeddings(as_tensor(token_type_ids, input_ids.device)))
        return self.dropout(self.norm(x))


class BertModel(Layer):
    """BERT's encoder: embeddings then `num_hidden_layers` post-LN transformer layers.

    forward(input_ids, attention_mask=None, token_type_ids=None) -> the last hidden state
    (batch, seq, hidden_size). Inputs are (batch, seq) integer tensors or arrays; the
    attention mask is 1 for tokens and 0 for padding.
    """

    def __init__(self, config: BertConfig, *, dtype=hal.float32, device=None,
                 seed=None) -> None:
        super().__init__()
        c = config
        self.config = c
        self.embeddings = BertEmbeddings(c, dtype=dtype, device=device, seed=child_seed(seed, 0))
        self.layers = Sequential(*(
            TransformerEncoderLayer(c.hidden_size, c.num_attention_heads, c.intermediate_size,
                                    ACTIVATIONS[c.hidden_act], c.hidden_dropout_prob,
                                    c.layer_norm_eps,
                                    attention_dropout=c.attention_probs_dropout_prob,
                                    dtype=dtype, device=device, seed=child_seed(seed, 1 + i))
            for i in range(c.num_hidden_layers)))

    @property
    def device(self) -> hal.Device:
        """The device holding the parameters."""
        return self.embeddings.word_embeddings.weight.device

    def forward(self, input_ids, attention_mask=None, token_type_ids=None) -> Tensor:
        """(batch, seq) ids -> last hidden state (batch, seq, hidden_size)."""
        input_ids = as_tensor(input_ids, self.device)
        if input_ids.ndim != 2:
            raise ShapeError(f"BertModel: input_ids of shape {tuple(input_ids.shape)} must be "
                             "(batch, seq)")
        x = self.embeddings(input_ids, token_type_ids)
        for layer in self.layers:
            x = layer(x, attention_mask)
        return x


# -- HF checkpoints -----------------------------------------------------------------------
_SKIPPED = re.compile(r"^(pooler\.|cls\.)|position_ids$")
_RENAMES = [  # (HF pattern, hal name, Linear weight to transpose)
    (r"embeddings\.LayerNorm\.", "embeddings.norm.", False),
    (r"encoder\.layer\.(\d+)\.attention\.self\.(query|key|value)\.", r"layers.\1.attention.\2.",
     True),
    (r"encoder\.layer\.(\d+)\.attention\.output\.dense\.", r"layers.\1.attention.out.", True),
    (r"encoder\.layer\.(\d+)\.attention\.output\.LayerNorm\.", r"layers.\1.attention_norm.",
     False),
    (r"encoder\.layer\.(\d+)\.intermediate\.dense\.", r"layers.\1.mlp.fc1.", True),
    (r"encoder\.layer\.(\d+)\.output\.dense\.", r"layers.\1.mlp.fc2.", True),
    (r"encoder\.layer\.(\d+)\.output\.LayerNorm\.", r"layers.\1.mlp_norm.", False),
]


def hal_name(hf_name: str) -> tuple[str, bool] | None:
    """(hal parameter name, whether to transpose) for an HF BERT weight name; None for the
    weights BertModel has no use for (pooler, heads, position ids)."""
    name = hf_name.removeprefix("bert.")
    if _SKIPPED.search(name):
        return None
    name = re.sub(r"LayerNorm\.gamma$", "LayerNorm.weight", name)
    name = re.sub(r"LayerNorm\.beta$", "LayerNorm.bias", name)
    for pattern, replacement, linear in _RENAMES:
        renamed, hits = re.subn("^" + pattern, replacement, name)
        if hits:
            return renamed, linear and renamed.endswith(".weight")
    return name, False


def from_hf_state(state: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """An HF BertModel state (safetensors names, Linear weights (out, in)) as BertModel's.

    Unknown names pass through unchanged, so `load_state_dict` lists them as unexpected.
    """
    out = {}
    for name, value in state.items():
        mapped = hal_name(name)
        if mapped is not None:
            new, transpose = mapped
            out[new] = np.ascontiguousarray(np.asarray(value).T) if transpose else value
    return out


# -- sentence embeddings ------------------------------------------------------------------
def mean_pool(hidden: Tensor, attention_mask=None) -> Tensor:
    """The mean of hidden (batch, seq, dim) over the tokens the mask keeps -> (batch, dim)."""
    if attention_mask is None:
        return hal.mean(hidden, axis=1)
    weights = hal.expand_dims(hal.astype(as_tensor(attention_mask, hidden.device),
                                         hidden.dtype), axis=-1)
    total = hal.sum(hidden * weights, axis=1)
    return total / hal.maximum(hal.sum(weights, axis=1), 1e-9)


def normalize(x: Tensor, eps: float = 1e-12) -> Tensor:
    """x divided by its L2 norm along the last axis (at least eps)."""
    return x / hal.maximum(hal.sqrt(hal.sum(x * x, axis=-1, keepdims=True)), eps)


def tokenize(tokenizer, texts: Sequence[str], max_length: int = 128) -> dict[str, np.ndarray]:
    """input_ids, attention_mask and token_type_ids (int64, padded to the longest text,
    truncated at max_length) from a `tokenizers.Tokenizer`; sets its truncation and padding."""
    if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
        raise HalError("tokenize: texts must be a list of strings")
    pad = tokenizer.padding or {}
    tokenizer.enable_truncation(max_length)
    tokenizer.enable_padding(pad_id=pad.get("pad_id", 0), pad_token=pad.get("pad_token", "[PAD]"))
    encodings = tokenizer.encode_batch(list(texts))
    return {key: np.array([getattr(e, attr) for e in encodings], dtype=np.int64)
            for key, attr in (("input_ids", "ids"), ("attention_mask", "attention_mask"),
                              ("token_type_ids", "type_ids"))}


class SentenceEncoder(Layer):
    """bert -> mean_pool -> normalize: sentence-transformers' all-MiniLM-L6-v2 pipeline.

    forward(input_ids, attention_mask=None, token_type_ids=None) -> (batch, hidden) unit
    vectors; `encode(texts)` tokenizes with the tokenizer given here and returns numpy.
    """

    def __init__(self, bert: BertModel, tokenizer=None) -> None:
        super().__init__()
        self.bert = bert
        self.tokenizer = tokenizer

    def forward(self, input_ids, attention_mask=None, token_type_ids=None) -> Tensor:
        """Unit-length sentence embeddings (batch, hidden)."""
        hidden = self.bert(input_ids, attention_mask, token_type_ids)
        return normalize(mean_pool(hidden, attention_mask))

    def encode(self, texts: Sequence[str], batch_size: int = 32, max_length: int = 128,
               device=None) -> np.ndarray:
        """Embeddings (len(texts), hidden) as float32 numpy, computed in eval mode in batches
        padded to their longest text; with `device`, the encoder moves there first."""
        if self.tokenizer is None:
            raise HalError("SentenceEncoder.encode: no tokenizer; build it with "
                           "SentenceEncoder(bert, tokenizer) or use frontends.nn.load_minilm()")
        if device is not None:
            self.to(device)
        training = self.training
        self.eval()
        try:
            rows = []
            for start in range(0, len(texts), batch_size):
                batch = tokenize(self.tokenizer, texts[start:start + batch_size], max_length)
                rows.append(self(**{k: hal.asarray(v, device=self.bert.device)
                                    for k, v in batch.items()}).numpy())
        finally:
            self.train(training)
        hidden = self.bert.config.hidden_size
        return np.concatenate(rows).astype(np.float32) if rows else np.zeros((0, hidden),
                                                                               np.float32)
