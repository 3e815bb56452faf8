"""Fixtures of the nn tests: the independent numpy BERT (frontends.nn.reference)."""

from __future__ import annotations

import numpy as np
import pytest

from frontends.nn.reference import bert_forward, sentence_embedding


@pytest.fixture
def numpy_bert():
    """(bert_forward, sentence_embedding): the numpy reference."""
    return bert_forward, sentence_embedding


@pytest.fixture
def rng():
    """A seeded generator: the same inputs on every run."""
    return np.random.default_rng(1234)
