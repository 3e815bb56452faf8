"""Devices to differentiate on: every available backend but null; opencl skipped with why."""

import numpy as np
import pytest

import hal

_WANTED = sorted(({"cpu", "opencl"} | set(hal.available_backends())) - {"null"})


def _why_not(name: str) -> str:
    try:
        return hal.backend(name).why_unavailable() or "not available"
    except hal.HalError as e:
        return str(e)


@pytest.fixture(params=_WANTED)
def device(request):
    """An opened device of each backend under test."""
    name = request.param
    if name not in hal.available_backends():
        pytest.skip(f"backend {name}: {_why_not(name)}")
    return hal.device(name)


@pytest.fixture
def rng():
    """A seeded generator: the same inputs on every run."""
    return np.random.default_rng(1234)
