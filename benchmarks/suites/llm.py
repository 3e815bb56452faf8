"""LLM suite: a Llama-style decoder's prefill and decode tokens/s per backend, beside torch
and numpy running the same model with the same weights; greedy samples of the project's
trained byte-level LM checked equal on every backend.

The model is `frontends.nn.llama`'s "small" config (random weights from seed 0, labelled
as such: vocabulary 512, width 256, 4 layers, 8 query and 2 key/value heads, SwiGLU
hidden 688, a cache of 256 positions), float32; its dims are in every workload's params.
Items are tokens, so `items_per_s` is tokens/s.

- `prefill[<mode>]`: a prompt of PROMPT tokens at batch 1 and 16 in one causal pass,
  writing the KV cache (a graph input, zeros); the output is the last position's logits.
- `decode[<mode>]`: one token per sequence at position PROMPT with the cache of a
  PROMPT-token prompt (inputs: ids, the position as an int64 tensor, each layer's k and
  v); keys are read from a window of `bucket(PROMPT + 1)` rows; the output is the logits.
  `decode[jit]` holds its own copy of the inputs' cache and donates it to each call,
  keeping the cache the call returns (a generation loop's way: the row is written in
  place where the backend can); `decode[eager]` computes the new cache from the inputs'
  and drops it. Each call writes the same row at the same position. Items are the batch:
  one token each.

Modes: `jit` (hal.jit: the cache and the position are graph inputs, one trace serves every
position in the window's bucket) on every backend; `eager` (op by op) on the cpu backend
only (elsewhere one eager op costs a device round trip per op and says little more);
`numpy` (`frontends.nn.llama_reference.ArrayLlama`, float32, the cache written in place)
as the floor peer and `torch` (the same code on torch, one thread, eager) on the host CPU,
skipped with how to install it where torch does not import. Every output is checked
against the numpy model in float64 before timing.

- `byte_lm_greedy[eager]`, `byte_lm_greedy[jit]`: the byte-level LM `hal train` trains
  (`frontends.parallel.language_model`, trained here once for BYTE_LM_STEPS steps on the
  shipped text, one rank, and kept under HAL_CACHE_DIR/llm), SAMPLE greedy bytes after a
  prompt on each backend by one step over a fixed window (the position a tensor), op by
  op and through hal.jit (traced once); checked equal, byte for byte, to
  `language_model.generate` on the cpu backend (a correctness row; items are bytes). The
  facts hold the text.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

import hal
from benchmarks.suites import science
from benchmarks.workload import Case, Workload, only_on
from frontends.nn import llama
from frontends.nn.llama_reference import ArrayLlama, numpy_ops, torch_ops
from frontends.parallel import language_model as lm
from frontends.science import peers

CONFIG_NAME = "small"
CONFIG = llama.CONFIGS[CONFIG_NAME]
PROMPT = 64
BATCHES = (1, 16)
WINDOW = llama.bucket(PROMPT + 1, CONFIG.max_seq)
HAL_MODES = ("jit", "eager")
PEERS = ("numpy", "torch")
EAGER_BACKENDS = ("cpu",)
LARGE_PREFILL_BACKENDS = ("cpu", "onnxruntime", "cuda")  # a call takes 1-2 s on tvm, opencl
BYTE_LM_STEPS = 200
BYTE_LM_PROMPT = "The memory "
SAMPLE = 32


def config_params(config: llama.LlamaConfig = CONFIG) -> dict:
    """The model's dims as workload params."""
    return {"config": CONFIG_NAME, "weights": "random (seed 0)", "vocab": config.vocab_size,
            "dim": config.dim, "layers": config.n_layers, "heads": config.n_heads,
            "kv_heads": config.n_kv_heads, "hidden": config.hidden_dim,
            "max_seq": config.max_seq}


