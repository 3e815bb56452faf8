"""The int8 product form chosen from the CPU's flags, and the cpu backend's integer GEMM
exact in both forms against the numpy integer reference."""

from __future__ import annotations

import numpy as np
import pytest

import hal
from backends import cpu_int8
from hal.ops.quant import U8S8, U8U8, int8_product_form

RNG = np.random.default_rng(29)


@pytest.mark.parametrize("flags, form", [
    ({"avx512f", "avx512_vnni"}, U8S8), ({"avx2", "avx_vnni"}, U8S8), ({"amx_int8"}, U8S8),
    ({"avx2", "fma"}, U8U8), ({"avx512f", "avx512bw"}, U8U8), (set(), U8U8)])
def test_int8_product_form_follows_the_cpu_flags(flags, form):
    assert int8_product_form(flags) == form


@pytest.mark.parametrize("flags", [{"avx512_vnni", "amx_int8"}, {"avx2"}])
@pytest.mark.parametrize("za, zb", [(0, 0), (255, -128), (0, 127), (128, 5)])
def test_cpu_integer_matmul_is_exact_in_both_product_forms(flags, za, zb):
    form = int8_product_form(flags)
    if form == U8S8 and int8_product_form() != U8S8:
        pytest.skip("this CPU has no VNNI/AMX: its u8 x s8 GEMM saturates pair sums in int16")
    a = RNG.integers(0, 256, (33, 700)).astype(np.uint8)
    b = RNG.integers(-128, 128, (700, 17)).astype(np.int8)
    a[:, ::2], b[::2] = 255 if za < 128 else 0, -128 if zb >= 0 else 127  # the largest pairs
    expected = hal.ops.spec("qmatmul").reference(a, b, a_zero_point=za, b_zero_point=zb)
    out = cpu_int8.integer_matmul(a, b, za, zb, form=form)
    assert out.dtype == np.int32 and np.array_equal(out, expected)


def test_cpu_integer_matmul_names_an_unknown_form():
    a, b = np.zeros((2, 4), np.uint8), np.zeros((4, 2), np.int8)
    with pytest.raises(hal.HalError, match="product form 'int8 x int8'"):
        cpu_int8.integer_matmul(a, b, 0, 0, form="int8 x int8")
