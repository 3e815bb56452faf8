"""INT8 suite: a real BERT-family model (all-MiniLM-L6-v2) in FP32 and INT8, hal vs ONNX Runtime.

The published claim this suite sits beside: BERT INT8 780 -> 2300 samples/s (2.95x) at
99.2% of FP32 accuracy (V100). Here the model is all-MiniLM-L6-v2 (6 layers, width 384)
as sentence-transformers runs it (mean pooling, L2 normalisation), sequence length 128
(the shipped topic sentences padded to 128 tokens), batch 1, 8 and 32; items are
samples, so `items_per_s` is samples/s.

- `minilm[fp32]`, `minilm[int8]` on every backend: the encoder through `hal.jit` (one
  graph; the ONNX Runtime backend runs it as one session), INT8 being
  `frontends.quant.quant_post_dynamic` (per-channel int8 weights, dynamic uint8
  activations) of the same model. Batch 32 is measured on the cpu and onnxruntime
  backends only (`LARGE_BATCH_BACKENDS`): one call takes 5-18 s on tvm and opencl (PoCL)
  here, and a measurement makes 14 calls; elsewhere it is skipped with that reason.
- `minilm[ort-fp32]`, `minilm[ort-int8]`: the peer, ONNX Runtime's CPU provider on the
  graph hal exports (`hal.onnx.export`, once per process and batch), INT8 by
  `onnxruntime.quantization.quantize_dynamic` (per-channel; on a CPU without VNNI the
  session widens u8 x s8 products to int16, `session.x64quantprecision`, see
  `frontends.quant.peers`), run on the host under the cpu backend only.

Every output is checked against a numpy FP32 forward of the same weights
(`frontends.nn.reference`); the INT8 ones with a tolerance for quantization, and each
records `cosine_min`/`cosine_mean` to that reference in its check's quality.
`python -m benchmarks.int8_figures` adds side-by-side throughput, the nearest-neighbour
agreement on the shipped sentence set and the export/import round trip.
"""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path

import numpy as np

import hal
from benchmarks.suites import science
from benchmarks.workload import Case, NotMeasuredHere, Workload
from frontends import nn, quant
from frontends.nn import finetune, reference

SEQ = 128
BATCHES = (1, 8, 32)
LARGE_BATCH = 32
LARGE_BATCH_BACKENDS = ("cpu", "onnxruntime")
CLAIM_SAMPLES_PER_S = {"fp32": 780.0, "int8": 2300.0}
CLAIM = (f"BERT INT8 {CLAIM_SAMPLES_PER_S['fp32']:.0f} -> {CLAIM_SAMPLES_PER_S['int8']:.0f} "
         f"samples/s ({CLAIM_SAMPLES_PER_S['int8'] / CLAIM_SAMPLES_PER_S['fp32']:.2f}x) at 99.2% "
         "of FP32 accuracy (V100)")
# INT8 embeddings differ from FP32 by quantization: a cosine of 0.99 is a normwise
# error of about 0.14; the check accepts up to 0.25 and the quality records the cosine.
INT8_TOLERANCE_SCALE = 2500.0


@functools.cache
def tokenizer():
    """all-MiniLM-L6-v2's tokenizer."""
    return nn.load_tokenizer(nn.model_dir())


@functools.cache
def tokens(batch: int, seq: int = SEQ) -> dict[str, np.ndarray]:
    """input_ids and attention_mask (batch, seq) of the first `batch` shipped sentences
    (repeated if there are fewer), padded to `seq` tokens."""
    texts = [s for _, s in finetune.read_topics()]
    encoded = nn.tokenize(tokenizer(), [texts[i % len(texts)] for i in range(batch)],
                          max_length=seq)
    pad = seq - encoded["input_ids"].shape[1]
    return {k: np.pad(encoded[k], ((0, 0), (0, pad))) for k in ("input_ids", "attention_mask")}


def _build(batch: int):
    def build(dtype) -> Case:
        t = tokens(batch)
        return Case([t["input_ids"], t["attention_mask"]], items=batch)

    return build


@functools.cache
def _weights() -> dict:
    return reference.load_weights(nn.model_dir())


def embeddings_reference(ids, mask) -> np.ndarray:
    """Unit embeddings of the numpy FP32 (float64) forward of all-MiniLM-L6-v2 (read-only;
    kept per input, as the four workloads of a batch share their inputs)."""
    ids, mask = np.asarray(ids, np.int64), np.asarray(mask, np.int64)
    return _reference(ids.tobytes(), mask.tobytes(), ids.shape)


@functools.lru_cache(maxsize=4)
def _reference(ids: bytes, mask: bytes, shape: tuple[int, ...]) -> np.ndarray:
    out = reference.sentence_embeddings(_weights(), np.frombuffer(ids, np.int64).reshape(shape),
                                        np.frombuffer(mask, np.int64).reshape(shape))
    out.flags.writeable = False
    return out


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine similarity of each row of `a` with the same row of `b`."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return np.sum(a * b, axis=-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))


def cosine_quality(out: np.ndarray, expected: np.ndarray) -> dict[str, float]:
    """{cosine_min, cosine_mean} of the output rows against the reference rows."""
    cos = cosines(out, expected)
    return {"cosine_min": float(cos.min()), "cosine_mean": float(cos.mean())}


