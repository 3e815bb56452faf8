"""INT8 suite: a real BERT-family model (all-MiniLM-L6-v2) in FP32 and INT8, hal vs ONNX Runtime.

The published claim this suite sits beside: BERT INT8 780 -> 2300 samples/s (2.95x) at
99.2% of FP32 accuracy (V100). Here the model is all-MiniLM-L6-v2 (6 layers, width 384)
as sentence-transformers runs it (mean pooling, L2 normalisation), sequence length 128
(the shipped topic sentences padded to 128 tokens), batch 1, 8 and 32; items are
samples, so `items_per_s` is samples/s. Batch 1 is timed as MLPerf's single-stream
scenario (one query per sample, many queries: latency percentiles), the larger batches as
its offline scenario (throughput); the report's "MLPerf-style" section holds both.

- `minilm[fp32]`, `minilm[int8]` on every backend: the encoder through `hal.jit` (one
  graph; the ONNX Runtime backend runs it as one session), INT8 being
  `frontends.quant.quant_post_dynamic` (per-channel int8 weights, dynamic uint8
  activations) of the same model. Batch 32 is measured on the cpu, onnxruntime and cuda
  backends only (`LARGE_BATCH_BACKENDS`): one call takes 5-18 s on tvm and opencl (PoCL)
  here, and a measurement makes 14 calls; elsewhere it is skipped with that reason.
- `minilm[ort-fp32]`, `minilm[ort-int8]`: the peer, ONNX Runtime's CPU provider on the
  graph hal exports (`hal.onnx.export`, once per process and batch), INT8 by
  `onnxruntime.quantization.quantize_dynamic` (per-channel; on a CPU without VNNI the
  session widens u8 x s8 products to int16, `session.x64quantprecision`, see
  `frontends.quant.peers`), placed on the device under test (`benchmarks.ort_peer`: the
  CPU provider on the host CPU, the CUDA provider on an NVIDIA GPU where onnxruntime-gpu
  is installed); its facts name the provider and where it computed.

Every output is checked against a numpy FP32 forward of the same weights
(`frontends.nn.reference`); the INT8 ones with a tolerance for quantization, and each
records `cosine_min`/`cosine_mean` to that reference in its check's quality.

At batch 8 the workloads also record, in their facts (figures that are not timings,
gathered once after the timing):
- retention on the shipped sentences (frontends/nn/data/topics.tsv: 96 sentences, 8
  topics, padded to the longest), INT8 against FP32 of the same runtime: INT8's cosine
  to FP32 (min, mean), the nearest-neighbour agreement (the share of sentences whose
  nearest other sentence is the same under INT8 as under FP32) and the topic neighbour
  accuracy (the nearest other sentence shares the topic) in FP32 and INT8, for
  per-channel and per-tensor weights; `minilm[int8]` in hal on the cpu and onnxruntime
  backends (elsewhere the facts say why: the sentences in FP32 and two INT8 variants take
  minutes on tvm and opencl here), `minilm[ort-int8]` in ONNX Runtime (and, on a CPU
  without VNNI, its default u8 x s8 kernels, which sum in int16). The goal: agreement
  >= 99.2% and every cosine >= 0.99.
- the round trip on cpu, `minilm[fp32]` and `minilm[int8]`: the model exported
  (`hal.onnx.export`), checked by `onnx.checker`, run in ONNX Runtime and through
  `hal.onnx.load`, each output's max abs difference to the model run eagerly; the file's
  size and ops.

- `qmatmul` on every backend (`hal.qmatmul`, uint8 x int8 -> int32, a zero point of 128,
  512^3) and `qmatmul[ort]`, the peer: ONNX Runtime's MatMulInteger in a one-node session
  (`frontends.quant.peers.ort_matmul_integer`) on the host CPU (under the cpu backend and
  devices on host memory). Work:
  2 M N K integer operations. Every int8 workload's params name the product form chosen
  for this CPU (`hal.ops.quant.int8_product_form`), the CPU's int8 dot-product units and
  hal's thread count (HAL_THREADS).

The report's "INT8" section puts throughput (FP32, INT8 and their ratio per runtime,
hal's best INT8 against ONNX Runtime's), retention and the round trip side by side.
"""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path

import numpy as np

import hal
from benchmarks import ort_peer
from benchmarks.workload import Case, NotMeasuredHere, Workload
from frontends import nn, quant
from frontends.nn import finetune, reference
from hal.ops.quant import INT8_DOT_FLAGS, int8_product_form