@functools.cache
def weights() -> dict[str, np.ndarray]:
    """The float32 weights of the seeded model (drawn on the cpu once)."""
    model = llama.Llama(CONFIG, seed=0, device="cpu")
    return {k: v.numpy() for k, v in model.state_dict().items()}


@functools.cache
def hal_model(device: hal.Device) -> llama.Llama:
    """The model with weights() on `device`."""
    model = llama.Llama(CONFIG, seed=0, device="cpu").eval()
    model.load_state_dict(weights())
    return model.to(device)


@functools.cache
def reference_model() -> ArrayLlama:
    """The numpy model in float64."""
    return ArrayLlama(weights(), CONFIG)


def flops_per_token(context: int) -> float:
    """2 * the weights a token multiplies, plus its attention over `context` keys."""
    c = CONFIG
    matmul = c.parameters() - c.vocab_size * c.dim - (2 * c.n_layers + 1) * c.dim
    return 2.0 * matmul + 4.0 * c.n_layers * c.dim * context


def prompt_ids(batch: int, length: int = PROMPT) -> np.ndarray:
    """Seeded token ids (batch, length)."""
    return np.random.default_rng(batch).integers(0, CONFIG.vocab_size, (batch, length))


# -- prefill ------------------------------------------------------------------------------
def prefill_build(batch: int):
    def build(dtype) -> Case:
        tokens = batch * PROMPT
        return Case([prompt_ids(batch)], flops=tokens * flops_per_token(PROMPT / 2),
                    items=tokens)

    return build


def prefill_reference(ids: np.ndarray) -> np.ndarray:
    """Last-position logits of the float64 numpy model."""
    return reference_model().forward(ids)[0][:, -1]


def prefill_run(mode: str):
    @functools.cache
    def made(device: hal.Device, batch: int):
        model = hal_model(device)

        def step(ids, cache):
            return model.prefill(ids, cache)[0]

        return (hal.jit(step) if mode == "jit" else step), model.new_cache(batch)

    def run(ids: hal.Tensor) -> hal.Tensor:
        step, cache = made(ids.device, ids.shape[0])
        return step(ids, cache)

    return run


# -- decode -------------------------------------------------------------------------------
@functools.cache
def decode_inputs(batch: int) -> list[np.ndarray]:
    """ids (batch, 1) at position PROMPT, the position (1,), then each layer's k and v of
    the prompt's cache (from the float64 numpy model, in float32)."""
    ids = prompt_ids(batch, PROMPT + 1)
    ref = reference_model()
    cache = ref.new_cache(batch)
    ref.prefill(ids[:, :PROMPT], cache)
    flat = [a.astype(np.float32) for kv in cache for a in kv]
    return [ids[:, PROMPT:], np.array([PROMPT], np.int64), *flat]


def decode_build(batch: int):
    def build(dtype) -> Case:
        return Case(list(decode_inputs(batch)), flops=batch * flops_per_token(PROMPT + 1),
                    items=batch)

    return build


def pairs(flat) -> list:
    """[k0, v0, k1, v1, ...] -> [(k0, v0), (k1, v1), ...]."""
    return [(flat[i], flat[i + 1]) for i in range(0, len(flat), 2)]


def decode_reference(ids, position, *flat) -> np.ndarray:
    """Logits of the float64 numpy model's decode step on a copy of the given cache."""
    cache = [(np.array(k), np.array(v)) for k, v in pairs(flat)]
    return reference_model().decode(ids, int(np.asarray(position)[0]), cache)


def decode_run(mode: str):
    @functools.cache
    def made(device: hal.Device):
        model = hal_model(device)

        def step(ids, position, cache):
            return model.decode(ids, position, cache, WINDOW)

        return hal.jit(step, donate_argnums=(2,)) if mode == "jit" else step

    held: dict = {}  # device, batch -> the cache [jit] donates and gets back

    def run(ids: hal.Tensor, position: hal.Tensor, *flat: hal.Tensor) -> hal.Tensor:
        step = made(ids.device)
        if mode != "jit":
            return step(ids, position, tuple(pairs(flat)))[0]
        key = (ids.device, ids.shape[0])
        if key not in held:
            held[key] = tuple(pairs([hal.asarray(a.numpy(), device=ids.device, copy=True)
                                     for a in flat]))
        logits, held[key] = step(ids, position, held[key])
        return logits

    return run


