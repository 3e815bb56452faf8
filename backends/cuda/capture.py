"""CUDA graphs of hal.jit graphs: the backend's capture hooks (hal.Backend.capture/replay).

A call of a jitted graph is recorded once with cupy's stream capture on a stream of its
own (`cupy.cuda.Stream(non_blocking=True)`: capture is refused on the legacy default
stream), and each later call is one `graph.launch(stream)`. cupy runs its kernels, cuBLAS
and cuFFT on the current stream, so everything runs under `with stream:`.

- Memory: cupy's pool hands a stream the blocks freed on it, and frees every cached block
  on `free_all_blocks()` (hal's `empty_cache`). The graph's temporaries, freed during the
  recording, must stay its own: the warm-ups and the recording allocate from a pool of
  the graph's (`cupy.cuda.MemoryPool`, kept with it), and `WARMUPS` calls on the stream
  first fill it, so the recorded call takes blocks already held.
- Order: the stream waits for an event recorded on the current stream (the inputs'
  copies, written there) before the warm-ups and each launch; the current stream waits
  for an event recorded on the capture stream after each launch (the outputs' copies,
  and whatever comes next).
- Refusals: a host sync, or a call cupy refuses while capturing, raises out of `run()`;
  the capture is ended (so the stream stays usable) and the error reaches hal as the
  reason the graph runs uncaptured.
- cuFFT plans: the recorded launches use the work areas of cupy's cached plans, so the
  device keeps its plan cache while a captured graph lives (`CudaDevice.empty_cache`).
"""

from __future__ import annotations

import contextlib

WARMUPS = 3  # calls on the capture stream before recording (the pool filled for it)


class CudaGraph:
    """A recorded call: cupy's Graph, the stream and pool it owns, and its two events."""

    __slots__ = ("__weakref__", "done", "graph", "inputs_ready", "pool", "stream")

    def __init__(self, graph, stream, pool, cuda):
        self.graph, self.stream, self.pool = graph, stream, pool
        self.inputs_ready = cuda.Event(disable_timing=True)
        self.done = cuda.Event(disable_timing=True)


def capture(device, run) -> CudaGraph:
    """One call of `run()` recorded on a new stream of the device's GPU (after WARMUPS)."""
    import cupy

    cuda = cupy.cuda
    with device.cuda_device:
        stream, pool = cuda.Stream(non_blocking=True), cuda.MemoryPool()
        stream.wait_event(cuda.get_current_stream().record())
        with stream, cuda.using_allocator(pool.malloc):
            for _ in range(WARMUPS):
                run()
            stream.synchronize()
            stream.begin_capture()
            try:
                run()
            except BaseException:
                _end_abandoned(stream)
                raise
            graph = stream.end_capture()
    captured = CudaGraph(graph, stream, pool, cuda)
    device.captured_graphs.add(captured)
    return captured


def _end_abandoned(stream) -> None:
    """End a capture whose call raised, so the stream can be used again; the call's own
    error is the one to report (an invalidated capture also fails to end)."""
    with contextlib.suppress(Exception):  # the capture is discarded either way
        stream.end_capture()


def replay(device, captured: CudaGraph, copies: list, outputs: list) -> list:
    """Copy the inputs in on the current stream, launch the graph on its stream after them,
    and copy the outputs out on the current stream after the launch."""
    import cupy

    cuda = cupy.cuda
    with device.cuda_device:
        current = cuda.get_current_stream()
        for source, fixed in copies:
            cupy.copyto(fixed, source)
        captured.stream.wait_event(current.record(captured.inputs_ready))
        captured.graph.launch(captured.stream)
        current.wait_event(captured.stream.record(captured.done))
        return [out.copy() for out in outputs]
