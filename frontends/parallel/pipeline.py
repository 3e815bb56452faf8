"""Pipeline parallelism over the "pp" axis of a mesh: stages, microbatches, GPipe and 1F1B.

A model is a chain of pieces: an `nn.Sequential` (one piece per layer), or a model that
declares its forward as one (`pipeline_pieces()`: the LM's embedding, each block, the
head). `pipeline(model, mesh)` cuts the chain into one contiguous run of pieces per pp
rank and returns this rank's `Stage`, parallelized over "tp" when that axis has more
than one rank:

    mesh = Mesh((dp, pp, tp), ("dp", "pp", "tp"))     # under mpiexec -n dp*pp*tp
    stage = pipeline(model, mesh)
    params = {n: p for n, p in model.parameters().items() if n in stage.names}
    loss, grads = stage.step(params, ids, targets, cross_entropy, microbatches=4)

`step` splits the batch into microbatches and runs a schedule of forwards (F) and
backwards (B) per microbatch: GPipe (every F, then every B: the stage holds the
activations of all m microbatches) or 1F1B (p - s - 1 warm-up Fs on stage s, then F and
B alternate: at most p microbatches' activations held). Stage s receives its input
from s - 1 and sends its output to s + 1 (tag ACTIVATION), and in the backward pass
receives the output's gradient from s + 1 and sends the input's gradient to s - 1 (tag
GRADIENT), with hal's `send`/`recv` ops over the pp group: per step, stage s issues
m sends and m recvs towards each neighbour it has (`p2p_per_step`). The loss is the mean
of the microbatches' losses, so the gradients equal the single-device gradients of the
whole batch.

A stage's F and B of a microbatch run as two compiled graphs (with tp > 1 carrying the
tp collectives): the stage's VJP (on the last stage, of its loss) is traced once per
shape with `hal.jit` and split at its cotangent (`hal.compile.passes.split`), so F runs
the forward and returns the output and the residuals (the activations the backward
reads), which the stage holds until B runs the backward on them. The sends and recvs run
between the graphs. With `jit=False` both run op by op, B walking the autograd tape F
recorded. Each F and B is timed (`Stage.timeline`), which gives the measured bubble
against the formula (p - 1) / (m + p - 1) (`bubble`).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Mapping
from typing import NamedTuple

import numpy as np

import hal
from frontends import autograd as ag
from frontends.nn import Sequential
from hal import HalError, Tensor
from hal.compile.passes import split
from hal.compile.pipeline import compile as compile_graph

from .annotate import parallelize, sum_partial_grads

SCHEDULES = ("1f1b", "gpipe")
ACTIVATION, GRADIENT = 1, 2  # the tags of the two directions


class Piece(NamedTuple):
    """One link of a model's chain: the sub-layer paths whose parameters it uses, and
    `run(model, x) -> y` (called on the model's copy that holds the parameters)."""

    paths: tuple[str, ...]
    run: Callable


def pieces(model) -> list[Piece]:
    """The chain of a model: its `pipeline_pieces()`, or one piece per layer of a
    Sequential; HalError for a model that is neither."""
    if hasattr(type(model), "pipeline_pieces"):
        return list(model.pipeline_pieces())
    if isinstance(model, Sequential):
        return [Piece((str(i),), lambda m, x, i=i: m[i](x)) for i in range(len(model))]
    raise HalError(f"pipeline: a {type(model).__name__} is not a chain of pieces; pipeline an "
                   "nn.Sequential, or give the model a pipeline_pieces() method listing its "
                   "forward as Piece(paths, run) links")


def cut(count: int, stages: int) -> list[range]:
    """The pieces of each stage: `count` pieces in `stages` contiguous runs, the first
    `count % stages` one longer; HalError when there are fewer pieces than stages."""
    if not 1 <= stages <= count:
        raise HalError(f"pipeline: {count} pieces cannot make {stages} stages (each stage "
                       f"needs one); use at most {count} pp ranks, or a model with more layers")
    bounds = np.cumsum([0] + [count // stages + (i < count % stages) for i in range(stages)])
    return [range(int(a), int(b)) for a, b in itertools.pairwise(bounds)]


def schedule(kind: str, stages: int, stage: int, microbatches: int) -> list[tuple[str, int]]:
    """The order of ("F", i) and ("B", i) on `stage` of `stages` for `microbatches`."""
    if kind not in SCHEDULES:
        raise HalError(f"pipeline: unknown schedule {kind!r}; use one of {', '.join(SCHEDULES)}")
    m = microbatches
    if kind == "gpipe":
        return [("F", i) for i in range(m)] + [("B", i) for i in range(m)]
    warmup = min(stages - stage - 1, m)
    order = [("F", i) for i in range(warmup)]
    for i in range(m - warmup):
        order += [("F", warmup + i), ("B", i)]
    return order + [("B", i) for i in range(m - warmup, m)]


def p2p_per_step(stages: int, stage: int, microbatches: int) -> dict[str, int]:
    """Sends and recvs `stage` issues per step: m each way towards each neighbour (the
    activations forward, their gradients back)."""
    neighbours = (stage > 0) + (stage < stages - 1)
    return {"send": microbatches * neighbours, "recv": microbatches * neighbours}


def bubble(stages: int, microbatches: int) -> float:
    """The idle share of a stage's step when every F and B takes the same time and
    messages are free: (p - 1) / (m + p - 1), for GPipe and 1F1B alike."""
    return (stages - 1) / (microbatches + stages - 1)


def uneven_bubbles(busy: list[float], microbatches: int) -> list[float]:
    """Each stage's bubble when stage s spends busy[s] seconds on its m forwards and
    backwards and messages are free: the step lasts sum(t) + (m - 1) max(t), t = busy / m
    per microbatch (the slowest stage sets the pace), of which stage s works busy[s]. With
    equal stages this is `bubble`."""
    per = [b / microbatches for b in busy]
    step = sum(per) + (microbatches - 1) * max(per)
    return [1.0 - b / step for b in busy]


def held_activations(kind: str, stages: int, stage: int, microbatches: int) -> int:
    """The most microbatches whose activations `stage` holds at once under the schedule
    (GPipe: m; 1F1B: min(p - s, m))."""
    held = peak = 0
    for op, _ in schedule(kind, stages, stage, microbatches):
        held += 1 if op == "F" else -1
        peak = max(peak, held)
    return peak


_CHAIN_CLASSES: dict[type, type] = {}


def _chain_class(base: type) -> type:
    """A subclass of the model's class whose forward runs the copy's pieces in order."""
    cls = _CHAIN_CLASSES.get(base)
    if cls is None:
        def forward(self, x):
            for piece in self._pieces:
                x = piece.run(self, x)
            return x

        cls = _CHAIN_CLASSES[base] = type(base.__name__, (base,), {
            "forward": forward, "__module__": base.__module__,
            "__doc__": f"{base.__name__}, a run of its pieces: called, it runs that run."})
    return cls


def parameter_names(model, links: list[Piece]) -> list[str]:
    """The model's parameters that `links` use, in the model's order."""
    return [n for n, _ in model.named_parameters()
            if any(n == p or n.startswith(p + ".") for link in links for p in link.paths)]


def run_of(model, links: list[Piece]):
    """A copy of the model whose forward is the run of `links`."""
    copy = model.copy()
    object.__setattr__(copy, "_pieces", tuple(links))
    copy.__class__ = _chain_class(type(model))
    return copy


class SplitVJP:
    """The VJP of a run of pieces in a training step. Called with (params, x, targets,
    loss) it gives the run's output on x (on the `last` run, its loss on `targets`) and
    its backward, which takes the output's cotangent and gives (the gradients of `params`
    by name, and x's gradient unless on the `first` run, whose x holds token ids). With
    `jit` the VJP applied to a cotangent is traced once per input signature with `hal.jit`
    and split at the cotangent (`hal.compile.passes.split`) into two compiled graphs
    (`graphs`): the forward runs at once and returns the output and the residuals (the
    activations the backward reads), the backward runs on them when called. Op by op
    otherwise, the backward walking the autograd tape the forward recorded. Shared by the
    pipeline's stages and the overlapped dp step's pieces (overlap.py)."""

    def __init__(self, forward: Callable, *, first: bool, last: bool, jit: bool = True):
        self.forward, self.first, self.last, self.jit = forward, first, last, jit
        self.graphs: dict[tuple, tuple] = {}  # input signature -> (forward, backward)

    def __call__(self, params: Mapping[str, Tensor], x, targets, loss: Callable) -> tuple:
        """(the output, its backward), by compiled graphs unless op by op (see the class)."""
        return (self._compiled if self.jit else self._eager)(params, x, targets, loss)

    def _apply(self, params: Mapping[str, Tensor], x, targets, loss: Callable) -> Tensor:
        y = self.forward(params, x)
        return loss(y, targets) if self.last else y

    def _eager(self, params: Mapping[str, Tensor], x, targets, loss: Callable) -> tuple:
        if self.first:
            return ag.vjp(lambda p: self._apply(p, x, targets, loss), dict(params))
        return ag.vjp(lambda p, x: self._apply(p, x, targets, loss), dict(params), x)

    def _compiled(self, params: Mapping[str, Tensor], x, targets, loss: Callable) -> tuple:
        inputs = [*params.values(), x, *([] if targets is None else [targets])]
        key = (loss, tuple(params), *((t.shape, t.dtype, t.device) for t in inputs))
        if key not in self.graphs:
            self.graphs[key] = self._split(params, x, targets, loss)
        forward, backward = self.graphs[key]
        y, *residuals = forward(*inputs)

        def back(cotangent: Tensor) -> tuple:
            grads = backward(*residuals, cotangent)
            return dict(zip(params, grads)), *grads[len(params):]

        return y, back

    def _split(self, params: Mapping[str, Tensor], x, targets, loss: Callable) -> tuple:
        """The executables of the forward and the backward for these inputs: the VJP
        applied to a cotangent traced as one graph, split at the cotangent."""
        value = hal.jit(self._apply, static_argnums=3).graph(params, x, targets, loss)
        shape, dtype = value.meta(value.outputs[0])

        def vjp(params, x, targets, cotangent):
            y, back = self._eager(params, x, targets, loss)
            return y, back(cotangent)

        cotangent = hal.zeros(shape, dtype=dtype, device=x.device)
        joint = hal.jit(vjp).graph(params, x, targets, cotangent)
        first, second = split(joint, [len(joint.inputs) - 1], [0])
        return compile_graph(first, x.device), compile_graph(second, x.device)


class Stage:
    """This rank's stage of a pipelined model (made by `pipeline`).

    `index` and `count` (the pp rank and size), `split` (whether its pieces run tensor
    parallel: then the partial gradients of its replicated parameters are summed once per
    step, `sum_partial_grads`), `names` (its parameters, in the model's order),
    `forward(params, x)`, `vjp` (its `SplitVJP`: a microbatch's forward and backward, as
    compiled graphs unless op by op), `step` (one schedule's forwards and backwards), and
    after each step `timeline`: (op, microbatch, start, end) of each F and B, on
    `time.perf_counter`, between `started` and `ended`, and `held`: the most microbatches
    whose activations (residuals, or autograd tapes op by op) it held at once.
    """

    def __init__(self, model, mesh, axis: str, tp_axis: str, sequence_parallel: bool = False,
                 jit: bool = True):
        links = pieces(model)
        self.mesh, self.axis = mesh, axis
        self.index, self.count = mesh.coords[axis], mesh.shape[mesh.names.index(axis)]
        self.group = mesh.group(axis)
        self.runs = cut(len(links), self.count)
        mine = [links[i] for i in self.runs[self.index]]
        self.first, self.last = self.index == 0, self.index == self.count - 1
        self.names = parameter_names(model, mine)
        self.model = run_of(model, mine)
        self.split = tp_axis in mesh.names and mesh.shape[mesh.names.index(tp_axis)] > 1
        if self.split:
            self.model = parallelize(self.model, mesh, tp_axis,
                                     sequence_parallel=sequence_parallel, partial_grads=True)
        self._before = run_of(model, links[:self.runs[self.index].start])  # for input shapes
        self._shapes: dict[tuple, tuple] = {}
        self.timeline: list[tuple[str, int, float, float]] = []
        self.started = self.ended = 0.0
        self.held = 0  # the most microbatches whose activations the last step held at once
        self.vjp = SplitVJP(self.forward, first=self.first, last=self.last, jit=jit)

    def forward(self, params: Mapping[str, Tensor], x) -> Tensor:
        """This stage's pieces on x with `params` (this stage's, by name)."""
        return self.model.call_with(params, x)

    def step(self, params: Mapping[str, Tensor], inputs: Tensor, targets: Tensor,
             loss: Callable, *, microbatches: int = 1, kind: str = "1f1b",
             ) -> tuple[float | None, dict[str, Tensor]]:
        """(the mean loss over the microbatches, on the last stage; None on the others,
        and the gradients of that loss with respect to `params`), by the schedule `kind`
        over `microbatches` equal parts of the batch (axis 0). Collective over the stage's
        pp group: every stage calls it with the same batch shape, microbatches and kind;
        the first stage reads `inputs`, the last `targets` (the others' are not read)."""
        batch = inputs.shape[0]
        if microbatches < 1 or batch % microbatches:
            raise HalError(f"pipeline: a batch of {batch} does not split into {microbatches} "
                           "equal microbatches; make the batch (per dp rank) a multiple of it")
        size = batch // microbatches
        part = lambda t, i: t[i * size:(i + 1) * size]  # noqa: E731
        order = schedule(kind, self.count, self.index, microbatches)
        C, group = hal.collectives, self.group
        pending: dict[int, tuple] = {}  # microbatch -> (its output, its backward)
        total: dict[str, Tensor] = {}
        losses = []
        self.timeline, self.held = [], 0
        self.started = time.perf_counter()
        for op, i in order:
            if op == "F":
                if self.first:
                    x = part(inputs, i)
                else:
                    x = C.recv(self._input_like(part(inputs, i)), group=group,
                               peer=self.index - 1, tag=ACTIVATION)
                start = time.perf_counter()
                t = part(targets, i) if self.last else None
                y, back = self.vjp(params, x, t, loss)
                self.timeline.append(("F", i, start, time.perf_counter()))
                if self.last:
                    losses.append(float(y.numpy()))
                else:
                    C.send(y, group=group, peer=self.index + 1, tag=ACTIVATION)
                pending[i] = (y, back)
                self.held = max(self.held, len(pending))
            else:
                y, back = pending.pop(i)
                if self.last:
                    seed = hal.full((), 1.0 / microbatches, dtype=y.dtype, device=y.device)
                else:
                    seed = C.recv(hal.zeros_like(y), group=group, peer=self.index + 1,
                                  tag=GRADIENT)
                start = time.perf_counter()
                grads = back(seed)
                self.timeline.append(("B", i, start, time.perf_counter()))
                for name, g in grads[0].items():
                    total[name] = g if name not in total else total[name] + g
                if not self.first:
                    C.send(grads[1], group=group, peer=self.index - 1, tag=GRADIENT)
        if self.split:
            total = sum_partial_grads(self.model, total)
        self.mesh.groups[self.axis].flush()
        self.ended = time.perf_counter()
        return (float(np.mean(losses)) if self.last else None), total

    def busy(self) -> float:
        """Seconds of the last step this stage spent in its Fs and Bs."""
        return sum(end - start for _, _, start, end in self.timeline)

    def bubble(self) -> float:
        """The share of the last step's time, from this stage's start to its end, that it
        spent outside its Fs and Bs (the pipeline's bubble counts the step from the first
        stage's start to the last one's end: the stepper's `pipeline` command)."""
        return 1.0 - self.busy() / (self.ended - self.started)

    def _input_like(self, inputs: Tensor) -> Tensor:
        """A tensor shaped like this stage's input for a microbatch of `inputs` (the output
        of the stages before, found once per input shape by tracing them)."""
        key = (tuple(inputs.shape), inputs.dtype.name)
        if key not in self._shapes:
            graph = hal.jit(self._before.forward).graph(inputs)
            self._shapes[key] = graph.meta(graph.outputs[0])
        shape, dtype = self._shapes[key]
        return hal.zeros(shape, dtype=dtype, device=inputs.device)


def pipeline(model, mesh, axis: str = "pp", *, tp_axis: str = "tp",
             sequence_parallel: bool = False, jit: bool = True) -> Stage:
    """This rank's stage of `model` (see the module) over the mesh's `axis`, its pieces
    parallelized over `tp_axis` when the mesh has it with more than one rank (sequence
    parallel with `sequence_parallel`), each microbatch's forward and backward run as
    compiled graphs (op by op with jit=False)."""
    return Stage(model, mesh, axis, tp_axis, sequence_parallel, jit)