SEQ = 128
BATCHES = (1, 8, 32)
LARGE_BATCH = 32
LARGE_BATCH_BACKENDS = ("cpu", "onnxruntime", "cuda")
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
def encoder(device: hal.Device, precision: str, per_channel: bool = True):
    """The MiniLM encoder on `device` through hal.jit: "fp32" or "int8" (per-channel
    weights, or per-tensor)."""
    chosen = model(device) if precision == "fp32" else int8_model(device, per_channel)
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


def ort_sessions(ids: np.ndarray, mask: np.ndarray, variants: dict[str, dict],
                 provider: str = ort_peer.CPU) -> dict:
    """ONNX Runtime sessions (on `provider`) of hal's exported FP32 MiniLM for inputs shaped
    like ids and mask, by variant: {"per_channel": bool} quantizes it with quantize_dynamic,
    {} keeps it FP32; "exact_int8" passes on to `quant.peers.ort_session`."""
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
                                                     exact_int8=variant.get("exact_int8"),
                                                     provider=provider)
    return sessions


@functools.cache
def _ort_sessions(batch: int, provider: str) -> dict:
    """ONNX Runtime sessions {"fp32", "int8"} of hal's exported MiniLM at (batch, SEQ) on
    `provider`."""
    t = tokens(batch)
    return ort_sessions(t["input_ids"], t["attention_mask"],
                        {"fp32": {}, "int8": {"per_channel": True}}, provider)


def _ort_run(precision: str):
    """ONNX Runtime's session on the device under test (`ort_peer.provider`): host inputs
    (the token ids) in, the embeddings out to the host."""

    def run(ids: hal.Tensor, mask: hal.Tensor) -> hal.Tensor:
        session = _ort_sessions(ids.shape[0], ort_peer.provider(ids.device))[precision]
        out = session.run(None, {"input_ids": ids.numpy(), "attention_mask": mask.numpy()})[0]
        return hal.asarray(out)

    return run


def _ort_facts(retention: bool, ids: hal.Tensor, mask: hal.Tensor) -> dict[str, float | str]:
    """ORT's provider and where it computed (`ort_peer.facts`), and its retention if asked."""
    return {**ort_peer.facts(ids.device), **(_ort_retention() if retention else {})}


