"""hal.fft against numpy.fft: n/s cropping and padding, axes, norms, real transforms."""

from __future__ import annotations

import numpy as np
import pytest

import hal

rng = np.random.default_rng(0)


@pytest.mark.parametrize("device", ["cpu", "null"])
@pytest.mark.parametrize(
    ("name", "kwargs"),
    [
        ("fft", {}), ("fft", {"n": 5}), ("fft", {"n": 12, "axis": 0, "norm": "ortho"}),
        ("ifft", {"norm": "forward"}), ("rfft", {"n": 7}), ("irfft", {}),
        ("irfft", {"n": 9, "axis": 0}), ("fft2", {}), ("ifft2", {"s": (3, 4)}),
        ("fftn", {"axes": (0, 2)}), ("ifftn", {"s": (5,), "axes": (1,)}),
        ("rfft2", {"norm": "ortho"}), ("irfft2", {"s": (6, 7)}), ("rfftn", {}),
        ("irfftn", {"axes": (0, 1)}),
    ],
)
def test_matches_numpy(name, kwargs, device):
    hal.settings.fallback = "allow"
    real = name.startswith("r")
    host = rng.standard_normal((6, 8, 3)) if real else (
        rng.standard_normal((6, 8, 3)) + 1j * rng.standard_normal((6, 8, 3)))
    if name.startswith("i") and "rfft" in name:
        host = np.fft.rfftn(rng.standard_normal((6, 8, 3)), axes=(0, 1, 2))
    if name.endswith("2") and host.ndim == 3:
        host = host[..., 0]
    expected = getattr(np.fft, name)(host, **kwargs)
    actual = getattr(hal.fft, name)(hal.asarray(host, device=device), **kwargs).numpy()
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    np.testing.assert_allclose(actual, expected, rtol=1e-10, atol=1e-10)


def test_single_precision_stays_single():
    x = hal.asarray(rng.standard_normal(16).astype(np.float32))
    assert hal.fft.fft(x).dtype == hal.complex64
    assert hal.fft.rfft(x).dtype == hal.complex64
    assert hal.fft.irfft(hal.fft.rfft(x)).dtype == hal.float32
    assert hal.fft.fft(x.astype("float16")).dtype == hal.complex64


def test_bad_sizes_are_clear_errors():
    with pytest.raises(hal.ShapeError, match="at least 1"):
        hal.fft.fft(hal.ones(4), n=0)
    with pytest.raises(hal.ShapeError, match="repeated axis"):
        hal.fft.fftn(hal.ones((4, 4)), axes=(0, 0))
    with pytest.raises(hal.ShapeError, match="2 sizes for 1 axes"):
        hal.fft.fftn(hal.ones((4, 4)), s=(2, 2), axes=(0,))
