"""Llama: the cached decode against the full forward, GQA against MHA and a numpy Llama,
greedy samples eager against jit and across backends, one jitted step per window."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import hal
from frontends.nn import llama
from frontends.nn.llama_reference import ArrayLlama

TINY = llama.CONFIGS["tiny"]
BACKENDS = sorted(set(hal.available_backends()) - {"null"})


def numpy_llama(model: llama.Llama, ids: np.ndarray) -> np.ndarray:
    """Logits of the full causal forward of the numpy Llama with the model's weights."""
    weights = {k: v.numpy() for k, v in model.state_dict().items()}
    return ArrayLlama(weights, model.config).forward(ids)[0]


@pytest.fixture
def ids():
    """Two seeded sequences of 12 ids."""
    return np.random.default_rng(7).integers(0, TINY.vocab_size, (2, 12))


@pytest.fixture
def model64():
    """The tiny config in float64 on the cpu."""
    return llama.Llama(TINY, dtype=hal.float64, seed=0).eval()


@pytest.mark.parametrize("n_kv_heads", [1, 2, 4])
def test_forward_matches_the_numpy_llama(ids, n_kv_heads):
    config = dataclasses.replace(TINY, n_kv_heads=n_kv_heads)
    model = llama.Llama(config, dtype=hal.float64, seed=1)
    np.testing.assert_allclose(model(ids).numpy(), numpy_llama(model, ids), rtol=1e-12,
                               atol=1e-12)


@pytest.mark.parametrize("window", [None, 16])
def test_cached_decode_equals_the_full_forward(model64, ids, window):
    full = model64(ids).numpy()
    last, cache = model64.prefill(ids[:, :5], model64.new_cache(2))
    np.testing.assert_allclose(last.numpy(), full[:, 4], rtol=1e-12, atol=1e-12)
    for p in range(5, 12):
        last, cache = model64.decode(ids[:, p:p + 1], p, cache, window=window)
        np.testing.assert_allclose(last.numpy(), full[:, p], rtol=1e-12, atol=1e-12)
    written = cache[0][0].numpy()
    assert np.abs(written[:, :, :12]).min() > 0 and not written[:, :, 12:].any()


def test_grouped_query_attention_equals_mha_with_repeated_heads(ids):
    gqa = llama.Llama(TINY, dtype=hal.float64, seed=2)
    mha = llama.Llama(dataclasses.replace(TINY, n_kv_heads=TINY.n_heads), dtype=hal.float64,
                      seed=3)
    group, hd = TINY.n_heads // TINY.n_kv_heads, TINY.head_dim
    state = {}
    for name, value in gqa.state_dict().items():
        value = value.numpy()
        if name.endswith(("attention.key.weight", "attention.value.weight")):
            value = np.repeat(value.reshape(TINY.dim, TINY.n_kv_heads, hd), group, axis=1)
            value = value.reshape(TINY.dim, TINY.dim)
        state[name] = value
    mha.load_state_dict(state)
    np.testing.assert_allclose(mha(ids).numpy(), gqa(ids).numpy(), rtol=1e-12, atol=1e-12)


def test_greedy_samples_equal_eager_and_jit(model64, ids):
    eager = llama.generate(model64, ids[:, :4], 8)
    assert eager.shape == (2, 12) and (eager[:, :4] == ids[:, :4]).all()
    reference = np.concatenate([ids[:, :4], np.zeros((2, 8), np.int64)], axis=1)
    for p in range(4, 12):  # each sample is the argmax of the full forward over the prefix
        reference[:, p] = numpy_llama(model64, reference[:, :p])[:, -1].argmax(-1)
    np.testing.assert_array_equal(eager, reference)
    np.testing.assert_array_equal(llama.generate(model64, ids[:, :4], 8, jit=True), eager)


