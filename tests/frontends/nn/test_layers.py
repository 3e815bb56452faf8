"""frontends.nn layers against numpy references, on cpu; take's gradient."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import erf

import hal
from frontends import autograd as ag
from frontends import nn


def np_layer_norm(x, w, b, eps):
    c = x - x.mean(-1, keepdims=True)
    return c / np.sqrt((c * c).mean(-1, keepdims=True) + eps) * w + b


def np_gelu(x):
    return 0.5 * x * (1 + erf(x / np.sqrt(2)))


def np_linear(layer, x):
    return x @ layer.weight.numpy() + layer.bias.numpy()


def np_attention(mha, x, mask=None):
    batch, seq, dim = x.shape
    heads = mha.heads

    def split(layer):
        return np_linear(layer, x).reshape(batch, seq, heads, -1).transpose(0, 2, 1, 3)

    q, k, v = split(mha.query), split(mha.key), split(mha.value)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(dim // heads)
    if mask is not None:
        scores = np.where(np.asarray(mask)[:, None, None, :] > 0, scores, -np.inf)
    p = np.exp(scores - scores.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return np_linear(mha.out, (p @ v).transpose(0, 2, 1, 3).reshape(batch, seq, dim))


@pytest.fixture
def x(rng):
    return rng.standard_normal((2, 5, 8)).astype(np.float32)


def test_linear_embedding_layer_norm_match_numpy(x):
    lin = nn.Linear(8, 3, seed=1)
    np.testing.assert_allclose(lin(hal.asarray(x)).numpy(), np_linear(lin, x), rtol=1e-5,
                               atol=1e-6)
    emb = nn.Embedding(10, 4, seed=2)
    ids = np.array([[0, 9, 3], [3, 3, 1]])
    np.testing.assert_array_equal(emb(ids).numpy(), emb.weight.numpy()[ids])
    norm = nn.LayerNorm(8, eps=1e-12)
    norm.update({"weight": hal.asarray(np.linspace(0.5, 2, 8, dtype=np.float32)),
                 "bias": hal.asarray(np.full(8, 0.25, np.float32))})
    np.testing.assert_allclose(norm(hal.asarray(x)).numpy(),
                               np_layer_norm(x, norm.weight.numpy(), 0.25, 1e-12), atol=1e-5)


@pytest.mark.parametrize("layer, pattern", [
    (nn.Linear(8, 3), r"Linear\(8, 3\): input of shape \(2, 5\) must end in 8"),
    (nn.LayerNorm(8), r"LayerNorm\(8\): .* must end in 8"),
    (nn.MLP(8, 16), r"MLP\(8, 16\)"),
    (nn.MultiHeadAttention(8, 2), r"MultiHeadAttention\(8, heads=2\)"),
    (nn.TransformerEncoderLayer(8, 2, 16, norm_first=True),
     r"TransformerEncoderLayer\(8, heads=2\): input of shape \(2, 5\) must end in 8"),
])
def test_layers_name_the_shape_they_expect(layer, pattern):
    with pytest.raises(hal.ShapeError, match=pattern):
        layer(hal.zeros((2, 5)))


def test_embedding_rejects_float_ids():
    with pytest.raises(hal.UnsupportedDType, match=r"Embedding\(10, 4\): ids must be integers"):
        nn.Embedding(10, 4)(hal.zeros((3,)))


def test_dropout_masks_and_scales():
    x = hal.ones((100, 100), dtype=hal.float32)
    layer = nn.Dropout(0.3, seed=5)
    first, second = layer(x).numpy(), layer(x).numpy()
    assert set(np.unique(first)) <= {0.0, np.float32(1 / 0.7)}
    assert abs((first == 0).mean() - 0.3) < 0.03
    assert (first != second).any()  # a new mask per call
    again = nn.Dropout(0.3, seed=5)
    np.testing.assert_array_equal(again(x).numpy(), first)  # same seed, same masks
    np.testing.assert_array_equal(again(x).numpy(), second)
    assert layer.eval()(x) is x and nn.Dropout(0.0)(x) is x
    with pytest.raises(hal.HalError, match="must be in"):
        nn.Dropout(1.0)


def test_mlp_matches_numpy(x):
    mlp = nn.MLP(8, 16, seed=3)
    want = np_linear(mlp.fc2, np_gelu(np_linear(mlp.fc1, x)))
    np.testing.assert_allclose(mlp(hal.asarray(x)).numpy(), want, rtol=1e-5, atol=1e-5)


def test_attention_matches_numpy_with_and_without_mask(x):
    mha = nn.MultiHeadAttention(8, 2, seed=4).eval()
    np.testing.assert_allclose(mha(hal.asarray(x)).numpy(), np_attention(mha, x), atol=1e-5)
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    got = mha(hal.asarray(x), mask).numpy()
    np.testing.assert_allclose(got, np_attention(mha, x, mask), atol=1e-5)
    changed = x.copy()
    changed[0, 3:] = 100.0  # padding: invisible to the kept tokens
    np.testing.assert_allclose(mha(hal.asarray(changed), mask).numpy()[0, :3], got[0, :3],
                               atol=1e-5)
    with pytest.raises(hal.ShapeError, match=r"attention mask: shape \(2, 4\)"):
        mha(hal.asarray(x), mask[:, :4])


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_matches_numpy(x, norm_first):
    layer = nn.TransformerEncoderLayer(8, 2, 16, norm_first=norm_first, seed=6)
    mask = np.array([[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]])

    def ln(v, norm):
        return np_layer_norm(v, norm.weight.numpy(), norm.bias.numpy(), 1e-12)

    def mlp(v):
        return np_linear(layer.mlp.fc2, np_gelu(np_linear(layer.mlp.fc1, v)))

    if norm_first:
        h = x + np_attention(layer.attention, ln(x, layer.attention_norm), mask)
        want = h + mlp(ln(h, layer.mlp_norm))
    else:
        h = ln(x + np_attention(layer.attention, x, mask), layer.attention_norm)
        want = ln(h + mlp(h), layer.mlp_norm)
    np.testing.assert_allclose(layer(hal.asarray(x), mask).numpy(), want, atol=2e-5)


def test_sequential_names_and_runs_its_layers(x):
    seq = nn.Sequential(nn.Linear(8, 4, seed=0), nn.LayerNorm(4))
    assert list(seq.parameters()) == ["0.weight", "0.bias", "1.weight", "1.bias"]
    assert len(seq) == 2 and seq[1] is list(seq)[1]
    want = np_layer_norm(np_linear(seq[0], x), 1, 0, 1e-5)
    np.testing.assert_allclose(seq(hal.asarray(x)).numpy(), want, atol=1e-5)


def test_state_dict_round_trip(tmp_path, x):
    a = nn.TransformerEncoderLayer(8, 2, 16, seed=1).eval()
    b = nn.TransformerEncoderLayer(8, 2, 16, seed=2).eval()
    assert not np.allclose(a(hal.asarray(x)).numpy(), b(hal.asarray(x)).numpy())
    a.save(tmp_path / "layer.safetensors")
    b.load(tmp_path / "layer.safetensors")
    np.testing.assert_array_equal(b(hal.asarray(x)).numpy(), a(hal.asarray(x)).numpy())


def test_same_seed_same_initialisation():
    a, b = nn.MultiHeadAttention(8, 2, seed=9), nn.MultiHeadAttention(8, 2, seed=9)
    for (name, t), u in zip(a.named_parameters(), b.parameters().values(), strict=True):
        np.testing.assert_array_equal(t.numpy(), u.numpy(), err_msg=name)
    assert not np.array_equal(a.query.weight.numpy(), a.key.weight.numpy())


@pytest.mark.parametrize("axis", [0, 1, None])
def test_take_gradient(rng, axis):
    x = hal.asarray(rng.standard_normal((4, 3)))
    idx = np.array([[0, 2], [-1, 2], [2, 2]])
    ag.check_grads(lambda a: hal.take(a, hal.asarray(idx), axis=axis), (x,), order=2,
                   modes="rev")
    ct = rng.standard_normal(np.take(x.numpy(), idx, axis=axis).shape)
    got = ag.grad(lambda a: hal.sum(hal.take(a, hal.asarray(idx), axis=axis)
                                    * hal.asarray(ct)))(x).numpy()
    want = np.zeros(x.shape)
    if axis is None:
        np.add.at(want.reshape(-1), idx, ct)
    elif axis == 0:
        np.add.at(want, idx, ct)
    else:
        np.add.at(want.T, idx, np.moveaxis(ct, 0, -1))
    np.testing.assert_allclose(got, want, atol=1e-12)
