"""The CUDA backend's cuFFT plans (backends/cuda/fft_plan.py).

Without a GPU: which transforms get a plan of hal's own (trailing axes; R2C and C2R over
the last axis only), the norm's scaling against numpy's, and the plan cache's
least-recently-used eviction with a fake plan maker. With a GPU (marked `gpu`, skipped
with the backend's reason elsewhere) planned transforms run on cuda:0 against numpy.
"""

from __future__ import annotations

import numpy as np
import pytest

import hal
from backends.cuda import fft_plan
from backends.cuda.fft_plan import C2C, C2R, R2C
from hal.conformance.compare import mismatch


def test_trailing_axes_are_planned():
    assert fft_plan.layout((4096, 1024), (-1,), C2C) == (1024,)
    assert fft_plan.layout((8, 1024, 1024), (1, 2), C2C) == (1024, 1024)
    assert fft_plan.layout((2, 3, 4, 5), (1, 2, 3), C2C) == (3, 4, 5)
    assert fft_plan.layout((16, 256), (1,), R2C) == (256,)
    assert fft_plan.layout((16, 129), (-1,), C2R) == (129,)


def test_other_layouts_go_to_cupy():
    assert fft_plan.layout((8, 16), (0,), C2C) is None  # not trailing
    assert fft_plan.layout((8, 16), (1, 0), C2C) is None  # out of order
    assert fft_plan.layout((2, 3, 4, 5), (0, 1, 2, 3), C2C) is None  # 4 axes
    assert fft_plan.layout((8, 16), (0, 1), R2C) is None  # real transforms: one axis
    assert fft_plan.layout((0, 16), (1,), C2C) is None  # empty
    assert fft_plan.layout((), (), C2C) is None


@pytest.mark.parametrize("norm", [None, "backward", "ortho", "forward"])
def test_scale_is_numpys_norm(norm):
    x = np.random.default_rng(0).standard_normal(12) + 0j
    for inverse, fn in ((False, np.fft.fft), (True, np.fft.ifft)):
        raw = np.fft.fft(x) if not inverse else np.fft.ifft(x, norm="forward")  # unscaled
        factor = fft_plan.scale(norm, inverse, 12)
        got = raw if factor is None else raw * factor
        np.testing.assert_allclose(got, fn(x, norm=norm), rtol=1e-12)


def test_plan_cache_keeps_the_most_recently_used():
    made = []
    cache = fft_plan.plans(lambda key: made.append(key) or f"plan {key}", size=2)
    assert [cache(k) for k in ("a", "b", "a", "c")] == ["plan a", "plan b", "plan a", "plan c"]
    assert made == ["a", "b", "c"]  # "a" was reused
    cache("a")  # still held: "b" was the least recently used when "c" came
    cache("b")
    assert made == ["a", "b", "c", "b"]
    assert fft_plan.plan.cache_info().maxsize == fft_plan.PLANS == 64


# -- on a GPU ------------------------------------------------------------------------------
_REASON = hal.backend("cuda").why_unavailable()
gpu = pytest.mark.skipif(_REASON is not None, reason=f"no CUDA GPU: {_REASON}")


@pytest.mark.gpu
@gpu
@pytest.mark.parametrize("norm", [None, "ortho"])
def test_planned_transforms_on_the_gpu(norm):
    rng = np.random.default_rng(1)
    z = (rng.standard_normal((8, 64, 32)) + 1j * rng.standard_normal((8, 64, 32))).astype(
        np.complex64)
    r = rng.standard_normal((8, 30))
    dev = "cuda:0"
    cases = [
        (hal.fft.fft(hal.asarray(z, device=dev), norm=norm), np.fft.fft(z, norm=norm), "fftn"),
        (hal.fft.fft2(hal.asarray(z, device=dev), norm=norm), np.fft.fft2(z, norm=norm),
         "fftn"),
        (hal.fft.ifft(hal.asarray(z, device=dev), norm=norm), np.fft.ifft(z, norm=norm),
         "ifftn"),
        (hal.fft.rfft(hal.asarray(r, device=dev), norm=norm), np.fft.rfft(r, norm=norm),
         "rfftn"),
        (hal.fft.irfft(hal.asarray(np.fft.rfft(r), device=dev), n=30, norm=norm),
         np.fft.irfft(np.fft.rfft(r), n=30, norm=norm), "irfftn"),
    ]
    for got, expected, op in cases:
        problem = mismatch(got.numpy(), expected.astype(got.dtype),
                           hal.ops.spec(op).tolerance_for(got.dtype))
        assert not problem, f"{op}: {problem}"