def test_jitted_decode_traces_once_per_window(model64, ids):
    steps = llama.greedy_steps(model64, jit=True)
    prefill, decode = steps
    out = llama.generate(model64, ids[:, :4], 20, steps=steps)  # positions 4..22: 16 and 32
    assert (prefill.traces, decode.traces) == (1, 2)
    again = llama.generate(model64, ids[:, :4], 20, steps=steps)
    np.testing.assert_array_equal(again, out)
    assert (prefill.traces, decode.traces) == (1, 2)
    assert [llama.bucket(n, 64) for n in (1, 16, 17, 33, 64)] == [16, 16, 32, 64, 64]


def test_jitted_decode_writes_the_donated_cache_in_place(model64, ids):
    _, decode = llama.greedy_steps(model64, jit=True)
    cache = model64.new_cache(2)
    where = hal.asarray(np.array([3], np.int64))
    token = hal.asarray(ids[:, 3:4])
    before = [t.native for kv in cache for t in kv]
    want = model64.decode(token, 3, model64.new_cache(2), 16)[1]
    _, written = decode(token, where, cache, 16)
    graph = decode.graph(token, where, written, 16)
    assert graph.op_counts()["dynamic_update_slice"] == 2 * TINY.n_layers
    assert "where" not in {graph.nodes[r[1]].op for r in graph.outputs[1:]}
    assert all(t.native is b for t, b in zip([t for kv in written for t in kv], before,
                                             strict=True))  # the same memory, written
    for got, expected in zip(written, want, strict=True):
        for g, e in zip(got, expected, strict=True):
            np.testing.assert_array_equal(g.numpy(), e.numpy())
    with pytest.raises(hal.HalError, match="argument 2 was donated"):
        cache[0][0].numpy()


@pytest.mark.parametrize("backend", BACKENDS)
def test_greedy_samples_equal_on_every_backend(ids, backend):
    model = llama.Llama(TINY, seed=4).eval()
    want = llama.generate(model, ids[:, :4], 6)
    model.to(hal.device(backend))
    hal.settings.fallback = "error"
    try:
        eager = llama.generate(model, ids[:, :4], 6)
    except hal.FallbackRefused as e:
        pytest.skip(f"{backend} lacks an op the decoder needs: {e}")
    np.testing.assert_array_equal(eager, want)
    np.testing.assert_array_equal(llama.generate(model, ids[:, :4], 6, jit=True), want)


def test_bad_input_is_a_clear_error(model64, ids):
    with pytest.raises(hal.HalError, match="n_kv_heads 3 must divide n_heads 4"):
        dataclasses.replace(TINY, n_kv_heads=3)
    with pytest.raises(hal.ShapeError, match="exceed max_seq 64"):
        llama.generate(model64, ids, 60)
    with pytest.raises(hal.ShapeError, match="must be \\(batch, t\\)"):
        model64(ids[0])
    with pytest.raises(hal.ShapeError, match=r"position 20 must be in 0\.\.15"):
        model64.decode(ids[:, :1], 20, model64.new_cache(2), window=16)
    with pytest.raises(hal.ShapeError, match=r"2 \(k, v\) pairs of shape \(2, 2, 64, 16\); "
                       r"make one with new_cache\(2\)"):
        model64.prefill(ids, model64.new_cache(1))


def test_named_shapes():
    assert llama.CONFIGS["llama-3.2-1b"].parameters() == pytest.approx(1.5e9, rel=0.05)
    assert llama.CONFIGS["llama-3-8b"].parameters() == pytest.approx(8.0e9, rel=0.05)


def test_the_numpy_llama_decodes_in_place_as_its_forward(model64, ids):
    weights = {k: v.numpy() for k, v in model64.state_dict().items()}
    ref = ArrayLlama(weights, TINY)
    full = ref.forward(ids)[0]
    cache = ref.new_cache(2)
    np.testing.assert_allclose(ref.prefill(ids[:, :5], cache), full[:, 4], rtol=1e-12)
    for p in range(5, 12):
        np.testing.assert_allclose(ref.decode(ids[:, p:p + 1], p, cache), full[:, p],
                                   rtol=1e-12, atol=1e-12)
    hal_cache = model64.prefill(ids, model64.new_cache(2))[1]
    np.testing.assert_allclose(cache[1][1], hal_cache[1][1].numpy(), rtol=1e-12, atol=1e-12)
