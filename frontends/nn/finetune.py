"""Train, then serve in INT8: fine-tune a sentence encoder on the shipped topic-pair task.

The task (`data/topics.tsv`, written for hal): 96 sentences in 8 topics (cooking, weather,
sport, computing, music, travel, health, finance). A pair of sentences is related (label 1)
when they share a topic, unrelated (0) otherwise; the first 9 sentences of each topic
train, the last 3 test. The loss is sentence-transformers' CosineSimilarityLoss: the mean
of (cos(u, v) - label)^2 over a batch of pairs. One config dict describes the run:

    python -m frontends.nn.finetune                      # all-MiniLM-L6-v2, 300 steps, cpu
    python -m frontends.nn.finetune --config run.json --device opencl:0

    result = finetune({"steps": 100, "optimizer": {...}})  # keys of DEFAULT_CONFIG
    result.losses, result.before, result.after               # loss per step, test metrics
    served = serve(result.encoder, result.config)            # quant_post_dynamic, jitted

The training step is one `hal.jit` graph of the loss and its gradient with the
parameters as inputs (`Layer.call_with`), so it is traced once and replayed; dropout is
off because a jitted function draws its random numbers once, at trace time.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import hal
from frontends import autograd as ag
from frontends import optim, quant
from hal import HalError, Tensor

from .bert import BertConfig, BertModel, SentenceEncoder, tokenize
from .pretrained import load_minilm

TOPICS = Path(__file__).with_name("data") / "topics.tsv"
TRAIN_PER_TOPIC = 9

DEFAULT_CONFIG = {
    "model": "all-MiniLM-L6-v2",  # or a BertConfig dict: a randomly initialised model
    "steps": 300,
    "batch_size": 16,
    "max_length": 24,
    "seed": 0,
    "freeze": ["bert.embeddings.word_embeddings"],  # the 30k-word table: see the take VJP
    "optimizer": {"optimizer": "AdamW", "learning_rate": 2e-5, "weight_decay": 0.01,
                  # total_steps defaults to the run's steps, warmup_steps to a tenth
                  "lr_scheduler": {"type": "LinearDecay"},
                  "grad_clip": 1.0},
    "quantization": {"weight_bits": 8, "weight_quantize_type": "channel_wise_abs_max"},
}


def read_topics(path: str | Path = TOPICS) -> list[tuple[str, str]]:
    """(topic, sentence) rows of a tab-separated file; '#' lines are comments."""
    rows = []
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split("\t")
        if len(parts) != 2:
            raise HalError(f"{path}:{number}: expected 'topic<TAB>sentence', got {line!r}")
        rows.append((parts[0], parts[1]))
    return rows


def split(rows: list[tuple[str, str]]) -> tuple[list, list]:
    """(train, test) rows: the first TRAIN_PER_TOPIC sentences of each topic train."""
    seen: dict[str, int] = {}
    train, test = [], []
    for topic, sentence in rows:
        seen[topic] = seen.get(topic, 0) + 1
        (train if seen[topic] <= TRAIN_PER_TOPIC else test).append((topic, sentence))
    return train, test


def all_pairs(rows: list[tuple[str, str]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair (i < j) of rows as index arrays and its label (1.0 same topic, else 0.0)."""
    i, j = np.triu_indices(len(rows), k=1)
    topics = np.array([t for t, _ in rows])
    return i, j, (topics[i] == topics[j]).astype(np.float32)


@dataclass
class Result:
    """A fine-tuning run: the trained encoder, loss per step and the test metrics."""

    encoder: SentenceEncoder
    config: dict
    losses: list[float] = field(default_factory=list)
    before: dict = field(default_factory=dict)
    after: dict = field(default_factory=dict)
    seconds_per_step: float = 0.0


def merged_config(config: Mapping | None) -> dict:
    """DEFAULT_CONFIG updated by `config`; unknown keys are a HalError listing the known."""
    config = dict(config or {})
    unknown = sorted(set(config) - set(DEFAULT_CONFIG))
    if unknown:
        raise HalError(f"finetune config: unknown key(s) {', '.join(unknown)}; the keys are "
                       f"{', '.join(DEFAULT_CONFIG)}")
    return {**DEFAULT_CONFIG, **config}


def build_encoder(config: Mapping, device) -> SentenceEncoder:
    """The pretrained MiniLM, or a random BertModel from a BertConfig dict, on device."""
    model = config["model"]
    if model == "all-MiniLM-L6-v2":
        encoder, _ = load_minilm(device=device)
        return encoder
    if isinstance(model, Mapping):
        from .pretrained import load_tokenizer, model_dir

        bert = BertModel(BertConfig.from_json(model), device=device, seed=config["seed"])
        return SentenceEncoder(bert, load_tokenizer(model_dir()))
    raise HalError(f"finetune config: model {model!r} is neither 'all-MiniLM-L6-v2' nor a "
                   "BertConfig dict")


