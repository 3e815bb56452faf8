"""A jitted graph on OpenCL captured and replayed from one prepared enqueue plan
(backends/opencl/capture.py, through hal's capture hooks): the same answers as eager for new
inputs each call, no kernel invocation from Python and no allocation but the outputs once
planned, and the graphs a plan cannot repeat refused with the reason."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest

import hal

pytest.importorskip("pyopencl")
if not hal.backend("opencl").is_available():
    pytest.skip(f"no OpenCL device: {hal.backend('opencl').why_unavailable()}",
                allow_module_level=True)

from backends.opencl.capture import Recording

N = 64
RNG = np.random.default_rng(3)


@pytest.fixture(scope="module")
def dev():
    """opencl:0 (PoCL here)."""
    return hal.device("opencl:0")


def spectral(v, e):
    """A KdV-like step: FFTs (kernels that allocate their output) between fused groups."""
    u = hal.fft.irfft(v, N)
    return e * v + hal.fft.rfft(u * u)


def _state(dev):
    host = RNG.standard_normal(N // 2 + 1) + 1j * RNG.standard_normal(N // 2 + 1)
    return hal.asarray(host, device=dev)


def _planned(dev, fn, *args):
    """fn jitted and called three times (checked; offered to capture; the first replay makes
    and checks the plan): the jitted function and its executable."""
    jitted = hal.jit(fn)
    for _ in range(3):
        jitted(*args)
    return jitted, jitted.compiled(*args)


def test_replay_gives_eager_answers_for_new_inputs(dev):
    e = _state(dev)
    jitted, executable = _planned(dev, spectral, _state(dev), e)
    assert executable.capture_refused is None and executable.counts()["captured"] > 0
    v = w = _state(dev)
    for _ in range(4):  # each call's input is the previous call's output
        v, w = spectral(v, e), jitted(w, e)
        np.testing.assert_allclose(w.numpy(), v.numpy(), rtol=1e-13, atol=1e-13)


class _CountingPool:
    """The device's pool, counting what it is asked for."""

    def __init__(self, pool):
        self.pool, self.requests = pool, 0

    def __call__(self, nbytes):
        self.requests += 1
        return self.pool(nbytes)

    def allocate(self, nbytes):
        self.requests += 1
        return self.pool.allocate(nbytes)

    def __getattr__(self, name):
        return getattr(self.pool, name)


def test_a_planned_call_allocates_only_its_output_and_sets_no_arguments(dev, monkeypatch):
    e, v = _state(dev), _state(dev)
    jitted, _ = _planned(dev, spectral, v, e)
    want = spectral(v, e).numpy()
    invoked = []
    call = cl.Kernel.__call__

    def counting(kernel, *args, **kwargs):
        invoked.append(kernel.function_name)
        return call(kernel, *args, **kwargs)

    monkeypatch.setattr(cl.Kernel, "__call__", counting)
    pool = _CountingPool(dev.pool)
    monkeypatch.setattr(dev, "pool", pool)
    got = jitted(v, e)
    monkeypatch.undo()
    assert (pool.requests, invoked) == (1, [])  # the output; kernels enqueued as prepared
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-13, atol=1e-13)


def test_an_output_viewing_an_intermediate_gets_a_fresh_buffer_each_call(dev):
    def fn(x):
        return hal.reshape(hal.exp(x) * 2.0, (4, 8)), hal.sum(x)

    x = hal.asarray(RNG.standard_normal(32), device=dev)
    jitted, executable = _planned(dev, fn, x)
    assert executable.capture_refused is None and executable.counts()["captured"] > 0
    first = jitted(x)
    y = hal.asarray(RNG.standard_normal(32), device=dev)
    second = jitted(y)
    for got, want in ((first, fn(x)), (second, fn(y))):  # the first is not overwritten
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-14)


def test_an_output_on_an_input_buffer_refuses_the_capture(dev):
    def fn(x):
        return hal.reshape(x, (4, 8)), x + 1.0

    x = hal.asarray(RNG.standard_normal(32), device=dev)
    jitted, executable = _planned(dev, fn, x)
    assert "view of an input" in executable.capture_refused
    assert executable.counts()["capture_refused"] > 0
    y = hal.asarray(RNG.standard_normal(32), device=dev)
    view, plus = jitted(y)
    np.testing.assert_array_equal(view.numpy(), y.numpy().reshape(4, 8))
    np.testing.assert_array_equal(plus.numpy(), y.numpy() + 1.0)


def test_recording_refuses_what_a_plan_would_not_repeat(dev):
    with Recording(dev) as moved:
        dev.upload(np.ones(3))
    assert "moves data" in moved.refused
    kernel = dev.build("test", "__kernel void k(__global int *x) { x[0] = 1; }", "k")
    buffer = dev.allocate(4)
    kernel.set_args(buffer)
    with Recording(dev) as bare:
        cl.enqueue_nd_range_kernel(dev.queue, kernel, (1,), None)
    assert "without pyopencl's Kernel.__call__" in bare.refused
    with Recording(dev) as clean:
        kernel(dev.queue, (1,), None, buffer)
    kernel(dev.queue, (1,), None, buffer)  # after the recording: not recorded
    assert clean.refused is None and len(clean.launches) == 1


def test_a_replay_that_raises_names_the_switch_and_the_next_call_replays(dev, monkeypatch):
    e, v = _state(dev), _state(dev)
    jitted, executable = _planned(dev, spectral, v, e)

    def failing(*args):
        raise cl.RuntimeError("clEnqueueNDRangeKernel failed: OUT_OF_RESOURCES")

    monkeypatch.setattr(cl._cl, "enqueue_nd_range_kernel", failing)
    with pytest.raises(hal.HalError, match=r"OUT_OF_RESOURCES.*HAL_CAPTURE=0"):
        jitted(v, e)
    monkeypatch.undo()
    assert executable.counts()["captured"] > 0
    np.testing.assert_allclose(jitted(v, e).numpy(), spectral(v, e).numpy(), rtol=1e-13,
                               atol=1e-13)


def test_a_plan_that_differs_from_the_recording_is_refused_at_its_first_replay(dev, monkeypatch):
    from backends.opencl import capture

    monkeypatch.setattr(capture.Plan, "run", lambda plan, natives: [
        dev.upload(np.zeros(o[1], o[2])) for o in plan.outputs])
    e, v = _state(dev), _state(dev)
    jitted, executable = _planned(dev, spectral, v, e)
    assert "differed from the recorded call" in executable.capture_refused
    np.testing.assert_allclose(jitted(v, e).numpy(), spectral(v, e).numpy(), rtol=1e-13,
                               atol=1e-13)
