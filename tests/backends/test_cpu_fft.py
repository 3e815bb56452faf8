"""The cpu backend's FFT kernels (backends/cpu_fft.py) against numpy.fft: FFTW plans through
pyfftw, their cache and threads, `out=` under hal.jit, and scipy's pocketfft without pyfftw."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import hal
from backends import cpu_fft

pytest.importorskip("pyfftw")
rng = np.random.default_rng(0)
RTOL = {np.float32: 1e-4, np.float64: 1e-11, np.complex64: 1e-4, np.complex128: 1e-11}
DTYPES = list(RTOL)


def _data(shape, dtype):
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def _close(actual: hal.Tensor, expected: np.ndarray, dtype) -> None:
    """actual equals numpy's (computed in double) to dtype's precision, in its dtype."""
    got = actual.numpy()
    single = np.dtype(dtype) in (np.float32, np.complex64)
    assert got.shape == expected.shape
    assert got.dtype.itemsize == expected.dtype.itemsize // (2 if single else 1)
    scale = np.abs(expected).max() + 1
    np.testing.assert_allclose(got, expected, rtol=RTOL[dtype], atol=RTOL[dtype] * scale)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, name, kwargs", [
    ((64,), "fft", {}), ((7, 48), "fft", {"norm": "ortho"}), ((16, 12), "fft2", {}),
    ((5, 9), "ifft", {"norm": "forward"}), ((6, 10, 4), "fftn", {"axes": (0, 2)}),
    ((8, 6), "ifft2", {"norm": "ortho"}), ((30,), "fft", {"n": 17}),
])
def test_complex_transforms_match_numpy(shape, name, kwargs, dtype):
    x = _data(shape, dtype)
    expected = getattr(np.fft, name)(x.astype(np.complex128), **kwargs)
    _close(getattr(hal.fft, name)(hal.asarray(x, device="cpu"), **kwargs), expected, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [16, 15])
@pytest.mark.parametrize("norm", [None, "backward", "ortho", "forward"])
def test_real_transforms_match_numpy_odd_and_even(n, norm, dtype):
    x = _data((3, n), dtype)
    spectrum = np.fft.rfft(x.astype(np.float64), norm=norm)
    _close(hal.fft.rfft(hal.asarray(x, device="cpu"), norm=norm), spectrum, dtype)
    complex_dtype = np.complex64 if dtype == np.float32 else np.complex128
    back = hal.fft.irfft(hal.asarray(spectrum.astype(complex_dtype), device="cpu"), n=n,
                         norm=norm)
    _close(back, np.fft.irfft(spectrum, n=n, norm=norm), dtype)


@pytest.mark.parametrize("s", [(6, 8), (5, 7)])
def test_multi_axis_inverse_real_transform_keeps_its_input(s):
    spectrum = np.fft.rfft2(rng.standard_normal(s))
    before = spectrum.copy()
    x = hal.asarray(spectrum, device="cpu")
    _close(hal.fft.irfft2(x, s=s), np.fft.irfft2(before, s=s), np.float64)
    np.testing.assert_array_equal(x.numpy(), before)


def test_strided_misaligned_and_empty_inputs():
    base = _data((3, 65), np.complex64)
    offset = base.reshape(-1)[1:129].reshape(2, 64)  # 8 bytes past the allocation's alignment
    transposed = _data((64, 5), np.complex128).T
    for x in (offset, transposed):
        _close(hal.fft.fft(hal.asarray(x, device="cpu")), np.fft.fft(x.astype(np.complex128)),
               x.dtype.type)
    empty = hal.fft.fft(hal.asarray(np.zeros((0, 8), np.complex64), device="cpu"))
    assert empty.shape == (0, 8) and empty.dtype == hal.complex64


def test_plans_are_cached_per_transform():
    key = ("fftn", (4, 32), np.dtype(np.complex64), (1,), None, None, (1,))
    first = cpu_fft.plan(*key)
    assert cpu_fft.plan(*key) is first
    assert cpu_fft.plan(*key[:4], "ortho", *key[5:]) is not first
    assert cpu_fft.plan("fftn", (4, 16), *key[2:]) is not first
    assert cpu_fft.plan("ifftn", *key[1:]) is not first


CALLS = [((32,), "fft", {}, np.complex64), ((4, 32), "ifft", {"norm": "ortho"}, np.complex128),
         ((5, 18), "rfft", {}, np.float64), ((5, 10), "irfft", {"n": 18}, np.complex128),
         ((3, 9), "irfft", {}, np.complex64), ((6, 8), "fft2", {}, np.complex128),
         ((6, 5), "irfft2", {"s": (6, 8)}, np.complex128)]


def test_repeated_eager_calls_run_a_bound_plan_on_new_data(monkeypatch):
    made = []
    init = cpu_fft.Plan.__init__
    monkeypatch.setattr(cpu_fft.Plan, "__init__",
                        lambda self, *args: made.append(args[1]) or init(self, *args))
    for repeat in range(4):
        if repeat == 2:
            planned = len(made)  # the first calls planned; later ones plan nothing new
        for shape, name, kwargs, dtype in CALLS:
            data = [_data(shape, dtype) for _ in range(2)]
            results = [getattr(hal.fft, name)(hal.asarray(x, device="cpu"), **kwargs)
                       for x in data]
            assert results[0].native is not results[1].native  # each call a result of its own
            for x, result in zip(data, results):
                wide = x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)
                _close(result, getattr(np.fft, name)(wide, **kwargs), dtype)
    assert len(made) == planned


def test_each_fft_node_of_a_jitted_graph_has_a_plan_of_its_own():
    @hal.jit
    def step(u):
        v = hal.fft.rfft(u)
        return hal.fft.irfft(v * 2.0, n=u.shape[-1]), hal.fft.irfft(v * 3.0, n=u.shape[-1])

    for shape in ((64,), (3, 30), (64,)):
        for seed in range(3):  # buffers and plans reused across calls, new values each time
            u = np.random.default_rng(seed).standard_normal(shape)
            twice, thrice = step(hal.asarray(u, device="cpu"))
            _close(twice, 2 * u, np.float64)
            _close(thrice, 3 * u, np.float64)
        plans = [s for s in step.compiled(hal.asarray(u, device="cpu"))._steps
                 if isinstance(s, cpu_fft.Plan)]
        assert len(plans) == 3 and len({id(p) for p in plans}) == 3


def test_without_pyfftw_pocketfft_gives_the_same_values(monkeypatch):
    x = _data((6, 40), np.complex128)
    r = _data((5, 21), np.float64)
    with_fftw = [hal.fft.fft2(hal.asarray(x, device="cpu"), norm="ortho").numpy(),
                 hal.fft.irfft(hal.fft.rfft(hal.asarray(r, device="cpu")), n=21).numpy()]
    monkeypatch.setitem(sys.modules, "pyfftw", None)  # `import pyfftw` raises ImportError
    cpu_fft.pyfftw_module.cache_clear()
    try:
        assert cpu_fft.pyfftw_module() is None
        misses = cpu_fft.plan.cache_info().misses
        without = [hal.fft.fft2(hal.asarray(x, device="cpu"), norm="ortho").numpy(),
                   hal.fft.irfft(hal.fft.rfft(hal.asarray(r, device="cpu")), n=21).numpy()]
        assert cpu_fft.plan.cache_info().misses == misses  # no FFTW plan was asked for
    finally:
        cpu_fft.pyfftw_module.cache_clear()
    for a, b in zip(with_fftw, without):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(without[1], r, rtol=1e-12, atol=1e-12)


def test_threads_follow_the_setting_and_the_free_cores(monkeypatch):
    monkeypatch.setattr(hal.settings, "threads", 8)
    monkeypatch.setattr(cpu_fft, "_usable_cores", lambda: 4)
    monkeypatch.setattr(cpu_fft, "_others_running", lambda: 1)
    assert cpu_fft.threads_for(cpu_fft.THREADED_POINTS - 1) == 1
    assert cpu_fft.thread_counts() == (1, 2, 4)
    assert cpu_fft.threads_for(cpu_fft.THREADED_POINTS) == 2  # one core is taken: 3, down to 2
    monkeypatch.setattr(cpu_fft, "_others_running", lambda: 6)
    assert cpu_fft.threads_for(cpu_fft.THREADED_POINTS) == 1
    monkeypatch.setattr(hal.settings, "threads", 2)
    monkeypatch.setattr(cpu_fft, "_others_running", lambda: 0)
    assert cpu_fft.threads_for(cpu_fft.THREADED_POINTS) == 2
    x = _data((2, cpu_fft.THREADED_POINTS), np.complex128)  # planned on 2 threads
    _close(hal.fft.ifft(hal.asarray(x, device="cpu")), np.fft.ifft(x), np.complex128)
    monkeypatch.setattr(hal.settings, "threads", 1)
    assert cpu_fft.threads_for(1 << 30) == 1


def test_a_change_of_load_between_calls_plans_nothing_new(monkeypatch):
    """Every thread count is planned in the first call, none in a later call that meets a
    new load (planning there put FFTW's planning and a wisdom write inside a timed call)."""
    pyfftw = cpu_fft.pyfftw_module()
    planned, fftw = [], pyfftw.FFTW
    monkeypatch.setattr(pyfftw, "FFTW", lambda *a, **kw: planned.append(kw["threads"]) or
                        fftw(*a, **kw))
    monkeypatch.setattr(hal.settings, "threads", 2)
    monkeypatch.setattr(cpu_fft, "_usable_cores", lambda: 2)
    x = _data((3, cpu_fft.THREADED_POINTS), np.complex64)
    for call, others in enumerate((0, 1, 0, 1)):
        monkeypatch.setattr(cpu_fft, "_others_running", lambda n=others: n)
        assert cpu_fft.threads_for(x.size) == 2 - others
        _close(hal.fft.fft(hal.asarray(x, device="cpu")), np.fft.fft(x.astype(np.complex128)),
               np.complex64)
        assert sorted(planned) == [1, 2], call


def test_jitted_transforms_write_into_the_executables_buffers(monkeypatch):
    given_out = []
    call = cpu_fft.Plan.__call__

    def recording(self, x, out=None):
        given_out.append(out is not None)
        return call(self, x, out)

    monkeypatch.setattr(cpu_fft.Plan, "__call__", recording)

    @hal.jit
    def step(u):
        return hal.fft.irfft(hal.fft.rfft(u) * 2.0, n=u.shape[-1])

    for seed in range(3):  # the buffers are reused across calls
        u = np.random.default_rng(seed).standard_normal(64)
        _close(step(hal.asarray(u, device="cpu")), 2 * u, np.float64)
    assert given_out and all(given_out[-2:]), given_out  # every jitted call wrote into out=


def test_bad_axes_are_clear_errors_after_a_good_call():
    x = hal.asarray(_data((4, 8), np.complex64), device="cpu")
    hal.fft.fft(x, axis=1)
    with pytest.raises(hal.ShapeError, match="fftn: axis 2 is out of range for a 2-d"):
        hal.fft.fft(x, axis=2)
    with pytest.raises(hal.ShapeError, match="fftn"):
        hal.fft.fft(x, axis=1.0)  # equal to 1, but not an int
    with pytest.raises(hal.ShapeError, match="norm 'sideways'"):
        hal.fft.fft(x, norm="sideways")
    with pytest.raises(hal.UnsupportedDType, match="rfftn: input dtype int32"):
        hal.fft.rfft(hal.asarray(np.arange(8, dtype=np.int32), device="cpu"))
