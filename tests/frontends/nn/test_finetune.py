"""The train -> infer flow: fine-tune on the shipped topic pairs, then quantize and serve."""

from __future__ import annotations

import numpy as np
import pytest

import hal
from frontends.nn import finetune

TINY = {"vocab_size": 30522, "hidden_size": 32, "num_hidden_layers": 1,
        "num_attention_heads": 2, "intermediate_size": 64, "max_position_embeddings": 64,
        "type_vocab_size": 2, "layer_norm_eps": 1e-12, "hidden_dropout_prob": 0.1,
        "hidden_act": "gelu"}
CONFIG = {"model": TINY, "steps": 30, "batch_size": 16, "max_length": 20, "seed": 3,
          "optimizer": {"optimizer": "AdamW", "learning_rate": 3e-3, "weight_decay": 0.01,
                        "lr_scheduler": {"type": "LinearDecay", "warmup_steps": 3},
                        "grad_clip": 1.0}}


@pytest.fixture(scope="module")
def trained():
    return finetune.finetune(CONFIG, device="cpu", log=None)


def test_the_task_splits_topics_into_train_and_test():
    train, test = finetune.split(finetune.read_topics())
    assert len(train) == 72 and len(test) == 24
    assert {t for t, _ in test} == {t for t, _ in train} and len({t for t, _ in train}) == 8
    _, _, labels = finetune.all_pairs(test)
    assert len(labels) == 24 * 23 // 2 and labels.sum() == 8 * 3


def test_loss_goes_down_and_test_metrics_are_kept(trained):
    losses = np.array(trained.losses)
    assert len(losses) == 30 and np.all(np.isfinite(losses))
    assert losses[-5:].mean() < 0.6 * losses[:5].mean()
    for metrics in (trained.before, trained.after):
        assert set(metrics) == {"cos_related", "cos_unrelated", "pair_accuracy",
                                "neighbour_accuracy"}
        assert 0 <= metrics["pair_accuracy"] <= 1


def test_served_int8_encoder_is_the_same_model_quantized(trained):
    int8 = finetune.serve(trained.encoder, trained.config)
    _, test = finetune.split(finetune.read_topics())
    fp32 = finetune.embed(trained.encoder, test, 20)
    q = finetune.embed(int8, test, 20)
    assert np.min(np.sum(fp32 * q, axis=1)) > 0.98
    assert all(type(layer).__name__ != "Linear" for _, layer in int8.named_layers())
    assert any(type(layer).__name__ == "Linear" for _, layer in trained.encoder.named_layers())


def test_a_jitted_int8_forward_equals_eager(trained):
    int8 = finetune.serve(trained.encoder, trained.config)
    tokens = finetune.tokenize(int8.tokenizer, ["The soup needs salt.", "It rained."], 20)
    ids, mask = (hal.asarray(tokens[k]) for k in ("input_ids", "attention_mask"))
    eager = int8(ids, mask).numpy()
    jitted = hal.jit(lambda i, m: int8(i, m))(ids, mask).numpy()
    np.testing.assert_allclose(jitted, eager, rtol=1e-5, atol=1e-6)


def test_config_errors_name_the_keys():
    with pytest.raises(hal.HalError, match=r"unknown key.*epochs.*the keys are"):
        finetune.merged_config({"epochs": 3})
    with pytest.raises(hal.HalError, match="optimizer 'Adam' is not one of"):
        finetune.finetune({**CONFIG, "optimizer": {"optimizer": "Adam", "learning_rate": 1.0}},
                          device="cpu", log=None)
