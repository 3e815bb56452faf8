"""Gradient buckets overlapped with the backward pass, by running the model's chain piece
by piece.

`OverlappedStep(model, mesh, data_parallel)` runs the forward one piece at a time (the
chain `pipeline` cuts into stages: the LM's embedding, each block, the head), each
piece's forward and backward as two compiled graphs (`pipeline.SplitVJP`: its VJP traced
once and split at the cotangent; op by op with `jit=False`); the backward walks the
pieces from the last, and as soon as a piece's backward has produced its parameters'
gradients their buckets' all-reduces are issued (`DataParallel.start`; with tp > 1
after the piece's partial gradients are summed over tp in one fused all_reduce) while
the backward goes on with the pieces before it. Every pending all-reduce is given a
chance to progress after each piece (MPI moves a nonblocking collective only inside MPI
calls); all are waited at the end. Without overlap the same all-reduces start after the
whole backward (`DataParallel.sync`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import hal
from hal import Tensor

from .annotate import parallelize, sum_partial_grads
from .pipeline import SplitVJP, parameter_names, pieces, run_of


class OverlappedStep:
    """The loss and the dp-mean gradients of a chain model, its gradient all-reduces
    overlapped with its backward pass (see the module); `vjps` holds each piece's
    `SplitVJP`. Collective over the data-parallel group: every rank calls it with the same
    parameter names, shapes and dtypes."""

    def __init__(self, model, mesh, data_parallel, *, tp_axis: str = "tp",
                 sequence_parallel: bool = False, jit: bool = True):
        links = pieces(model)
        split = tp_axis in mesh.names and mesh.shape[mesh.names.index(tp_axis)] > 1
        self.split = split
        self.models = [parallelize(run_of(model, [link]), mesh, tp_axis,
                                   sequence_parallel=sequence_parallel, partial_grads=True)
                       if split else run_of(model, [link]) for link in links]
        self.names = [parameter_names(model, [link]) for link in links]
        last = len(links) - 1
        self.vjps = [SplitVJP(m.call_with, first=k == 0, last=k == last, jit=jit)
                     for k, m in enumerate(self.models)]
        self.data_parallel = data_parallel

    def __call__(self, params: Mapping[str, Tensor], inputs: Tensor, targets: Tensor,
                 loss: Callable) -> tuple[Tensor, dict[str, Tensor | None]]:
        """(loss(model(inputs), targets), the mean gradients over the dp ranks)."""
        dp = self.data_parallel
        dp.check(params)
        x, backs = inputs, []
        for names, vjp in zip(self.names, self.vjps):
            x, back = vjp({n: params[n] for n in names if n in params}, x,
                          targets if vjp.last else None, loss)
            backs.append(back)
        value = x
        cotangent = hal.full((), 1.0, dtype=value.dtype, device=value.device)
        started = []
        for k in reversed(range(len(backs))):
            out = backs[k](cotangent)
            backs[k] = None  # this piece's activations can go
            grads = sum_partial_grads(self.models[k], out[0]) if self.split else out[0]
            started.append(dp.start(grads))
            if k > 0:
                cotangent = out[1]
            for part in started:
                for *_, request, _ in part:
                    request.test()
        return value, dp.finish(*started)
