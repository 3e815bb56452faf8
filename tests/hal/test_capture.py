"""Capture and replay of jitted graphs (hal/compile/capture.py), on a cpu backend whose
kernels append to a launch list while capturing and whose replay runs the recorded
launches again on the same arrays, as a device graph does with its buffers."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import hal
from backends.cpu import CpuBackend, CpuDevice
from frontends.science import kdv
from hal import ops
from hal.runtime.settings import Settings

PROBLEM = kdv.KASSAM_TREFETHEN
COEFFICIENTS = kdv.coefficients(PROBLEM)


class RecordingDevice(CpuDevice):
    """The cpu device, its kernels recorded while `launches` is a list."""

    launches: list | None = None
    refuses: frozenset = frozenset()  # ops that raise while recording (a host sync, say)
    missing: frozenset = frozenset()  # ops without a kernel (they fall back to the CPU)

    def kernel(self, op: str, dtype):
        fn = super().kernel(op, dtype)
        return None if fn is None or op in self.missing else self.recorded(op, fn)

    def recorded(self, op: str, fn):
        """fn, appending (fn, args, kwargs, result) to `launches` while recording."""

        @functools.wraps(fn)
        def launch(*args, **kwargs):
            if self.launches is not None and op in self.refuses:
                raise RuntimeError(f"{op} synchronizes with the host")
            result = np.asarray(fn(*args, **kwargs))
            if self.launches is not None:
                self.launches.append((fn, args, kwargs, result))
            return result

        launch.takes_out = getattr(fn, "takes_out", False)
        planned = getattr(fn, "for_shape", None)
        if planned is not None:  # the kernel's own plans (FFTs), recorded as it is

            def for_shape(*args, **params):
                plan = planned(*args, **params)
                return None if plan is None else self.recorded(op, plan)

            launch.for_shape = for_shape
        return launch


class RecordingBackend(CpuBackend):
    """Records one call of a graph as its list of launches; replays them in order."""

    name = "recording"
    device_type = RecordingDevice

    def __init__(self, **device_attributes):
        super().__init__()
        self.device_attributes = device_attributes
        self.captures: list[list] = []
        self.replays = 0

    def _open_device(self, index: int) -> RecordingDevice:
        device = RecordingDevice(self, index)
        for name, value in self.device_attributes.items():
            setattr(device, name, frozenset(value))
        return device

    def compile_fused(self, body, device):
        """A fused group as one launch writing its `out=` buffer (numpy references)."""
        constants = [body.constant_value(i) for i in range(len(body.constants))]

        def group(*operands, out):
            values = {"input": operands, "const": constants, "node": []}
            for node in body.nodes:
                args = [values[kind][i] for kind, i in node.inputs]
                values["node"].append(ops.spec(node.op).evaluate(*args, **node.params))
            kind, i = body.outputs[0]
            out[...] = values[kind][i]
            return out

        group.takes_out = True
        return device.recorded("fused", group)

    def capture(self, device, run):
        device.launches = []
        try:
            run()
        finally:
            launches, device.launches = device.launches, None
        self.captures.append(launches)
        return launches

    def replay(self, device, graph, copies, outputs):
        self.replays += 1
        for source, fixed in copies:
            fixed[...] = source
        for fn, args, kwargs, result in graph:
            value = fn(*args, **kwargs)
            if value is not result:
                result[...] = value
        return [out.copy() for out in outputs]


def _solver(device) -> kdv.KdVSolver:
    return kdv.KdVSolver(PROBLEM, "float64", device)


def _v(seed: int, device) -> hal.Tensor:
    u = np.random.default_rng(seed).standard_normal(PROBLEM.n)
    return hal.asarray(np.fft.rfft(u), device=device)


def _reference(v: hal.Tensor) -> np.ndarray:
    return kdv.etdrk4_step(np.fft, COEFFICIENTS, v.numpy(), PROBLEM.n)


def _jitted_step(device, **options):
    solver = _solver(device)
    return hal.jit(lambda v: kdv.etdrk4_step(hal.fft, solver.coeffs, v, PROBLEM.n),
                   **options), solver


def _close(actual: hal.Tensor, expected: np.ndarray) -> None:
    np.testing.assert_allclose(actual.numpy(), expected, rtol=1e-12,
                               atol=1e-12 * np.abs(expected).max())


def test_a_captured_kdv_step_equals_eager_and_the_reference():
    backend = RecordingBackend()
    device = backend.open()
    step, solver = _jitted_step(device)
    v = _v(0, device)
    eager = kdv.etdrk4_step(hal.fft, solver.coeffs, v, PROBLEM.n)
    results = [step(v) for _ in range(4)]
    executable = step.compiled(v)
    assert executable.counts()["captured"] == len(executable.graph.nodes)
    assert executable.capture_refused is None
    assert len(backend.captures) == 1 and backend.replays == 2  # calls 3 and 4 replayed
    for out in results:
        _close(out, eager.numpy())
        _close(out, _reference(v))


def test_inputs_change_between_calls_and_results_follow():
    backend = RecordingBackend()
    device = backend.open()
    step, _ = _jitted_step(device)
    for seed in (0, 1, 2, 3, 4):
        v = _v(seed, device)
        _close(step(v), _reference(v))
    assert backend.replays == 3


def test_a_result_is_not_overwritten_by_the_next_call():
    backend = RecordingBackend()
    device = backend.open()
    step, _ = _jitted_step(device)
    v0, v1 = _v(0, device), _v(1, device)
    step(v0), step(v0)
    first = step(v0)  # captured and replayed
    second = step(v1)
    assert backend.replays == 2
    _close(first, _reference(v0))
    _close(second, _reference(v1))


def test_a_host_sync_refuses_capture_and_the_graph_runs_as_before():
    backend = RecordingBackend(refuses={"irfftn"})
    device = backend.open()
    step, _ = _jitted_step(device)
    v = _v(0, device)
    for _ in range(4):
        _close(step(v), _reference(v))
    executable = step.compiled(v)
    assert "irfftn synchronizes with the host" in executable.capture_refused
    assert executable.counts()["capture_refused"] == len(executable.graph.nodes)
    assert "captured" not in executable.counts() and backend.replays == 0


def test_a_node_on_the_cpu_refuses_capture_with_the_node_named():
    hal.settings.fallback = "allow"
    backend = RecordingBackend(missing={"cumulative_sum"})
    device = backend.open()
    step = hal.jit(lambda x: hal.cumulative_sum(x) * 2.0 + x)
    x = hal.asarray(np.linspace(0.0, 1.0, 8), device=device)
    for _ in range(3):
        _close(step(x), np.cumsum(x.numpy()) * 2.0 + x.numpy())
    refused = step.compiled(x).capture_refused
    assert "cumulative_sum" in refused and "runs on the CPU" in refused
    assert backend.captures == [] and backend.replays == 0


def test_capture_is_off_under_hal_capture_0_or_capture_false(monkeypatch):
    backend = RecordingBackend()
    device = backend.open()
    v = _v(0, device)
    off, _ = _jitted_step(device, capture=False)
    monkeypatch.setattr(hal.settings, "capture", False)
    by_environment, _ = _jitted_step(device)
    for step in (off, by_environment):
        for _ in range(4):
            _close(step(v), _reference(v))
        assert not {"captured", "capture_refused"} & set(step.compiled(v).counts())
    assert backend.captures == [] and backend.replays == 0
    assert Settings.from_env({"HAL_CAPTURE": "0"}).capture is False
    with pytest.raises(hal.HalError, match="HAL_CAPTURE"):
        Settings.from_env({"HAL_CAPTURE": "maybe"})


def test_each_shape_gets_its_own_capture():
    backend = RecordingBackend()
    device = backend.open()
    step = hal.jit(lambda x: hal.exp(x) * 2.0 + x)
    small = hal.asarray(np.linspace(0.0, 1.0, 4), device=device)
    large = hal.asarray(np.linspace(-1.0, 1.0, 16), device=device)
    for _ in range(4):
        for x in (small, large, small * 0.5):
            _close(step(x), np.exp(x.numpy()) * 2.0 + x.numpy())
    assert len(backend.captures) == 2
    assert step.compiled(small).counts()["captured"] == step.compiled(large).counts()["captured"]


def test_placement_shows_the_replayed_nodes_as_captured():
    device = RecordingBackend().open()
    step = hal.jit(lambda x: hal.exp(x) * 2.0 + x)
    x = hal.asarray(np.linspace(0.0, 1.0, 4), device=device)
    step(x)
    with hal.placement() as offered:  # this call runs uncaptured, then is offered
        step(x)
    with hal.placement() as where:
        step(x)
    assert {how for *_, how in offered.records} == {"compiled"}
    assert {how for *_, how in where.records} == {"compiled+captured"}
