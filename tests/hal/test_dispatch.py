"""Dispatch: kernel, decomposition, CPU fallback under each policy; placement; bad input."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import hal
from hal.dispatch import call


def test_kernel_decomposition_and_fallback_are_recorded(cpu, null):
    x = hal.asarray(np.array([1.0, 2.0, 3.0]), device=null)
    hal.settings.fallback = "allow"
    with hal.placement() as where:
        y = hal.nn.softmax(x)
    assert np.allclose(y.numpy(), np.exp([1, 2, 3]) / np.exp([1, 2, 3]).sum())
    hows = {(op, how) for op, _, _, how in where.records}
    assert ("softmax", "decomposed") in hows and ("exp", "fallback") in hows
    assert where.fallbacks == 5 and where.bytes_moved > 0
    summary = where.to_dict()
    assert summary["ops"]["exp"] == {"null:0:fallback": 1}
    with hal.placement() as where:
        hal.exp(hal.asarray([1.0], device=cpu))
    assert where.records == [("exp", "cpu:0", "float64", "kernel")] and where.fallbacks == 0


def test_nested_placements_each_record_and_close(cpu):
    x = hal.asarray([1.0], device=cpu)
    with hal.placement() as outer:
        with hal.placement() as inner:  # empty, so equal in content to outer when it closes
            pass
        hal.exp(x)
    assert outer.records == [("exp", "cpu:0", "float64", "kernel")] and inner.records == []
    assert not hal.dispatch.recording()


def test_fallback_policy_error_refuses(null):
    x = hal.asarray(np.ones(3), device=null)
    with hal.fallback_policy("error"), pytest.raises(hal.FallbackRefused) as info:
        hal.exp(x)
    assert "exp on null:0 for float64" in str(info.value) and "HAL_FALLBACK" in str(info.value)


def test_fallback_policy_warn_warns_once_per_op_and_counts(null, monkeypatch):
    monkeypatch.setattr(hal.dispatch, "_warned", set())
    x = hal.asarray(np.ones(3, np.float32), device=null)
    before = hal.fallback_counts[("sqrt", "null:0", "float32")]
    with hal.fallback_policy("warn"), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        hal.sqrt(x)
        hal.sqrt(x)
    relevant = [w for w in caught if issubclass(w.category, hal.FallbackWarning)
                and "sqrt" in str(w.message)]
    assert len(relevant) == 1
    assert "sqrt on null:0 for float32" in str(relevant[0].message)
    assert hal.fallback_counts[("sqrt", "null:0", "float32")] == before + 2


def test_bad_policy_is_an_error():
    with pytest.raises(hal.HalError, match="not one of"):
        with hal.fallback_policy("sometimes"):
            pass


def test_mixing_devices_is_an_error(cpu, null):
    with pytest.raises(hal.HalError, match="different devices") as info:
        hal.add(hal.ones(2, device=cpu), hal.ones(2, device=null))
    assert "cpu:0" in str(info.value) and "null:0" in str(info.value)


@pytest.mark.parametrize(
    ("thunk", "error", "words"),
    [
        (lambda: hal.add(hal.ones((2, 3)), hal.ones((4,))), hal.ShapeError,
         ["add", "(2, 3)", "(4,)", "broadcast"]),
        (lambda: hal.matmul(hal.ones((2, 3)), hal.ones((4, 2))), hal.ShapeError,
         ["matmul", "3 != 4"]),
        (lambda: hal.sum(hal.ones((2, 3)), axis=2), hal.ShapeError,
         ["sum", "axis 2", "out of range"]),
        (lambda: hal.exp(hal.asarray([1, 2])), hal.UnsupportedDType,
         ["exp", "int64", "float32"]),
        (lambda: hal.reshape(hal.ones(6), (4, 2)), hal.ShapeError, ["reshape", "(6,)"]),
        (lambda: hal.permute_dims(hal.ones((2, 3)), (0, 0)), hal.ShapeError, ["repeated"]),
        (lambda: hal.max(hal.ones((0, 3)), axis=0), hal.ShapeError, ["empty axis"]),
        (lambda: hal.concat([hal.ones((2, 3)), hal.ones((2, 4))]), hal.ShapeError, ["concat"]),
        (lambda: hal.astype(hal.asarray([1j]), "float32"), hal.UnsupportedDType,
         ["imaginary"]),
        (lambda: hal.nn.gelu(hal.ones(2), approximate="cubic"), hal.ShapeError, ["cubic"]),
        (lambda: hal.nn.linear(hal.ones((2, 3)), hal.ones((3, 4)), hal.ones(5)),
         hal.ShapeError, ["bias"]),
        (lambda: hal.fft.fft(hal.ones(4), norm="unitary"), hal.ShapeError, ["norm"]),
        (lambda: hal.fft.fft(hal.asarray([1, 2])), hal.UnsupportedDType, ["fftn", "int64"]),
        (lambda: hal.qmatmul(hal.asarray(np.ones((2, 2), np.int8)),
                             hal.asarray(np.ones((2, 2), np.uint8))), hal.UnsupportedDType,
         ["qmatmul", "uint8"]),
        (lambda: hal.pad(hal.ones(3), ((1, 1),), mode="reflect"), hal.ShapeError, ["reflect"]),
        (lambda: hal.ops.spec("softmaxx"), hal.UnsupportedOp, ["softmax"]),
    ],
)
def test_bad_input_gets_a_clear_hal_error(thunk, error, words):
    with pytest.raises(error) as info:
        thunk()
    for word in words:
        assert word in str(info.value)


def test_bad_input_leaves_nothing_half_done(null):
    import gc

    dev = null
    gc.collect()  # tensors of earlier tests waiting in reference cycles are freed first
    before = dev.memory_stats().allocated
    with pytest.raises(hal.ShapeError):
        hal.add(hal.ones((2, 3), device=dev), hal.ones((4,), device=dev))
    gc.collect()
    assert dev.memory_stats().allocated == before


def test_observers_see_every_op_with_promoted_operands(cpu):
    seen = []
    with hal.observe(lambda spec, args, params, out, how: seen.append(
            (spec.name, [a.dtype.name for a in args if a is not None], how))):
        hal.add(hal.asarray(np.ones(2, np.float32)), hal.asarray(np.ones(2)))
    assert seen[0] == ("astype", ["float32"], "kernel")
    assert seen[1] == ("add", ["float64", "float64"], "kernel")


def test_call_accepts_op_spec_and_returns_reference_values(cpu):
    a = np.arange(6.0).reshape(2, 3)
    out = call(hal.ops.spec("sum"), hal.asarray(a), axis=(0,), keepdims=True)
    assert np.array_equal(out.numpy(), a.sum(axis=0, keepdims=True))


def test_scalar_constants_are_cached_and_keep_the_sign_of_zero(cpu, monkeypatch):
    x = hal.asarray(np.array([1.0, -2.0]), device=cpu)
    assert np.array_equal(np.signbit((x * -0.0).numpy()), np.signbit(np.array([1.0, -2.0]) * -0.0))
    assert np.array_equal(np.signbit((x * 0.0).numpy()), [False, True])
    uploads = []
    upload = cpu.upload
    monkeypatch.setattr(cpu, "upload", lambda array: uploads.append(array) or upload(array))
    for _ in range(3):
        x + 2.5
    assert len(uploads) <= 1  # the 0-d constant is made once


def test_op_calls_by_name(cpu):
    out = hal.op("softmax", hal.asarray([0.0, 0.0]), axis=-1)
    assert np.allclose(out.numpy(), [0.5, 0.5])
    with pytest.raises(hal.UnsupportedOp, match="softmax"):
        hal.op("softmaxx", hal.asarray([0.0]))
