"""Eager dispatch overhead: hal `add` against the bare numpy call (pytest-benchmark).

Run with timing: `pytest tests/hal/test_dispatch_overhead.py --benchmark-enable
--benchmark-group-by=param:n`. In the normal test run the benchmarks execute once and
only their values are checked; speed goals live in benchmark reports, not assertions.
"""

from __future__ import annotations

import numpy as np
import pytest

import hal

SIZES = [1_000, 1_000_000]


@pytest.fixture(params=SIZES, ids=lambda n: f"n={n}")
def operands(request):
    rng = np.random.default_rng(0)
    a, b = (rng.random(request.param, dtype=np.float32) for _ in range(2))
    return a, b


def test_numpy_add(benchmark, operands):
    a, b = operands
    out = benchmark(np.add, a, b)
    assert out.dtype == np.float32


def test_hal_add(benchmark, operands):
    a, b = operands
    x, y = hal.asarray(a, device="cpu"), hal.asarray(b, device="cpu")
    out = benchmark(hal.add, x, y)
    np.testing.assert_array_equal(out.numpy(), a + b)


def test_hal_operator_add(benchmark, operands):
    a, b = operands
    x, y = hal.asarray(a, device="cpu"), hal.asarray(b, device="cpu")
    out = benchmark(lambda: x + y)
    np.testing.assert_array_equal(out.numpy(), a + b)
