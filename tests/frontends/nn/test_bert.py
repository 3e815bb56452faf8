"""BertModel: HF names, forward against the numpy BERT, every backend, gradients, jit."""

from __future__ import annotations

import json

import numpy as np
import pytest

import hal
from frontends import autograd as ag
from frontends import nn

TINY = {"model_type": "bert", "vocab_size": 20, "hidden_size": 16, "num_hidden_layers": 2,
        "num_attention_heads": 2, "intermediate_size": 32, "max_position_embeddings": 8,
        "type_vocab_size": 2, "layer_norm_eps": 1e-12, "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1, "hidden_act": "gelu", "architectures": ["x"]}
IDS = np.array([[1, 5, 7, 2, 0], [1, 9, 3, 4, 2]])
MASK = np.array([[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]])
TYPES = np.array([[0, 0, 0, 1, 1], [0, 0, 1, 1, 1]])
BACKENDS = sorted(set(hal.available_backends()) - {"null"})


def hf_state(config, rng, dtype=np.float32):
    """Random weights under HF BertModel's names (Linear weights (out, in)), with the extras a
    checkpoint carries (pooler, position ids)."""
    h, i = config["hidden_size"], config["intermediate_size"]
    shapes = {"embeddings.word_embeddings.weight": (config["vocab_size"], h),
              "embeddings.position_embeddings.weight": (config["max_position_embeddings"], h),
              "embeddings.token_type_embeddings.weight": (config["type_vocab_size"], h),
              "embeddings.LayerNorm.weight": (h,), "embeddings.LayerNorm.bias": (h,),
              "pooler.dense.weight": (h, h), "pooler.dense.bias": (h,)}
    for n in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{n}."
        for name, out_in in (("attention.self.query", (h, h)), ("attention.self.key", (h, h)),
                             ("attention.self.value", (h, h)),
                             ("attention.output.dense", (h, h)),
                             ("intermediate.dense", (i, h)), ("output.dense", (h, i))):
            shapes[p + name + ".weight"], shapes[p + name + ".bias"] = out_in, out_in[:1]
        for name in ("attention.output.LayerNorm", "output.LayerNorm"):
            shapes[p + name + ".weight"] = shapes[p + name + ".bias"] = (h,)
    state = {k: (rng.standard_normal(s) * 0.5 + (k.endswith("LayerNorm.weight"))).astype(dtype)
             for k, s in shapes.items()}
    state["embeddings.position_ids"] = np.arange(config["max_position_embeddings"])[None]
    return state


def tiny_bert(config, state, device="cpu", dtype=hal.float32):
    model = nn.BertModel(nn.BertConfig.from_json(config), dtype=dtype, device=device, seed=0)
    model.load_state_dict(nn.from_hf_state(state))
    return model.eval()


def test_forward_matches_the_numpy_bert(rng, numpy_bert):
    state = hf_state(TINY, rng)
    model = tiny_bert(TINY, state)
    want = numpy_bert[0](state, TINY, IDS, MASK, TYPES)
    np.testing.assert_allclose(model(IDS, MASK, TYPES).numpy(), want, atol=2e-5)
    no_mask = numpy_bert[0](state, TINY, IDS)
    np.testing.assert_allclose(model(hal.asarray(IDS)).numpy(), no_mask, atol=2e-5)


def test_hf_names_map_to_hal_names(rng):
    state = hf_state(TINY, rng)
    mapped = nn.from_hf_state(state)
    assert set(mapped) == set(nn.BertModel(nn.BertConfig.from_json(TINY)).state_dict())
    np.testing.assert_array_equal(mapped["layers.1.mlp.fc1.weight"],
                                  state["encoder.layer.1.intermediate.dense.weight"].T)
    old_style = {("bert." + k).replace("LayerNorm.weight", "LayerNorm.gamma")
                 .replace("LayerNorm.bias", "LayerNorm.beta"): v for k, v in state.items()}
    assert nn.from_hf_state(old_style).keys() == mapped.keys()


def test_config_from_json(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(TINY))
    config = nn.BertConfig.from_json(path)
    assert config == nn.BertConfig.from_json(TINY)
    assert (config.hidden_size, config.layer_norm_eps, config.hidden_act) == (16, 1e-12, "gelu")
    with pytest.raises(hal.HalError, match="hidden_act 'mish' is not supported; use one of"):
        nn.BertConfig.from_json({**TINY, "hidden_act": "mish"})
    with pytest.raises(hal.HalError, match="model_type 'roberta'"):
        nn.BertConfig.from_json({**TINY, "model_type": "roberta"})
    with pytest.raises(hal.HalError, match="cannot read"):
        nn.BertConfig.from_json(tmp_path / "missing.json")


def test_bad_inputs_are_named(rng):
    model = tiny_bert(TINY, hf_state(TINY, rng))
    with pytest.raises(hal.ShapeError, match=r"input_ids of shape \(5,\) must be"):
        model(IDS[0])
    with pytest.raises(hal.ShapeError, match="exceeds max_position_embeddings 8"):
        model(np.ones((1, 9), np.int64))


def test_pooling_matches_numpy(rng, numpy_bert):
    hidden = rng.standard_normal((2, 5, 16)).astype(np.float32)
    got = nn.normalize(nn.mean_pool(hal.asarray(hidden), MASK)).numpy()
    np.testing.assert_allclose(got, numpy_bert[1](hidden, MASK), atol=1e-6)
    np.testing.assert_allclose(nn.mean_pool(hal.asarray(hidden)).numpy(), hidden.mean(1),
                               atol=1e-6)


def test_dropout_in_training_repeats_from_the_seed(rng):
    state = hf_state(TINY, rng)
    a, b = tiny_bert(TINY, state).train(), tiny_bert(TINY, state).train()
    eval_out = tiny_bert(TINY, state)(IDS, MASK).numpy()
    out_a = a(IDS, MASK).numpy()
    np.testing.assert_array_equal(out_a, b(IDS, MASK).numpy())
    assert np.abs(out_a - eval_out).max() > 1e-2


@pytest.mark.parametrize("backend", BACKENDS)
def test_tiny_bert_on_every_backend_matches_cpu(rng, backend):
    config = {**TINY, "num_hidden_layers": 1}
    state = hf_state(config, rng)
    want = tiny_bert(config, state)(IDS, MASK, TYPES).numpy()
    got = tiny_bert(config, state, device=backend)(IDS, MASK, TYPES)
    assert got.device.backend.name == backend
    np.testing.assert_allclose(got.numpy(), want, atol=1e-4)


def test_jit_with_parameters_as_inputs_matches_eager(rng):
    model = tiny_bert(TINY, hf_state(TINY, rng))
    params = model.parameters()
    step = hal.jit(lambda p, ids, mask: model.call_with(p, ids, mask))
    ids, mask = hal.asarray(IDS), hal.asarray(MASK)
    np.testing.assert_allclose(step(params, ids, mask).numpy(), model(ids, mask).numpy(),
                               atol=1e-5)


def test_gradients_reach_every_parameter_and_match_finite_differences(rng):
    config = {**TINY, "num_hidden_layers": 1}
    model = tiny_bert(config, hf_state(config, rng, np.float64), dtype=hal.float64)
    weights = hal.asarray(rng.standard_normal((2, 16)))
    encoder = nn.SentenceEncoder(model).eval()

    def loss(params):
        return hal.sum(encoder.call_with(params, IDS, MASK, TYPES) * weights)

    params = encoder.trainable()
    grads = ag.grad(loss)(params)
    assert grads.keys() == params.keys()
    for name, g in grads.items():
        assert g is not None and g.shape == params[name].shape, name
    step = 1e-6
    for name, index in (("bert.layers.0.attention.query.weight", (3, 1)),
                        ("bert.embeddings.word_embeddings.weight", (5, 2)),
                        ("bert.embeddings.position_embeddings.weight", (1, 0)),
                        ("bert.layers.0.mlp_norm.bias", (4,))):
        values = []
        for sign in (1, -1):
            moved = params[name].numpy().copy()
            moved[index] += sign * step
            values.append(float(loss({**params, name: hal.asarray(moved)}).numpy()))
        numeric = (values[0] - values[1]) / (2 * step)
        assert grads[name].numpy()[index] == pytest.approx(numeric, rel=1e-5, abs=1e-9), name
    assert not grads["bert.embeddings.position_embeddings.weight"].numpy()[5:].any()