# -- peers --------------------------------------------------------------------------------
def peer_model(name: str, device: hal.Device) -> ArrayLlama:
    """The model on the arrays of peer `name` placed on the device under test (float32;
    not placed: skipped with the reason)."""
    peer = peers.place(name, device)
    if name == "numpy":
        return ArrayLlama(weights(), CONFIG, numpy_ops(np.float32))
    import torch

    where = "cuda" if "CUDA" in peer.label else "cpu"
    return ArrayLlama(weights(), CONFIG, torch_ops(torch, device=where))


def peer_prefill_run(name: str):
    @functools.cache
    def made(device: hal.Device, batch: int):
        model = peer_model(name, device)
        return model, model.new_cache(batch)

    def run(ids: hal.Tensor) -> hal.Tensor:
        model, cache = made(ids.device, ids.shape[0])
        return hal.asarray(model.o.numpy(model.prefill(ids.numpy(), cache)))

    return run


def peer_decode_run(name: str):
    @functools.cache
    def made(device: hal.Device, batch: int):
        """The model and its cache, taken from the inputs once (each call writes the same
        row at the same position again)."""
        model = peer_model(name, device)
        flat = decode_inputs(batch)[2:]
        return model, [(model.o.asarray(k), model.o.asarray(v)) for k, v in pairs(flat)]

    def run(ids: hal.Tensor, position: hal.Tensor, *flat: hal.Tensor) -> hal.Tensor:
        model, cache = made(ids.device, ids.shape[0])
        logits = model.decode(ids.numpy(), PROMPT, cache)
        return hal.asarray(model.o.numpy(logits))

    return run


# -- the byte-level LM --------------------------------------------------------------------
def byte_lm_path() -> Path:
    """Where the trained byte-level LM is kept."""
    return hal.settings.cache_dir / "llm" / f"byte_lm-{BYTE_LM_STEPS}-steps.safetensors"


@functools.cache
def trained_byte_lm() -> lm.LanguageModel:
    """The byte-level LM trained for BYTE_LM_STEPS steps (`hal train`'s defaults, one
    rank), trained once and kept under HAL_CACHE_DIR/llm."""
    path = byte_lm_path()
    if not path.is_file():
        from mpi4py import MPI

        from frontends.parallel.trainer import Trainer

        with Trainer({"steps": BYTE_LM_STEPS, "sample": 0}, MPI.COMM_SELF) as trainer:
            for ids, targets in trainer.batches(BYTE_LM_STEPS):
                trainer.step(ids, targets)
            trainer.model.update(trainer.full_params())
            path.parent.mkdir(parents=True, exist_ok=True)
            trainer.model.save(path)
    model = lm.LanguageModel()
    model.load(path)
    return model.eval()


def byte_lm_build(dtype) -> Case:
    return Case([np.frombuffer(BYTE_LM_PROMPT.encode(), np.uint8).astype(np.int64)[None]],
                items=SAMPLE)


def window_step(model: lm.LanguageModel):
    """The byte LM's greedy step over a fixed window: ids (1, seq) (zeros after the text;
    causal, so they do not change what comes before) and the last text position (1,) ->
    the next byte (1,). The same shapes every step: traced once under hal.jit, and a
    backend that compiles each eager op for its shapes compiles them once."""

    def step(window, position):
        logits = hal.take(model(window)[0], position, axis=0)
        return hal.argmax(logits, axis=-1)

    return step


