"""hal.fft against numpy.fft: n/s cropping and padding, axes, norms, real and Hermitian
transforms, sample frequencies and shifts (eager, jitted, differentiated)."""

from __future__ import annotations

import numpy as np
import pytest

import hal
from frontends import autograd as ag

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


@pytest.fixture(params=["cpu", "null", "opencl"])
def device(request):
    """cpu (the kernels), null (decompositions and fallback) and opencl where it opens."""
    if request.param not in hal.available_backends():
        pytest.skip(f"backend {request.param}: {hal.backend(request.param).why_unavailable()}")
    hal.settings.fallback = "allow"
    return hal.device(request.param)


def _same(got, want):
    got = got.numpy()
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    ("name", "kwargs"),
    [
        ("hfft", {}), ("hfft", {"n": 7, "axis": 0, "norm": "ortho"}),
        ("hfft", {"n": 3, "norm": "forward"}), ("ihfft", {}),
        ("ihfft", {"n": 5, "axis": 0, "norm": "forward"}), ("ihfft", {"n": 12, "norm": "ortho"}),
    ],
)
def test_hermitian_transforms_match_numpy(name, kwargs, device):
    host = rng.standard_normal((6, 8))
    if name == "hfft":
        host = host + 1j * rng.standard_normal((6, 8))
    expected = getattr(np.fft, name)(host, **kwargs)
    actual = getattr(hal.fft, name)(hal.asarray(host, device=device), **kwargs).numpy()
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    np.testing.assert_allclose(actual, expected, rtol=1e-10, atol=1e-10)


def test_hermitian_transforms_keep_single_precision():
    real = rng.standard_normal(10).astype(np.float32)
    spectrum = hal.fft.ihfft(hal.asarray(real))
    assert spectrum.dtype == hal.complex64
    np.testing.assert_allclose(spectrum.numpy(), np.fft.ihfft(real), rtol=1e-5, atol=1e-6)
    signal = hal.fft.hfft(spectrum, n=10)
    assert signal.dtype == hal.float32
    np.testing.assert_allclose(signal.numpy(), real, rtol=1e-5, atol=1e-5)


def test_sample_frequencies_match_numpy(device):
    for n in (1, 2, 7, 8):
        for d in (1.0, 0.25, 3):
            _same(hal.fft.fftfreq(n, d=d, device=device), np.fft.fftfreq(n, d))
            _same(hal.fft.rfftfreq(n, d=d, device=device), np.fft.rfftfreq(n, d))
    single = hal.fft.fftfreq(5, d=0.5, dtype=hal.float32, device=device)
    assert single.device == device
    _same(single, np.fft.fftfreq(5, 0.5).astype(np.float32))


@pytest.mark.parametrize("axes", [None, 0, (1, 2), [-1, 0], ()])
def test_shifts_match_numpy(device, axes):
    host = rng.standard_normal((4, 5, 3))
    for name in ("fftshift", "ifftshift"):
        _same(getattr(hal.fft, name)(hal.asarray(host, device=device), axes=axes),
              getattr(np.fft, name)(host, axes=axes))


def test_shifts_run_jitted_and_differentiate(device):
    host, weights = rng.standard_normal((5, 4)), rng.standard_normal((5, 4))
    x = hal.asarray(host, device=device)
    _same(hal.jit(lambda t: hal.fft.fftshift(t, axes=0))(x), np.fft.fftshift(host, axes=0))
    w = hal.asarray(weights, device=device)
    _same(ag.grad(lambda t: hal.sum(hal.fft.fftshift(t) * w))(x), np.fft.ifftshift(weights))


def test_bad_arguments_of_the_array_api_functions_are_clear_errors():
    x = hal.ones((4, 4), dtype=hal.complex128)
    with pytest.raises(hal.DomainError, match="hfft: n must be at least 1, got 0"):
        hal.fft.hfft(x, n=0)
    with pytest.raises(hal.ShapeError, match="ihfft: axis 2 is out of range"):
        hal.fft.ihfft(hal.ones((4, 4)), axis=2)
    with pytest.raises(hal.ShapeError, match="hfft: norm 'half' is not one of backward"):
        hal.fft.hfft(x, norm="half")
    with pytest.raises(hal.ArgumentError, match=r"fftfreq: n must be an integer, got 4\.0"):
        hal.fft.fftfreq(4.0)
    with pytest.raises(hal.DomainError, match=r"rfftfreq: d \(the sample spacing\) must not be 0"):
        hal.fft.rfftfreq(4, d=0)
    with pytest.raises(hal.UnsupportedDType, match="fftfreq: dtype int32 is not real floating"):
        hal.fft.fftfreq(4, dtype=hal.int32)
    with pytest.raises(hal.ShapeError, match="fftshift: repeated axis"):
        hal.fft.fftshift(x, axes=(0, -2))
