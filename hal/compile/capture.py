"""Capture and replay: one call of a jitted graph recorded on the device, launched again.

Where the host cost of launching a kernel dominates (cupy on a GPU: tens of microseconds
of Python and driver per node), a jitted graph runs fastest as one recorded launch. After
`WARMUP` ordinary calls of an `Executable` (the first one checked node by node), hal
offers the graph to its backend's two hooks:

- `Backend.capture(device, run)` records the launches of a call of `run()` (the graph on
  fixed input buffers) into a device graph and returns it; it may call `run()` more than
  once (warm-ups), the launches of the last call are the ones recorded;
- `Backend.replay(device, graph, copies, outputs)` copies each (input, fixed buffer) pair
  of `copies`, launches the graph once, and returns fresh copies of `outputs`.

The rules, once per executable (one per cache key of `hal.jit`):
- inputs: the recorded launches read fixed buffers (allocated at capture, filled with the
  capturing call's inputs), so each call copies its inputs into them;
- outputs: every replay writes the same output buffers, so each call hands out copies
  (`replay` makes them): a result the caller holds is never overwritten by a later call.
  An output that is a graph input or constant is handed out as without capture;
- refused: a node run on the CPU (a host round trip) or a hook that raises (a host sync,
  a library call that refuses capture; `replay` raising CaptureRefused, as a backend that
  checks its recording at the first replay does) leaves the executable running as
  before, its `capture_refused` set to the reason and its `counts()` saying
  `capture_refused`;
- off: `HAL_CAPTURE=0` in the environment, or `hal.jit(f, capture=False)`.
A backend without the hooks (`Backend.capture` returns None) sees nothing of this.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..runtime.errors import HalError

WARMUP = 2  # ordinary calls before the capture is offered (the first one checked)


class CaptureRefused(HalError):
    """The graph cannot be recorded on its device (a node runs on the CPU, say)."""


class Capture:
    """A call of a graph recorded on its device: the fixed input buffers it reads, the
    backend's device graph, and the output buffers each replay writes."""

    def __init__(self, device, graph, inputs: Sequence, outputs: Sequence):
        self.device, self.graph = device, graph
        self.inputs, self.outputs = list(inputs), list(outputs)

    def __call__(self, natives: Sequence) -> tuple:
        """The graph's output natives for these input natives: copied in, one launch,
        copies of the outputs handed out."""
        copies = list(zip(natives, self.inputs, strict=True))
        return tuple(self.device.backend.replay(self.device, self.graph, copies,
                                                self.outputs))


def capture(device, run: Callable[[Sequence], tuple], natives: Sequence) -> Capture | str | None:
    """Offer one call of `run` (input natives -> output natives) to the device's backend.

    Returns a Capture, None where the backend does not capture, or the reason (a string)
    why the backend refused.
    """
    backend = device.backend
    # once per capture, through the host: a copy on any backend (download and upload may
    # hand back the array itself where the device's memory is the host's)
    fixed = [device.upload(device.download(n).copy()) for n in natives]
    last: list[tuple] = []

    def run_fixed() -> None:
        last[:] = [run(fixed)]

    try:
        graph = backend.capture(device, run_fixed)
    except CaptureRefused as e:
        return str(e)
    except Exception as e:  # the backend's refusal (or its fault): the graph runs as before
        return f"{backend.name} backend's capture raised {type(e).__name__}: {e}"
    if graph is None:
        return None
    if not last:
        return f"{backend.name} backend's capture returned a graph without calling run()"
    return Capture(device, graph, fixed, last[0])
