"""Tensor-core suite: int8 and half-precision inference on a GPU, beside torch on the same GPU.

- `qmatmul`: int8 x int8 -> int32 (`hal.qmatmul`, zero points 0) at 4096^3 and BERT-base's
  two feed-forward shapes at batch 128 x seq 128 (16384 x 3072 x 768, 16384 x 768 x 3072);
  `qmatmul[torch]`: `torch._int_mm` of the same operands on the device. Work: 2 M N K
  integer operations, so the rows' GFLOP/s are GOP/s (TOPS x 1000).
- `bert-base[fp32|int8|fp16|bf16]`: BERT-base (random weights at BERT's initial scale,
  seed 0) with mean pooling and L2 normalisation, sequence 128, batch 32, through
  `hal.jit`: FP32; `quant.quant_post_dynamic` (int8 weights per channel, dynamic uint8
  activations); `quant.half_precision` in float16 and bfloat16. Each is checked against
  the numpy float64 forward of the same weights (`frontends.nn.reference`) and records its
  cosine to it. Measured on cuda only: on a host CPU one call takes about ten seconds.

The `gpu` suite includes these rows; `reports.gpu_figures` puts their ratios (INT8/FP32,
FP16/FP32, hal's int8 GEMM / torch._int_mm) in the GPU figures table.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

import hal
from benchmarks.suites import science
from benchmarks.suites.int8 import cosine_quality
from benchmarks.workload import Case, NotMeasuredHere, Workload, only_on
from frontends import nn, quant
from frontends.nn import reference
from frontends.science import peers

QMATMUL_SHAPES = ((4096, 4096, 4096), (16384, 3072, 768), (16384, 768, 3072))
BERT_BASE = {"model_type": "bert", "vocab_size": 30522, "hidden_size": 768,
             "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072,
             "max_position_embeddings": 512, "type_vocab_size": 2, "layer_norm_eps": 1e-12,
             "hidden_act": "gelu"}
SEQ, BATCH = 128, 32
PRECISIONS = {"fp32": 1.0, "int8": 2500.0, "fp16": 250.0, "bf16": 2500.0}
"""Each precision's tolerance scale on float32's: quantization and rounding errors."""
ON = ("cuda",)
WHY = "BERT-base at batch 32 takes about ten seconds a call on a host CPU"


# -- int8 GEMM ----------------------------------------------------------------------------------
def _qmatmul_case(m: int, n: int, k: int):
    def build(dtype) -> Case:
        rng = np.random.default_rng(0)
        a = rng.integers(-128, 128, (m, k), dtype=np.int8)
        b = rng.integers(-128, 128, (k, n), dtype=np.int8)
        return Case([a, b], flops=2.0 * m * n * k, bytes=m * k + k * n + 4 * m * n, items=m)

    return build


def qmatmul_reference(a, b) -> np.ndarray:
    """a @ b exactly (float64 holds every int8 sum of these lengths), as int32."""
    return (np.asarray(a, np.float64) @ np.asarray(b, np.float64)).astype(np.int32)


def torch_peer(workload: Workload, fn) -> Workload:
    """`workload` computed by fn(torch tensors..., **options) with torch on the GPU under
    test (its data taken and given back through DLPack); skipped where torch would run on
    the host CPU."""

    def run(*tensors: hal.Tensor, **options) -> hal.Tensor:
        peer = peers.place("torch", tensors[0].device)
        if peer.device == "host CPU":
            raise NotMeasuredHere(f"{workload.name}[torch] is timed on the GPU under test; "
                                  "here torch would run on the host CPU")
        out = fn(*[peer.from_hal(t) for t in tensors], **options)
        return peer.to_hal(out, tensors[0].device)

    return dataclasses.replace(workload, name=f"{workload.name}[torch]",
                               params=science.peer_params("torch", workload.params), run=run,
                               facts=science.peer_facts("torch"))


def _int_mm(a, b):
    import torch

    return torch._int_mm(a, b)


def qmatmul_workloads() -> list[Workload]:
    """hal.qmatmul and torch._int_mm at each shape of QMATMUL_SHAPES."""
    out = []
    for m, n, k in QMATMUL_SHAPES:
        params = {"M": m, "N": n, "K": k, "a": "int8", "b": "int8"}
        base = Workload("qmatmul", params, ("int8",), _qmatmul_case(m, n, k), hal.qmatmul,
                        qmatmul_reference)
        out.append(only_on(base, ON, "an int8 GEMM of this size takes seconds on a CPU"))
        out.append(torch_peer(base, _int_mm))
    return out


# -- BERT-base ----------------------------------------------------------------------------------
@functools.cache
def bert_state() -> dict[str, np.ndarray]:
    """BERT-base's weights under HF's names, drawn at BERT's initial scale (seed 0)."""
    rng = np.random.default_rng(0)
    h, i = BERT_BASE["hidden_size"], BERT_BASE["intermediate_size"]
    shapes = {"embeddings.word_embeddings.weight": (BERT_BASE["vocab_size"], h),
              "embeddings.position_embeddings.weight": (BERT_BASE["max_position_embeddings"], h),
              "embeddings.token_type_embeddings.weight": (BERT_BASE["type_vocab_size"], h)}
    for n in range(BERT_BASE["num_hidden_layers"]):
        p = f"encoder.layer.{n}."
        for name, out_in in (("attention.self.query", (h, h)), ("attention.self.key", (h, h)),
                             ("attention.self.value", (h, h)), ("attention.output.dense", (h, h)),
                             ("intermediate.dense", (i, h)), ("output.dense", (h, i))):
            shapes[p + name + ".weight"], shapes[p + name + ".bias"] = out_in, out_in[:1]
    state = {k: (rng.standard_normal(s, np.float32) * np.float32(0.02)) for k, s in shapes.items()}
    for n in ["embeddings."] + [f"encoder.layer.{n}.{part}." for n in range(12)
                                for part in ("attention.output", "output")]:
        state[n + "LayerNorm.weight"] = np.ones(h, np.float32)
        state[n + "LayerNorm.bias"] = np.zeros(h, np.float32)
    return state