def ort_label() -> str:
    """The installed onnxruntime's name and version (read without importing it)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"onnxruntime {version('onnxruntime')}"
    except PackageNotFoundError:
        return "onnxruntime (not installed)"


# -- retention and the round trip: facts of the batch-8 measurements ---------------------------
FACTS_BATCH = 8
AGREEMENT_GOAL = 0.992
COSINE_GOAL = 0.99
PER_CHANNEL = {"per-channel": True, "per-tensor": False}
# without VNNI, ONNX Runtime's default u8 x s8 kernels (int16 sums) beside its exact ones
ORT_INT16_VARIANT = "per-channel, u8 x s8 default (int16 sums)"


def nearest_other(embeddings: np.ndarray) -> np.ndarray:
    """For each row, the index of the most cosine-similar other row."""
    e = np.asarray(embeddings, np.float64)
    e = e / np.linalg.norm(e, axis=-1, keepdims=True)
    similarity = e @ e.T
    np.fill_diagonal(similarity, -np.inf)
    return similarity.argmax(axis=1)


def neighbour_agreement(fp32: np.ndarray, int8: np.ndarray) -> float:
    """The fraction of rows whose nearest other row is the same in both sets."""
    return float(np.mean(nearest_other(fp32) == nearest_other(int8)))


def topic_accuracy(embeddings: np.ndarray, topics) -> float:
    """The fraction of rows whose nearest other row has the same topic."""
    topics = np.asarray(topics)
    return float(np.mean(topics[nearest_other(embeddings)] == topics))


def retention(fp32: np.ndarray, int8: np.ndarray, topics) -> dict:
    """How much of FP32's embedding geometry INT8 keeps: cosine to FP32 (min, mean),
    nearest-neighbour agreement, topic accuracy in both, and whether the goal is met."""
    cos = cosines(int8, fp32)
    agreement = neighbour_agreement(fp32, int8)
    return {"cosine_min": float(cos.min()), "cosine_mean": float(cos.mean()),
            "neighbour_agreement": agreement,
            "topic_accuracy_fp32": topic_accuracy(fp32, topics),
            "topic_accuracy_int8": topic_accuracy(int8, topics),
            "goal_met": bool(agreement >= AGREEMENT_GOAL and cos.min() >= COSINE_GOAL)}


@functools.cache
def sentences() -> tuple[tuple[str, ...], dict[str, np.ndarray]]:
    """(topics, input_ids and attention_mask) of the shipped sentences, padded to the
    longest (at most SEQ tokens)."""
    rows = finetune.read_topics()
    t = nn.tokenize(tokenizer(), [s for _, s in rows], max_length=SEQ)
    return tuple(topic for topic, _ in rows), {k: t[k] for k in ("input_ids", "attention_mask")}


def retention_facts(fp32: np.ndarray, int8: dict[str, np.ndarray]) -> dict[str, float | str]:
    """Facts of one runtime's retention on the shipped sentences: its FP32 output against
    the numpy reference, then per INT8 variant `<variant>/<measure>` (see `retention`)."""
    topics, t = sentences()
    expected = embeddings_reference(t["input_ids"], t["attention_mask"])
    facts: dict[str, float | str] = {
        "sentences": len(topics), "topics": len(set(topics)),
        "tokens": int(t["input_ids"].shape[1]), "goal_agreement": AGREEMENT_GOAL,
        "goal_cosine": COSINE_GOAL, "topic_accuracy_reference": topic_accuracy(expected, topics),
        "fp32_cosine_min_to_reference": float(cosines(fp32, expected).min())}
    for variant, out in int8.items():
        kept = retention(fp32, out, topics)
        kept["goal_met"] = "met" if kept["goal_met"] else "not met"
        facts.update({f"{variant}/{measure}": value for measure, value in kept.items()})
    return facts


def _hal_retention(ids: hal.Tensor, mask: hal.Tensor) -> dict[str, float | str]:
    """hal's retention on the tensors' device (cpu and onnxruntime only: the sentences in
    FP32 and two INT8 variants take minutes on tvm and opencl here)."""
    device = ids.device
    if device.backend.name not in LARGE_BATCH_BACKENDS:
        raise NotMeasuredHere(f"retention is measured on {', '.join(LARGE_BATCH_BACKENDS)} "
                              f"only: the shipped sentences in FP32 and two INT8 variants "
                              f"take minutes on {device.backend.name} here")
    _, t = sentences()
    args = [hal.asarray(t[k], device=device) for k in ("input_ids", "attention_mask")]
    fp32 = encoder(device, "fp32")(*args).numpy()
    return retention_facts(fp32, {variant: encoder(device, "int8", per_channel)(*args).numpy()
                                  for variant, per_channel in PER_CHANNEL.items()})


def _ort_retention() -> dict[str, float | str]:
    """ONNX Runtime's retention: its FP32 session against its INT8 ones (per-channel,
    per-tensor and, without VNNI, its default int16-summing kernels)."""
    _, t = sentences()
    variants = {"fp32": {}, **{v: {"per_channel": pc} for v, pc in PER_CHANNEL.items()}}
    if not quant.peers.has_vnni():
        variants[ORT_INT16_VARIANT] = {"per_channel": True, "exact_int8": False}
    sessions = ort_sessions(t["input_ids"], t["attention_mask"], variants)
    feed = {"input_ids": t["input_ids"], "attention_mask": t["attention_mask"]}
    outputs = {name: session.run(None, feed)[0] for name, session in sessions.items()}
    return retention_facts(outputs.pop("fp32"), outputs)


def round_trip_facts(precision: str, ids: hal.Tensor, mask: hal.Tensor) -> dict[str, float | str]:
    """MiniLM in `precision` on cpu exported for these inputs (`hal.onnx.export`), checked
    by onnx.checker, run in ONNX Runtime and through `hal.onnx.load`: the file's size and
    ops, each output's max abs difference to hal eager (or why it could not run)."""
    import onnx

    if ids.device.backend.name != "cpu":
        raise NotMeasuredHere(f"the ONNX round trip exports and loads on the cpu backend, "
                              f"not {ids.device.name}")
    chosen = model(ids.device) if precision == "fp32" else int8_model(ids.device)
    eager = chosen(ids, mask).numpy()
    with tempfile.TemporaryDirectory(prefix="hal-int8-round-trip-") as directory:
        path = export_minilm(Path(directory) / "model.onnx", chosen, ids.numpy(), mask.numpy())
        onnx.checker.check_model(str(path))
        facts: dict[str, float | str] = {
            "onnx_mb": path.stat().st_size / 1e6, "checker": "passed",
            "onnx_ops": ", ".join(sorted({n.op_type for n in onnx.load(str(path)).graph.node}))}
        ort = quant.peers.ort_session(path).run(
            None, {"input_ids": ids.numpy(), "attention_mask": mask.numpy()})[0]
        facts["ort_max_abs_diff"] = float(np.max(np.abs(ort - eager)))
        try:
            loaded = hal.onnx.load(path)(ids, mask)[0].numpy()
            facts["hal_load_max_abs_diff"] = float(np.max(np.abs(loaded - eager)))
        except Exception as exc:  # the export's figures stand; the fact says why
            facts["hal_load_max_abs_diff"] = f"failed: {type(exc).__name__}: {exc}"
    return facts


