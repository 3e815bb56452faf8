"""The cuda backend's capture hooks (backends/cuda/capture.py) against a test double of
cupy's stream-capture API: which cupy calls hal makes, in which order, on which stream.
The double stands in for cupy 13/14 (`cupy.cuda.Stream.begin_capture/end_capture`,
`Graph.launch`, `Stream.record/wait_event`, `cupy.cuda.using_allocator`); it computes
nothing, so what a real GPU records and replays is left to the GPU run."""

from __future__ import annotations

import contextlib
import sys
import types
import weakref

import pytest

from backends.cuda import capture


class FakeCupy:
    """A test double of the parts of cupy the capture hooks call; `log` is the calls."""

    def __init__(self, fail_capture: bool = False):
        self.log: list[str] = []
        self.current = self.Stream(self, "current")
        self.fail_capture = fail_capture
        log = self.log

        class Event:
            def __init__(self, disable_timing=False):
                self.disable_timing = disable_timing

        cuda = types.SimpleNamespace(
            Stream=lambda non_blocking=False: self.Stream(self, "capture", non_blocking),
            MemoryPool=lambda: types.SimpleNamespace(malloc="pool.malloc"),
            Event=Event,
            get_current_stream=lambda: self.current,
            using_allocator=self.using_allocator,
        )
        self.cuda = cuda
        self.copyto = lambda dst, src: log.append(f"copyto {src}->{dst} on {self.current.name}")

    @contextlib.contextmanager
    def using_allocator(self, malloc):
        self.log.append(f"allocator {malloc}")
        try:
            yield
        finally:
            self.log.append("allocator restored")

    class Stream:
        def __init__(self, cupy, name, non_blocking=False):
            self.cupy, self.name, self.non_blocking = cupy, name, non_blocking
            self.capturing = False

        def __enter__(self):
            self.previous, self.cupy.current = self.cupy.current, self
            return self

        def __exit__(self, *exc):
            self.cupy.current = self.previous
            return False

        def record(self, event=None):
            self.cupy.log.append(f"record on {self.name}")
            return event

        def wait_event(self, event):
            self.cupy.log.append(f"{self.name} waits")

        def synchronize(self):
            self.cupy.log.append(f"synchronize {self.name}")

        def begin_capture(self, mode=None):
            self.capturing = True
            self.cupy.log.append(f"begin_capture {self.name}")

        def end_capture(self):
            self.capturing = False
            self.cupy.log.append(f"end_capture {self.name}")
            if self.cupy.fail_capture:
                raise RuntimeError("capture invalidated")
            log = self.cupy.log
            return types.SimpleNamespace(launch=lambda stream: log.append(
                f"launch on {stream.name}"))


@pytest.fixture
def device():
    return types.SimpleNamespace(cuda_device=contextlib.nullcontext(),
                                 captured_graphs=weakref.WeakSet())


def _run(cupy, fail: bool = False):
    def run():
        stream = cupy.current
        cupy.log.append(f"run on {stream.name}" + (" capturing" if stream.capturing else ""))
        if fail and stream.capturing:
            raise RuntimeError("a host sync while capturing")

    return run


def test_capture_warms_up_then_records_one_call_on_its_own_stream(device, monkeypatch):
    cupy = FakeCupy()
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    graph = capture.capture(device, _run(cupy))
    assert cupy.log == ["record on current", "capture waits", "allocator pool.malloc",
                        *["run on capture"] * capture.WARMUPS, "synchronize capture",
                        "begin_capture capture", "run on capture capturing",
                        "end_capture capture", "allocator restored"]
    assert graph.stream.non_blocking and graph in device.captured_graphs
    assert cupy.current.name == "current"


def test_replay_orders_copies_launch_and_copies_out_by_events(device, monkeypatch):
    cupy = FakeCupy()
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    graph = capture.capture(device, _run(cupy))
    cupy.log.clear()

    class Output:
        def copy(self):
            cupy.log.append(f"copy out on {cupy.current.name}")
            return "copied"

    assert capture.replay(device, graph, [("x", "fixed")], [Output()]) == ["copied"]
    assert cupy.log == ["copyto x->fixed on current", "record on current", "capture waits",
                        "launch on capture", "record on capture", "current waits",
                        "copy out on current"]


def test_a_call_that_fails_while_capturing_ends_the_capture_and_raises(device, monkeypatch):
    cupy = FakeCupy(fail_capture=True)
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    with pytest.raises(RuntimeError, match="a host sync while capturing"):
        capture.capture(device, _run(cupy, fail=True))
    assert cupy.log[-2:] == ["end_capture capture", "allocator restored"]
    assert cupy.current.name == "current" and not device.captured_graphs