@functools.cache
def model(device: hal.Device) -> nn.SentenceEncoder:
    """all-MiniLM-L6-v2 (FP32, eval mode) on `device`."""
    encoder, _ = nn.load_minilm(device=device)
    return encoder.eval()


def int8_model(device: hal.Device, per_channel: bool = True) -> nn.SentenceEncoder:
    """quant_post_dynamic of `model(device)` (int8 weights per channel or per tensor)."""
    return quant.quant_post_dynamic(model(device), per_channel=per_channel)


@functools.cache
def encoder(device: hal.Device, precision: str):
    """The MiniLM encoder on `device` through hal.jit: "fp32" or "int8" (per-channel)."""
    chosen = model(device) if precision == "fp32" else int8_model(device)
    return hal.jit(lambda ids, mask: chosen(ids, mask))


def _hal_run(precision: str, batch: int):
    def run(ids: hal.Tensor, mask: hal.Tensor) -> hal.Tensor:
        backend = ids.device.backend.name
        if batch >= LARGE_BATCH and backend not in LARGE_BATCH_BACKENDS:
            raise NotMeasuredHere(
                f"minilm batch {batch} is measured on {', '.join(LARGE_BATCH_BACKENDS)} only: "
                f"one call takes 5-18 s on tvm and opencl here (14 calls a measurement); "
                f"batches {', '.join(str(b) for b in BATCHES if b < LARGE_BATCH)} run on "
                f"{backend}")
        return encoder(ids.device, precision)(ids, mask)

    return run


def export_minilm(path, sentence_encoder, ids: np.ndarray, mask: np.ndarray) -> Path:
    """Write a MiniLM encoder's graph (FP32 or INT8) for inputs shaped like ids/mask
    (batch, seq) as ONNX (inputs input_ids and attention_mask, output embedding); returns
    the path."""
    device = sentence_encoder.bert.device
    example = [hal.asarray(ids, device=device), hal.asarray(mask, device=device)]
    hal.onnx.export(lambda i, m: sentence_encoder(i, m), *example, path=path,
                    input_names=["input_ids", "attention_mask"], output_names=["embedding"])
    return Path(path)


def ort_sessions(ids: np.ndarray, mask: np.ndarray, variants: dict[str, dict]) -> dict:
    """ONNX Runtime CPU sessions of hal's exported FP32 MiniLM for inputs shaped like ids and
    mask, by variant: {"per_channel": bool} quantizes it with quantize_dynamic, {} keeps it
    FP32; "exact_int8" passes on to `quant.peers.ort_session`."""
    sessions = {}
    with tempfile.TemporaryDirectory(prefix="hal-int8-") as directory:
        fp32 = export_minilm(Path(directory) / "fp32.onnx", model(hal.device("cpu")),
                                   ids, mask)
        files = {None: fp32}
        for name, variant in variants.items():
            per_channel = variant.get("per_channel")
            if per_channel not in files:
                files[per_channel] = quant.peers.ort_quantize_dynamic(
                    fp32, Path(directory) / f"int8-per-channel-{per_channel}.onnx",
                    per_channel=per_channel)
            sessions[name] = quant.peers.ort_session(files[per_channel],
                                                     exact_int8=variant.get("exact_int8"))
    return sessions


@functools.cache
def _ort_sessions(batch: int) -> dict:
    """ONNX Runtime CPU sessions {"fp32", "int8"} of hal's exported MiniLM at (batch, SEQ)."""
    t = tokens(batch)
    return ort_sessions(t["input_ids"], t["attention_mask"],
                        {"fp32": {}, "int8": {"per_channel": True}})


def _ort_run(precision: str):
    def run(ids: hal.Tensor, mask: hal.Tensor) -> hal.Tensor:
        science.on_host(ids.device)
        session = _ort_sessions(ids.shape[0])[precision]
        out = session.run(None, {"input_ids": ids.numpy(), "attention_mask": mask.numpy()})[0]
        return hal.asarray(out, device=ids.device)

    return run


def ort_label() -> str:
    """The installed onnxruntime's name and version (read without importing it)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"onnxruntime {version('onnxruntime')}"
    except PackageNotFoundError:
        return "onnxruntime (not installed)"


def workloads() -> list[Workload]:
    """MiniLM FP32 and INT8 per batch size: on every backend, and ONNX Runtime on the host."""
    out = []
    for batch in BATCHES:
        params = {"model": "all-MiniLM-L6-v2", "seq": SEQ, "batch": batch, "claim": CLAIM}
        if batch >= LARGE_BATCH:
            params["backends"] = ", ".join(LARGE_BATCH_BACKENDS)
        for precision in ("fp32", "int8"):
            scale = 1.0 if precision == "fp32" else INT8_TOLERANCE_SCALE
            p = {**params, "precision": precision}
            out.append(Workload(f"minilm[{precision}]", p, ("float32",), _build(batch),
                                _hal_run(precision, batch), embeddings_reference,
                                tolerance_scale=scale, quality=cosine_quality))
            peer = {**params, "precision": precision, "peer": ort_label()}
            peer.pop("backends", None)
            if precision == "int8":
                peer["ort_x64quantprecision"] = not quant.peers.has_vnni()
            out.append(Workload(f"minilm[ort-{precision}]", peer, ("float32",), _build(batch),
                                _ort_run(precision), embeddings_reference,
                                tolerance_scale=scale, quality=cosine_quality))
    return out