def _with_total_steps(optimizer: Mapping, steps: int) -> dict:
    schedule = optimizer.get("lr_scheduler")
    if schedule is None:
        return dict(optimizer)
    filled = {"total_steps": steps, "warmup_steps": steps // 10, **schedule}
    return {**optimizer, "lr_scheduler": filled}


def pair_loss(encoder: SentenceEncoder) -> Callable:
    """loss(params, ids_a, mask_a, ids_b, mask_b, labels): CosineSimilarityLoss."""

    def loss(params, ids_a, mask_a, ids_b, mask_b, labels) -> Tensor:
        u = encoder.call_with(params, ids_a, mask_a)
        v = encoder.call_with(params, ids_b, mask_b)
        return hal.mean((hal.sum(u * v, axis=-1) - labels) ** 2)

    return loss


def evaluate(embeddings: np.ndarray, rows: list[tuple[str, str]]) -> dict:
    """Test metrics of unit embeddings: the mean cosine of related and unrelated pairs,
    pair accuracy at cosine 0.5, and how often a sentence's nearest neighbour shares its
    topic."""
    i, j, labels = all_pairs(rows)
    cos = np.sum(embeddings[i] * embeddings[j], axis=-1)
    sims = embeddings @ embeddings.T
    np.fill_diagonal(sims, -np.inf)
    topics = np.array([t for t, _ in rows])
    return {"cos_related": float(cos[labels == 1].mean()),
            "cos_unrelated": float(cos[labels == 0].mean()),
            "pair_accuracy": float(np.mean((cos > 0.5) == (labels == 1))),
            "neighbour_accuracy": float(np.mean(topics[sims.argmax(axis=1)] == topics))}


def embed(encoder: SentenceEncoder, rows, max_length: int) -> np.ndarray:
    """Unit embeddings of the rows' sentences, in eval mode."""
    return encoder.encode([s for _, s in rows], max_length=max_length)


def finetune(config: Mapping | None = None, *, device=None, encoder=None,
             log: Callable[[str], None] | None = print) -> Result:
    """Fine-tune on the topic pairs as `config` says (DEFAULT_CONFIG's keys) and return the
    encoder with its loss curve and the test metrics before and after."""
    config = merged_config(config)
    device = hal.device(device)
    encoder = encoder or build_encoder(config, device)
    if encoder.tokenizer is None:
        raise HalError("finetune: the encoder has no tokenizer (SentenceEncoder(bert, tokenizer))")
    if config["freeze"]:
        encoder.freeze(*config["freeze"])
    train, test = split(read_topics())
    result = Result(encoder, config, before=evaluate(embed(encoder, test, config["max_length"]),
                                                     test))
    tokens = tokenize(encoder.tokenizer, [s for _, s in train], config["max_length"])
    ids = tokens["input_ids"]
    mask = tokens["attention_mask"]
    i, j, labels = all_pairs(train)
    # balanced batches: half related pairs, half unrelated, drawn from the seed
    related, unrelated = np.flatnonzero(labels == 1), np.flatnonzero(labels == 0)
    rng = np.random.default_rng(config["seed"])
    optimizer = optim.from_config(_with_total_steps(config["optimizer"], config["steps"]))
    step = hal.jit(ag.value_and_grad(pair_loss(encoder)))
    params = encoder.trainable()
    encoder.eval()  # dropout off: see the module docstring
    half = config["batch_size"] // 2
    put = lambda a: hal.asarray(a, device=device)  # noqa: E731
    start = time.perf_counter()
    for n in range(config["steps"]):
        pick = np.concatenate([rng.choice(related, half), rng.choice(unrelated, half)])
        loss, grads = step(params, put(ids[i[pick]]), put(mask[i[pick]]), put(ids[j[pick]]),
                           put(mask[j[pick]]), put(labels[pick]))
        params = optimizer.step(params, grads)
        result.losses.append(float(loss))
        if log and (n % 25 == 0 or n == config["steps"] - 1):
            log(f"step {n:4d}  loss {result.losses[-1]:.4f}  lr {optimizer.learning_rate():.2e}")
    result.seconds_per_step = (time.perf_counter() - start) / max(config["steps"], 1)
    encoder.update(params)
    result.after = evaluate(embed(encoder, test, config["max_length"]), test)
    return result


def serve(encoder: SentenceEncoder, config: Mapping | None = None) -> SentenceEncoder:
    """The INT8 encoder for inference: `quant_post_dynamic` with the config's
    "quantization" dict, in eval mode (the same forward, so the same graph under hal.jit)."""
    config = merged_config(config)
    return quant.quant_post_dynamic(encoder, config["quantization"]).eval()


def main(argv=None) -> int:
    """Fine-tune, quantize, and print the loss curve and test metrics (fp32 and int8)."""
    parser = argparse.ArgumentParser(prog="python -m frontends.nn.finetune",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--config", help="a JSON file with keys of DEFAULT_CONFIG")
    parser.add_argument("--steps", type=int, help="override the config's steps")
    parser.add_argument("--device", default=None, help="a hal device, e.g. cpu or opencl:0")
    args = parser.parse_args(argv)
    config = json.loads(Path(args.config).read_text()) if args.config else {}
    if args.steps is not None:
        config["steps"] = args.steps
    result = finetune(config, device=args.device)
    int8 = serve(result.encoder, result.config)
    _, test = split(read_topics())
    served = evaluate(embed(int8, test, result.config["max_length"]), test)
    print(f"loss {result.losses[0]:.4f} -> {result.losses[-1]:.4f} over "
          f"{len(result.losses)} steps ({result.seconds_per_step * 1e3:.0f} ms/step)")
    for name, metrics in (("before", result.before), ("after", result.after),
                          ("int8", served)):
        print(f"{name:7s}" + "  ".join(f"{k} {v:.3f}" for k, v in metrics.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