def byte_lm_sample(step, model: lm.LanguageModel, prompt: np.ndarray) -> np.ndarray:
    """The prompt's bytes (1, t) followed by SAMPLE greedy bytes of window_step's `step`."""
    device = model.head.weight.device
    ids = list(prompt[0])
    window = np.zeros((1, model.seq), np.int64)
    window[0, :len(ids)] = ids
    for _ in range(SAMPLE):
        position = hal.asarray(np.array([len(ids) - 1], np.int64), device=device)
        token = int(step(hal.asarray(window, device=device), position).numpy()[0])
        window[0, len(ids)] = token
        ids.append(token)
    return np.array([ids], np.int64)


@functools.cache
def byte_lm_on(device: hal.Device) -> lm.LanguageModel:
    """The trained byte LM on `device` (a copy)."""
    trained_byte_lm()  # trained and kept the first time
    model = lm.LanguageModel()
    model.load(byte_lm_path())
    return model.eval().to(device)


def byte_lm_run(mode: str):
    @functools.cache
    def made(device: hal.Device):
        model = byte_lm_on(device)
        step = window_step(model)
        return model, (hal.jit(step) if mode == "jit" else step)

    def run(prompt: hal.Tensor) -> hal.Tensor:
        model, step = made(prompt.device)
        return hal.asarray(byte_lm_sample(step, model, prompt.numpy()))

    return run


def byte_lm_reference(prompt: np.ndarray) -> np.ndarray:
    """The trained model's greedy sample by language_model.generate (eager, cpu backend)."""
    text = bytes(np.asarray(prompt)[0].astype(np.uint8)).decode()
    sample = lm.generate(trained_byte_lm(), text, SAMPLE).encode()
    return np.frombuffer(sample, np.uint8).astype(np.int64)[None]


def byte_lm_facts(run):
    """The sample `run` gives, as text, and how the checkpoint was made."""

    def facts(prompt: hal.Tensor) -> dict[str, str]:
        out = run(prompt).numpy()[0]
        return {"sample": bytes(out.astype(np.uint8)).decode("utf-8", errors="replace"),
                "checkpoint": f"hal train defaults, {BYTE_LM_STEPS} steps, one rank"}

    return facts


# -- the suite ----------------------------------------------------------------------------
def workloads() -> list[Workload]:
    """prefill and decode at each batch in every mode and peer, then the byte-LM rows."""
    out = []
    f32 = ("float32",)
    for batch in BATCHES:
        for kind, build, reference, hal_run, peer_run, extra in (
                ("prefill", prefill_build(batch), prefill_reference, prefill_run,
                 peer_prefill_run, {"prompt": PROMPT}),
                ("decode", decode_build(batch), decode_reference, decode_run, peer_decode_run,
                 {"position": PROMPT, "window": WINDOW})):
            params = {**config_params(), "batch": batch, **extra}
            for mode in HAL_MODES:
                work = Workload(f"{kind}[{mode}]", {**params, "mode": mode}, f32, build,
                                hal_run(mode), reference)
                if mode == "eager":
                    work = only_on(work, EAGER_BACKENDS, "one eager op costs a device round "
                                   "trip elsewhere; [jit] is the backend's figure")
                elif kind == "prefill" and batch > 1:
                    work = only_on(work, LARGE_PREFILL_BACKENDS, "one call takes 1-2 s on tvm "
                                   "and opencl (PoCL) here and a measurement makes 10 or more")
                out.append(work)
            for name in PEERS:
                out.append(Workload(f"{kind}[{name}]",
                                    science.peer_params(name, {**params, "mode": name}), f32,
                                    build, peer_run(name), reference,
                                    facts=science.peer_facts(name)))
    for mode in HAL_MODES:
        run = byte_lm_run(mode)
        out.append(Workload(f"byte_lm_greedy[{mode}]",
                            {"prompt": BYTE_LM_PROMPT, "bytes": SAMPLE, "mode": mode,
                             "train_steps": BYTE_LM_STEPS}, f32, byte_lm_build,
                            run, byte_lm_reference, tolerance_scale=0.0,
                            facts=byte_lm_facts(run)))
    return out