@functools.cache
def bert_model(device: hal.Device, precision: str):
    """The jitted BERT-base sentence encoder on `device` in `precision`."""
    model = nn.BertModel(nn.BertConfig.from_json(BERT_BASE), device=device)
    model.load_state_dict(nn.from_hf_state(bert_state()), strict=False)
    encoder = nn.SentenceEncoder(model.eval()).eval()
    chosen = {"fp32": lambda: encoder, "int8": lambda: quant.quant_post_dynamic(encoder),
              "fp16": lambda: quant.half_precision(encoder, hal.float16),
              "bf16": lambda: quant.half_precision(encoder, hal.bfloat16)}[precision]()
    return hal.jit(lambda ids, mask: chosen(ids, mask))


def _bert_case(dtype) -> Case:
    rng = np.random.default_rng(1)
    ids = rng.integers(1000, BERT_BASE["vocab_size"], (BATCH, SEQ))
    mask = np.ones((BATCH, SEQ), np.int64)
    mask[::2, SEQ // 2:] = 0  # every other sentence padded to half
    return Case([ids, mask], items=BATCH)


@functools.lru_cache(maxsize=1)
def _bert_reference(ids: bytes, mask: bytes) -> np.ndarray:
    shape = (BATCH, SEQ)
    out = reference.sentence_embeddings(
        {"state": bert_state(), "config": BERT_BASE}, np.frombuffer(ids, np.int64).reshape(shape),
        np.frombuffer(mask, np.int64).reshape(shape))
    out.flags.writeable = False
    return out


def bert_reference(ids, mask) -> np.ndarray:
    """The numpy float64 sentence embeddings of the same weights (kept for the four rows)."""
    return _bert_reference(np.asarray(ids, np.int64).tobytes(),
                           np.asarray(mask, np.int64).tobytes())


def _bert_run(precision: str):
    def run(ids: hal.Tensor, mask: hal.Tensor) -> hal.Tensor:
        return bert_model(ids.device, precision)(ids, mask)

    return run


def bert_workloads() -> list[Workload]:
    """BERT-base FP32, INT8, FP16 and BF16 through hal.jit (cuda only)."""
    params = {"model": "bert-base (random weights)", "seq": SEQ, "batch": BATCH}
    return [only_on(Workload(f"bert-base[{p}]", {**params, "precision": p}, ("float32",),
                             _bert_case, _bert_run(p), bert_reference, tolerance_scale=scale,
                             quality=cosine_quality), ON, WHY)
            for p, scale in PRECISIONS.items()]


def workloads() -> list[Workload]:
    """The int8 GEMMs beside torch._int_mm, then BERT-base in four precisions."""
    return qmatmul_workloads() + bert_workloads()
