"""quant.half_precision: float16/bfloat16 inference of a float32 model's graph, on the cpu."""

from __future__ import annotations

import numpy as np
import pytest

import hal
from frontends import nn, quant

CONFIG = nn.BertConfig(vocab_size=50, hidden_size=32, num_hidden_layers=2,
                       num_attention_heads=4, intermediate_size=64, max_position_embeddings=16)
IDS = np.random.default_rng(0).integers(0, 50, (3, 12))
MASK = np.ones((3, 12), np.int64)
MASK[0, 8:] = 0


@pytest.fixture(scope="module")
def bert():
    return nn.BertModel(CONFIG, seed=0).eval()


def _error(got: np.ndarray, expected: np.ndarray) -> float:
    return float(np.linalg.norm(got - expected) / np.linalg.norm(expected))


@pytest.mark.parametrize("dtype, bound", [(hal.float16, 2e-3), (hal.bfloat16, 2e-2)])
def test_bert_in_half_precision_is_close_to_float32(bert, dtype, bound):
    expected = bert(IDS, MASK).numpy()
    half = quant.half_precision(bert, dtype)
    got = half(IDS, MASK)
    assert got.dtype == hal.float32
    error = _error(got.numpy(), expected)
    assert 0 < error < bound, error  # rounded (not float32), and close
    weights = dict(half.model.named_parameters())
    assert {t.dtype for t in weights.values()} == {np.dtype(dtype)}
    assert all(t.dtype == hal.float32 for t in bert.parameters().values())  # unchanged


def test_float_inputs_are_cast_in_and_integer_state_stays():
    mlp = nn.MLP(8, 16, activation="gelu", seed=1).eval()
    x = hal.asarray(np.random.default_rng(1).standard_normal((4, 8)).astype(np.float32))
    half = quant.half_precision(mlp, "float16")
    np.testing.assert_allclose(half(x).numpy(), mlp(x).numpy(), rtol=2e-2, atol=2e-3)
    counts = hal.asarray(np.arange(3))
    layer = nn.Linear(2, 2, seed=0)
    layer.register_buffer("counts", counts)
    assert quant.half_precision(layer, hal.bfloat16).model.counts.dtype == counts.dtype


def test_half_precision_traces_as_one_graph(bert):
    half = quant.half_precision(bert, hal.float16)
    jitted = hal.jit(lambda ids, mask: half(ids, mask))
    ids, mask = hal.asarray(IDS), hal.asarray(MASK)
    np.testing.assert_array_equal(jitted(ids, mask).numpy(), half(ids, mask).numpy())


def test_other_dtypes_are_refused(bert):
    with pytest.raises(hal.HalError, match="dtype 'int8' is not one of float16, bfloat16"):
        quant.half_precision(bert, hal.int8)
