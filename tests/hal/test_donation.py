"""hal.jit's donate_argnums: donated inputs updated in place, spent tensors refused."""

from __future__ import annotations

import numpy as np
import pytest

import hal
from hal import ops


def _write(cache, row, position):
    """The cache with row written at `position` along axis 0, and the sum of the new cache."""
    new = hal.dynamic_update_slice(cache, row, hal.pad(position, ((0, 1),)))
    return new, hal.sum(new)


def _inputs(position):
    cache = hal.asarray(np.arange(12, dtype=np.float32).reshape(4, 3), copy=True)
    row = hal.asarray(np.full((1, 3), -1, np.float32))
    return cache, row, hal.asarray(np.array([position], np.int64))


@pytest.mark.parametrize("position", [0, 2, 7])  # 7 is clamped to the last row
def test_donated_cache_is_written_in_place_with_the_reference_values(position):
    step = hal.jit(_write, donate_argnums=(0,))
    cache, row, where = _inputs(position)
    want = ops.spec("dynamic_update_slice").evaluate(
        cache.numpy().copy(), row.numpy(), np.array([position, 0]))
    memory = cache.native
    new, total = step(cache, row, where)
    np.testing.assert_array_equal(new.numpy(), want)
    assert float(total.numpy()) == want.sum()
    assert new.native is memory  # the cpu writes the donated buffer itself
    assert list(step.compiled(new, row, where).in_place.values()) == [0]  # input 0
    np.testing.assert_array_equal(row.numpy(), np.full((1, 3), -1))  # not donated: untouched


def test_a_spent_tensor_raises_naming_its_argument():
    step = hal.jit(_write, donate_argnums=(0,))
    cache, row, where = _inputs(1)
    new, _ = step(cache, row, where)
    for use in (lambda: cache.numpy(), lambda: step(cache, row, where), lambda: cache + 1):
        with pytest.raises(hal.HalError, match=r"_write\): this tensor of argument 0 was "
                                               r"donated"):
            use()
    new, _ = step(new, row, where)  # the returned cache carries on
    assert new.numpy()[1].tolist() == [-1, -1, -1]


def test_an_input_read_elsewhere_is_copied_not_overwritten():
    def both(cache, row, position):
        new, _ = _write(cache, row, position)
        return new, hal.sum(cache)  # the old cache is read after the update

    step = hal.jit(both, donate_argnums=(0,))
    cache, row, where = _inputs(0)
    before = cache.numpy().copy()
    new, old_sum = step(cache, row, where)
    assert step.compiled(new, row, where).in_place == {}
    assert float(old_sum.numpy()) == before.sum()
    np.testing.assert_array_equal(new.numpy()[1:], before[1:])


def test_donation_refuses_a_tensor_passed_twice_and_a_static_argument():
    step = hal.jit(_write, donate_argnums=(0,))
    cache, _, where = _inputs(0)
    with pytest.raises(hal.HalError, match="donated argument 0 is passed more than once"):
        step(cache, cache, where)
    with pytest.raises(hal.HalError, match=r"arguments \[0\] are both static and donated"):
        hal.jit(_write, static_argnums=(0,), donate_argnums=(0,))


def test_without_donation_the_input_keeps_its_values():
    step = hal.jit(_write)
    cache, row, where = _inputs(3)
    before = cache.numpy().copy()
    new, _ = step(cache, row, where)
    np.testing.assert_array_equal(cache.numpy(), before)
    assert new.numpy()[3].tolist() == [-1, -1, -1]
