"""An independent numpy BERT (HF weight names and layout, float64): the reference that hal's
BertModel, its INT8 form and ONNX Runtime are checked against. It does not use hal.

    state = load_weights(frontends.nn.model_dir())
    sentence_embeddings(state, ids, mask)      # all-MiniLM-L6-v2's pipeline
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from scipy.special import erf


def load_weights(directory: str | Path) -> dict:
    """{"config": config.json as a dict, "state": model.safetensors as numpy, HF names}."""
    from safetensors.numpy import load_file

    directory = Path(directory)
    return {"config": json.loads((directory / "config.json").read_text()),
            "state": load_file(str(directory / "model.safetensors"))}


def sentence_embeddings(weights: dict, ids, mask) -> np.ndarray:
    """Unit sentence embeddings (batch, hidden) of a model from `load_weights`."""
    hidden = bert_forward(weights["state"], weights["config"], ids, mask)
    return sentence_embedding(hidden, mask)


def bert_forward(state, config, ids, mask=None, types=None):
    """BERT's last hidden state from an HF-named state dict (Linear weights (out, in))."""
    ids = np.asarray(ids)
    batch, seq = ids.shape
    heads = config["num_attention_heads"]
    eps = config["layer_norm_eps"]
    mask = np.ones((batch, seq)) if mask is None else np.asarray(mask, np.float64)
    types = np.zeros_like(ids) if types is None else np.asarray(types)
    w = {k: np.asarray(v, np.float64) for k, v in state.items()}

    def norm(x, name):
        centred = x - x.mean(-1, keepdims=True)
        scaled = centred / np.sqrt((centred ** 2).mean(-1, keepdims=True) + eps)
        return scaled * w[name + ".weight"] + w[name + ".bias"]

    def dense(x, name):  # one 2-D GEMM: a 3-D @ 2-D matmul loops over the batch
        y = x.reshape(-1, x.shape[-1]) @ w[name + ".weight"].T + w[name + ".bias"]
        return y.reshape(*x.shape[:-1], -1)

    def split(x):
        return x.reshape(batch, seq, heads, -1).transpose(0, 2, 1, 3)

    x = (w["embeddings.word_embeddings.weight"][ids]
         + w["embeddings.position_embeddings.weight"][:seq]
         + w["embeddings.token_type_embeddings.weight"][types])
    x = norm(x, "embeddings.LayerNorm")
    for i in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        q, k, v = (split(dense(x, p + "attention.self." + n)) for n in ("query", "key", "value"))
        scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1])
        scores = scores + (1 - mask)[:, None, None, :] * -1e30
        probs = np.exp(scores - scores.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        context = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, seq, -1)
        x = norm(x + dense(context, p + "attention.output.dense"), p + "attention.output.LayerNorm")
        h = dense(x, p + "intermediate.dense")
        h = 0.5 * h * (1 + erf(h / np.sqrt(2)))
        x = norm(x + dense(h, p + "output.dense"), p + "output.LayerNorm")
    return x


def sentence_embedding(hidden, mask):
    """Masked mean over tokens, then L2 normalisation (sentence-transformers' pipeline)."""
    m = np.asarray(mask, np.float64)[..., None]
    pooled = (hidden * m).sum(1) / m.sum(1)
    return pooled / np.linalg.norm(pooled, axis=-1, keepdims=True)
