"""Dtype names and promotion rules (Array API tables inside a kind, JAX-like across kinds)."""

from __future__ import annotations

import numpy as np
import pytest

import hal
from hal import conformance as kit
from hal import dtypes as dt
from hal import ops


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("int8", "int8", "int8"),
        ("int8", "int32", "int32"),
        ("uint8", "int32", "int32"),
        ("uint8", "int8", "int32"),  # int16 is not in the set
        ("int32", "int64", "int64"),
        ("float16", "float32", "float32"),
        ("float16", "bfloat16", "float32"),
        ("bfloat16", "float64", "float64"),
        ("float32", "complex64", "complex64"),
        ("float64", "complex64", "complex128"),
        ("complex64", "complex128", "complex128"),
        ("int64", "float16", "float16"),
        ("bool", "int8", "int8"),
        ("bool", "bool", "bool"),
    ],
)
def test_promotion_table(a, b, expected):
    assert dt.promote(dt.dtype(a), dt.dtype(b)) == dt.dtype(expected)
    assert dt.promote(dt.dtype(b), dt.dtype(a)) == dt.dtype(expected)


@pytest.mark.parametrize(
    ("d", "scalar", "expected"),
    [
        ("float32", 2.5, "float32"),
        ("float16", 1, "float16"),
        ("int8", 3, "int8"),
        ("int8", 0.5, "float64"),
        ("float32", 1j, "complex64"),
        ("float64", 1j, "complex128"),
        ("bool", True, "bool"),
        ("bool", 2, "int64"),
    ],
)
def test_python_scalars_are_weak(d, scalar, expected):
    assert dt.result_type(dt.dtype(d), scalar) == dt.dtype(expected)


def test_every_dtype_is_named_and_resolvable():
    assert len(dt.ALL) == 11
    for d in dt.ALL:
        assert dt.dtype(d.name) == d
    assert hal.bool == dt.bool_
    assert hal.dtype("bool") == np.dtype(bool)


@pytest.mark.parametrize("bad", ["uint16", "float128", "str", object])
def test_unknown_dtype_is_a_clear_error(bad):
    with pytest.raises(hal.UnsupportedDType, match="not in hal's dtype set"):
        dt.dtype(bad)


def test_binary_op_promotes_tensors_and_scalars(cpu):
    a = hal.asarray(np.array([1, 2], np.int8), device=cpu)
    b = hal.asarray(np.array([1.5, 2.5], np.float32), device=cpu)
    assert (a + b).dtype == hal.float32
    assert (b * 2).dtype == hal.float32
    assert (a + 1).dtype == hal.int8
    np.testing.assert_array_equal((a + b).numpy(), [2.5, 4.5])


def test_scalar_that_does_not_fit_is_an_error(cpu):
    a = hal.asarray(np.array([1, 2], np.int8), device=cpu)
    with pytest.raises(hal.HalError, match="does not fit int8"):
        a + 1000


@pytest.fixture
def numpy_refusing_bfloat16(monkeypatch):
    """np.finfo as numpy 2.5 has it: ml_dtypes' bfloat16 is not a numpy builtin, so refused."""
    if dt.bfloat16 is None:
        pytest.skip("ml_dtypes is not installed")
    numpy_finfo = np.finfo

    def finfo(d):
        if np.dtype(d) == dt.bfloat16:
            raise ValueError(f"data type {d!r} not inexact")
        return numpy_finfo(d)

    monkeypatch.setattr(np, "finfo", finfo)


def test_bfloat16_limits_and_cells_without_numpys_finfo(numpy_refusing_bfloat16):
    with pytest.raises(ValueError, match="not inexact"):
        np.finfo(dt.bfloat16)
    top = float.fromhex("0x1.fep127")
    assert (hal.finfo(hal.bfloat16).max, hal.finfo(hal.bfloat16).eps) == (top, 2.0**-7)
    assert dt.machine_limits(dt.bfloat16).smallest_subnormal == 2.0**-133
    assert dt.machine_limits(dt.float32).max == np.float32(3.4028235e38)
    # exp's and add's inputs reach the dtype's largest value, read from the limits
    for op in ("exp", "add"):
        cell = kit.check_cell(hal.device("cpu"), ops.spec(op), dt.bfloat16, 2)
        assert cell.status == kit.PASS, cell.error