def _hal_facts(precision: str):
    """The facts of hal's batch-8 workloads: the round trip on cpu, INT8's retention."""

    def facts(ids: hal.Tensor, mask: hal.Tensor) -> dict[str, float | str]:
        found = round_trip_facts(precision, ids, mask) if ids.device.backend.name == "cpu" \
            else {}
        if precision == "int8":
            found.update(_hal_retention(ids, mask))
        return found

    return facts


# -- qmatmul 512^3: hal's integer GEMM against ONNX Runtime's MatMulInteger ---------------------
QMATMUL_SIZE = 512
QMATMUL_A_ZERO = 128


def int8_params() -> dict[str, str | int]:
    """What decides int8 speed here: the product form chosen for this CPU, its int8
    dot-product units (VNNI, AMX) and hal's thread count."""
    units = sorted(INT8_DOT_FLAGS & hal.host.cpu_flags())
    return {"int8_form": int8_product_form(), "int8_units": ", ".join(units) or "none",
            "threads": hal.settings.threads}


def _qmatmul_case(size: int):
    def build(dtype) -> Case:
        rng = np.random.default_rng(0)
        a = rng.integers(0, 256, (size, size), dtype=np.uint8)
        b = rng.integers(-128, 128, (size, size), dtype=np.int8)
        return Case([a, b], flops=2.0 * size ** 3, items=size)

    return build


def _qmatmul(a: hal.Tensor, b: hal.Tensor) -> hal.Tensor:
    return hal.qmatmul(a, b, a_zero_point=QMATMUL_A_ZERO)


def _ort_qmatmul(a: hal.Tensor, b: hal.Tensor) -> hal.Tensor:
    ort_peer.on_host_cpu(a.device, "ONNX Runtime's MatMulInteger in this CPU's product form")
    out = quant.peers.ort_matmul_integer(a.numpy(), b.numpy(), QMATMUL_A_ZERO)
    return hal.asarray(out, device=a.device)


def qmatmul_reference(a, b) -> np.ndarray:
    """The numpy integer reference of the qmatmul workloads."""
    return hal.ops.spec("qmatmul").reference(np.asarray(a, np.uint8), np.asarray(b, np.int8),
                                             a_zero_point=QMATMUL_A_ZERO)


def qmatmul_workloads() -> list[Workload]:
    """hal.qmatmul 512^3 on every backend and ONNX Runtime's MatMulInteger on the host."""
    n = QMATMUL_SIZE
    params = {"M": n, "N": n, "K": n, "a": "uint8", "b": "int8",
              "a_zero_point": QMATMUL_A_ZERO, **int8_params()}
    return [Workload("qmatmul", params, ("uint8",), _qmatmul_case(n), _qmatmul,
                     qmatmul_reference),
            Workload("qmatmul[ort]", {**params, "peer": ort_label()}, ("uint8",),
                     _qmatmul_case(n), _ort_qmatmul, qmatmul_reference)]


def workloads() -> list[Workload]:
    """MiniLM FP32 and INT8 per batch size: on every backend, and ONNX Runtime on the host;
    at batch 8 with retention and the round trip in their facts; qmatmul 512^3."""
    out = qmatmul_workloads()
    for batch in BATCHES:
        params = {"model": "all-MiniLM-L6-v2", "seq": SEQ, "batch": batch, "claim": CLAIM}
        if batch >= LARGE_BATCH:
            params["backends"] = ", ".join(LARGE_BATCH_BACKENDS)
        for precision in ("fp32", "int8"):
            scale = 1.0 if precision == "fp32" else INT8_TOLERANCE_SCALE
            p = {**params, "precision": precision,
                 **(int8_params() if precision == "int8" else {})}
            facts = _hal_facts(precision) if batch == FACTS_BATCH else None
            out.append(Workload(f"minilm[{precision}]", p, ("float32",), _build(batch),
                                _hal_run(precision, batch), embeddings_reference,
                                tolerance_scale=scale, quality=cosine_quality, facts=facts,
                                single_stream=batch == 1))
            peer = {**params, "precision": precision, "peer": ort_label()}
            peer.pop("backends", None)
            if precision == "int8":
                peer.update(int8_params(), ort_x64quantprecision=not quant.peers.has_vnni())
            retention = batch == FACTS_BATCH and precision == "int8"
            facts = functools.partial(_ort_facts, retention)
            out.append(Workload(f"minilm[ort-{precision}]", peer, ("float32",), _build(batch),
                                _ort_run(precision), embeddings_reference,
                                tolerance_scale=scale, quality=cosine_quality, facts=facts,
                                single_stream=batch == 1))
    return out
