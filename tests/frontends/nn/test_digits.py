"""frontends.nn.digits: the small CNN trained on scikit-learn's digits reaches its stated
test accuracy, and INT8 keeps >= 99% of it (values, not timings)."""

from __future__ import annotations

import numpy as np
import pytest

import hal
from frontends.nn import digits

pytest.importorskip("sklearn")


@pytest.fixture(scope="module")
def trained():
    """One training run with the default config on cpu."""
    return digits.train(device="cpu")


def test_the_split_is_fixed_and_covers_the_set_once():
    train_images, train_labels = digits.train_split()
    test_images, test_labels = digits.test_split()
    assert len(train_labels) + len(test_labels) == 1797 and len(test_labels) == 359
    assert train_images.shape[1:] == (1, 8, 8) and 0 <= train_images.min() <= 1
    assert np.array_equal(digits.test_split()[1], test_labels)
    # together the two splits are the whole set, each image once
    whole = np.concatenate([train_images, test_images]).reshape(1797, -1)
    from sklearn.datasets import load_digits

    original = load_digits().data / 16.0
    assert np.array_equal(np.sort(whole.sum(axis=1)), np.sort(original.sum(axis=1)))
    assert np.array_equal(np.bincount(np.concatenate([train_labels, test_labels])),
                          np.bincount(load_digits().target))


def test_training_reaches_the_stated_accuracy_and_int8_retains_it(trained):
    assert trained.losses[-1] < trained.losses[0] / 10
    assert trained.accuracy >= digits.ACCURACY_TARGET
    int8 = digits.accuracy(digits.quantized(trained.model), *digits.test_split())
    assert int8 / trained.accuracy >= digits.RETENTION_TARGET


def test_the_model_matches_its_numpy_forward(trained, cpu):
    images, _ = digits.test_split()
    expected = digits.reference_logits(trained.model, images[:32])
    got = trained.model(hal.asarray(images[:32], device=cpu)).numpy()
    assert np.abs(got - expected).max() <= 1e-4 * np.abs(expected).max()


def test_an_unknown_config_key_is_refused():
    with pytest.raises(hal.HalError, match="unknown config key"):
        digits.train({"epochs": 3})
