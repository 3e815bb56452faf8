"""The training `hal train` runs: one rank's `Trainer` and the loop `train` over all ranks.

    result = train({"steps": 200, "tp": 2})                # every rank of the job calls it
    result = train({"pp": 2, "microbatches": 4})            # two pipeline stages, 1F1B

A step draws random windows of `data/hardware.txt` (every rank the same window indices,
from the seed; each dp rank takes its slice of the batch), takes the next-token
cross-entropy and its gradient as one `hal.jit` graph (with tp > 1 the graph carries the
collectives; with pp > 1 each rank runs its pipeline stage's forward and backward per
microbatch under the schedule as two compiled graphs, op by op with `eager`, exchanging
activations and gradients with send/recv between them: `pipeline.py`; with `overlap` each
piece of the model's chain likewise, its gradient buckets all-reduced as soon as its
backward has run: `overlap.py`), averages the gradients over dp (`DataParallel`: buckets,
optionally ZeRO-1/2) and steps AdamW (or SGD) with a linear warmup and decay. Rank 0
prints a line every `log_every` steps and a summary: loss first -> last, tokens/s and the
median time per step (over the steps after the first, which traces the graph), the share
of those steps' time spent inside collectives, and a greedy sample of the trained model
(`generate`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping

import numpy as np

import hal
from frontends import autograd as ag
from frontends import optim
from hal import HalError, Tensor

from .annotate import parallelize, sum_partial_grads
from .corpus import TrainConfigError, batches, load_text
from .language_model import VOCAB, LanguageModel, cross_entropy, generate
from .overlap import OverlappedStep
from .pipeline import SCHEDULES, pipeline

DEFAULTS = {
    "steps": 200, "batch": 8, "seq": 64, "dim": 128, "layers": 2, "heads": 4, "lr": 3e-3,
    "dp": None, "tp": 1, "pp": 1, "sp": False, "microbatches": None, "schedule": "1f1b",
    "overlap": False, "zero": 0,
    "bucket_mb": 25.0, "seed": 0, "dtype": "float32",
    "optimizer": "adamw", "eager": False, "debug": None, "timeout": None, "log_every": 20,
    "sample": 120, "prompt": "The memory ", "device": None,
}
"""The keys of a `train` config; dp None means all ranks not used by tp and pp,
microbatches None one per pipeline stage, debug None the Mesh's default (the check on,
unless HAL_PARALLEL_DEBUG=0), device None hal's default device (see `rank_device`)."""


def check_same_on_every_rank(config: Mapping, comm) -> None:
    """TrainConfigError on every rank of `comm` when its ranks were given different configs,
    naming each differing option and its value on each rank. Collective (one allgather):
    call it before any other collective, which different configs could leave waiting."""
    configs = comm.allgather({**DEFAULTS, **config})
    keys = dict.fromkeys(key for c in configs for key in c)  # DEFAULTS' order, then the rest
    differing = []
    for key in keys:
        values = [repr(c[key]) if key in c else "unset" for c in configs]
        if len(set(values)) > 1:
            differing.append(f"--{key.replace('_', '-')} " + ", ".join(
                f"{value} on rank {rank}" for rank, value in enumerate(values)))
    if differing:
        raise TrainConfigError("cannot train: the ranks were given different options: "
                               + "; ".join(differing) + "; start every rank with the same ones")


def check_config(config: Mapping, ranks: int) -> dict:
    """DEFAULTS updated by config, dp filled in; TrainConfigError naming what cannot run."""
    unknown = sorted(set(config) - set(DEFAULTS))
    if unknown:
        raise TrainConfigError(f"train config: unknown key(s) {', '.join(unknown)}; the keys "
                               f"are {', '.join(DEFAULTS)}")
    c = {**DEFAULTS, **config}
    tp, pp = c["tp"], c["pp"]
    model_ranks = tp * pp if tp >= 1 and pp >= 1 else 0
    dp = c["dp"] if c["dp"] is not None else ranks // max(model_ranks, 1)
    c["dp"] = dp
    m = c["microbatches"] = c["microbatches"] if c["microbatches"] is not None else max(pp, 1)
    problems = []
    axes = f"--tp {tp}" if pp == 1 else f"--pp {pp} x --tp {tp}"
    if config.get("dp") is None and model_ranks >= 1 and ranks % model_ranks:
        problems.append(f"{axes} {'' if pp == 1 else f'= {model_ranks} '}does not divide the "
                        f"{ranks} rank(s) of this job (mpiexec -n {ranks}); run a multiple "
                        f"of {model_ranks} ranks")
    elif dp < 1 or model_ranks < 1 or dp * model_ranks != ranks:
        problems.append(f"--dp {dp} x {axes} = {dp * model_ranks} ranks, but this job has "
                        f"{ranks} (mpiexec -n {ranks}); choose dp * "
                        f"{'tp' if pp == 1 else 'pp * tp'} = {ranks}")
    if pp >= 1 and c["layers"] >= 1 and pp > c["layers"] + 2:
        problems.append(f"--pp {pp} stages need at least {pp} pieces, but the LM has "
                        f"{c['layers'] + 2} (embedding, --layers {c['layers']} blocks, head); "
                        f"use --layers {pp - 2} or more")
    if m < 1:
        problems.append(f"--microbatches {m} must be at least 1")
    elif dp >= 1 and c["batch"] % dp == 0 and (c["batch"] // dp) % m:
        problems.append(f"--batch {c['batch']} / --dp {dp} = {c['batch'] // dp} windows per "
                        f"dp rank do not split into --microbatches {m}; make it a multiple")
    if c["sp"] and (tp < 2 or c["seq"] % tp):
        problems.append(f"--sp shards the sequence over the tp ranks: it needs --tp 2 or more "
                        f"and --seq {c['seq']} a multiple of --tp {tp}")
    if c["overlap"] and (dp < 2 or pp != 1 or c["zero"] == 2):
        problems.append("--overlap issues the data-parallel gradient buckets during the "
                        "backward pass: it needs --dp 2 or more, --pp 1 and --zero 0 or 1 "
                        "(ZeRO-2 reduce-scatters the gradients after the backward)")
    if c["schedule"] not in SCHEDULES:
        problems.append(f"--schedule {c['schedule']!r} must be one of {', '.join(SCHEDULES)}")
    for key in ("steps", "batch", "seq", "dim", "layers", "heads", "log_every"):
        if c[key] < 1:
            problems.append(f"--{key} {c[key]} must be at least 1")
    if c["heads"] >= 1 and c["dim"] % c["heads"]:
        problems.append(f"--dim {c['dim']} is not a multiple of --heads {c['heads']}")
    if tp >= 1 and c["heads"] % tp:
        problems.append(f"--heads {c['heads']} (and so --dim {c['dim']}) must be a multiple "
                        f"of --tp {tp}: each tp rank computes heads / tp whole heads")
    if dp >= 1 and c["batch"] % dp:
        problems.append(f"--batch {c['batch']} must be a multiple of --dp {dp}: each dp rank "
                        f"takes batch / dp windows")
    text = len(load_text())
    if c["seq"] >= text:
        problems.append(f"--seq {c['seq']} is too long: the text has {text} bytes")
    if c["zero"] not in (0, 1, 2):
        problems.append(f"--zero {c['zero']} must be 0, 1 or 2")
    if c["optimizer"] not in ("adamw", "sgd"):
        problems.append(f"--optimizer {c['optimizer']!r} must be adamw or sgd")
    if not c["lr"] >= 0 or c["bucket_mb"] < 0:
        problems.append("--lr and --bucket-mb must be at least 0 (lr 0 computes every step "
                        "but leaves the parameters as they are: a step to time)")
    try:
        if not hal.isdtype(hal.dtype(c["dtype"]), "real floating"):
            problems.append(f"--dtype {c['dtype']} is not a floating dtype")
    except HalError as exc:
        problems.append(f"--dtype: {exc}")
    if problems:
        raise TrainConfigError("cannot train: " + "; ".join(problems))
    return c


def make_optimizer(c: Mapping) -> optim.Optimizer:
    """AdamW (or SGD) with a linear warmup over a tenth of the steps, then linear decay."""
    schedule = optim.LinearDecay(c["lr"], total_steps=c["steps"], warmup_steps=c["steps"] // 10)
    return optim.AdamW(schedule) if c["optimizer"] == "adamw" else optim.SGD(schedule)


def rank_device(spec: str | None, comm) -> hal.Device:
    """The device this rank computes on: hal's default for None, the named device for
    'backend:index', and for a backend name alone the device of this rank's place among the
    ranks on its node, modulo the backend's devices (four ranks on a 4-GPU node: 'cuda' is
    cuda:0..3). Collective over `comm` (the node's ranks are found by a split)."""
    from mpi4py import MPI

    if spec is None or ":" in spec:
        return hal.device(spec)
    local = comm.Split_type(MPI.COMM_TYPE_SHARED).Get_rank()
    names = hal.backend(spec).devices()
    if not names:
        raise TrainConfigError(f"--device {spec}: the {spec} backend has no device here; "
                               "`hal devices` lists the devices and says why")
    return hal.device(names[local % len(names)])


class Trainer:
    """One rank's training state for a config: the mesh (dp x pp x tp), the model
    (parallelized when tp > 1), the loss and its gradient (one `hal.jit` graph unless
    `eager`; with pp > 1 this rank's pipeline `stage`, whose parameters are `params`, its
    microbatches' forwards and backwards compiled graphs unless `eager`; with `overlap`
    an `OverlappedStep`, its pieces' likewise), the optimizer and the data-parallel
    gradient sync. Collective: every rank of `comm` builds it with the same config, then
    calls `step` together; `close()` (or a with block) frees the mesh."""

    def __init__(self, config: Mapping | None = None, comm=None):
        from mpi4py import MPI

        from .data_parallel import DataParallel
        from .mesh import Mesh

        comm = MPI.COMM_WORLD if comm is None else comm
        config = dict(config or {})
        check_same_on_every_rank(config, comm)
        self.config = c = check_config(config, comm.Get_size())
        self.dp, self.pp, self.tp = dp, pp, tp = c["dp"], c["pp"], c["tp"]
        self.mesh = Mesh((dp, pp, tp), ("dp", "pp", "tp"), comm, debug=c["debug"],
                         timeout=c["timeout"])  # first: a rank that fails below ends the job
        self.device = rank_device(c["device"], comm)
        self.mesh.place(self.device)
        single = LanguageModel(VOCAB, c["dim"], c["heads"], c["layers"], c["seq"],
                               dtype=hal.dtype(c["dtype"]), device=self.device,
                               seed=c["seed"])
        self.model = model = parallelize(single, self.mesh, "tp", sequence_parallel=c["sp"],
                                         partial_grads=True) if tp > 1 else single
        self.stage = pipeline(single, self.mesh, sequence_parallel=c["sp"],
                              jit=not c["eager"]) if pp > 1 else None

        def loss(params, ids, targets):
            return cross_entropy(model.call_with(params, ids), targets)

        def gradient(params, ids, targets):
            value, grads = ag.value_and_grad(loss)(params, ids, targets)
            return value, sum_partial_grads(model, grads) if tp > 1 else grads

        self.gradient = gradient if c["eager"] else hal.jit(gradient)
        self.optimizer = make_optimizer(c)
        self.data_parallel = (DataParallel(self.mesh, "dp", zero=c["zero"],
                                           bucket_bytes=int(c["bucket_mb"] * 2**20))
                              if dp > 1 else None)
        self.params = model.trainable()
        if self.stage is not None:
            self.params = {n: self.params[n] for n in self.stage.names if n in self.params}
        self.overlapped = OverlappedStep(single, self.mesh, self.data_parallel,
                                         sequence_parallel=c["sp"],
                                         jit=not c["eager"]) if c["overlap"] else None
        if self.data_parallel:
            self.params = self.data_parallel.broadcast(self.params)

    def batches(self, steps: int) -> Iterator[tuple[Tensor, Tensor]]:
        """This rank's (ids, targets) for `steps` steps: its dp slice of the seeded windows."""
        c = self.config
        return batches(steps, c["batch"], c["seq"], c["seed"], part=self.mesh.coords["dp"],
                       parts=self.dp, device=self.device)

    def step(self, ids: Tensor, targets: Tensor) -> float:
        """One training step on every rank; the loss before it (the mean over the batch)."""
        dp, averaged = self.data_parallel, self.overlapped is not None
        if averaged:
            value, grads = self.overlapped(self.params, ids, targets, cross_entropy)
        elif self.stage is None:
            value, grads = self.gradient(self.params, ids, targets)
        else:
            value, grads = self.stage.step(self.params, ids, targets, cross_entropy,
                                           microbatches=self.config["microbatches"],
                                           kind=self.config["schedule"])
        if dp is None:
            self.params = self.optimizer.step(self.params, grads)
        elif self.config["zero"]:
            self.params = dp.zero_step(self.optimizer, self.params, grads, averaged=averaged)
        else:
            self.params = self.optimizer.step(self.params, grads if averaged else dp.sync(grads))
        if self.stage is not None:  # after the dp sync, which the first stages start sooner
            value = self.mesh.comm("pp").bcast(value, root=self.pp - 1)
        value = float(value)
        return self.mesh.comm("dp").allreduce(value) / self.dp if self.dp > 1 else value

    def collective_seconds(self) -> float:
        """Seconds this rank has spent inside the mesh's collectives."""
        return float(sum(sum(g.seconds.values()) for g in self.mesh.groups.values()))

    def full_params(self) -> dict[str, Tensor]:
        """The whole model's parameters on this rank (its tp shards): with pp > 1 every
        stage's, gathered over the pp ranks (collective over them)."""
        if self.stage is None:
            return dict(self.params)
        device = next(iter(self.params.values())).device
        mine = {n: t.numpy() for n, t in self.params.items()}
        everyone = self.mesh.comm("pp").allgather(mine)
        return {n: hal.asarray(a, device=device) for part in everyone for n, a in part.items()}

    def close(self) -> None:
        """Free the mesh (its groups are unregistered)."""
        self.mesh.close()

    def __enter__(self) -> Trainer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def train(config: Mapping | None = None, *, comm=None,
          log: Callable[[str], None] | None = print) -> dict:
    """Train the LM as `config` says (keys of DEFAULTS) on the ranks of `comm` (an mpi4py
    communicator, default MPI.COMM_WORLD).

    Collective: every rank calls it with the same config. Returns the run: per-step loss
    (the mean over the whole batch) and seconds, the median seconds per step over the
    steps after the first and the tokens/s it gives, the share of those steps' time spent
    inside collectives, ranks, dp, tp, the config and a greedy sample. Rank 0 logs
    (`log`, None for quiet).
    """
    with Trainer(config, comm) as trainer:
        c = trainer.config
        say = log if trainer.mesh.rank == 0 and log else (lambda _: None)
        losses, seconds, communicating = [], [], 0.0
        for n, (ids, targets) in enumerate(trainer.batches(c["steps"])):
            start = time.perf_counter()
            losses.append(trainer.step(ids, targets))
            seconds.append(time.perf_counter() - start)
            if n == 0:  # the first step traces the graph: time the others
                communicating = -trainer.collective_seconds()
            if (n + 1) % c["log_every"] == 0 or n + 1 == c["steps"]:
                say(f"step {n + 1:5d}/{c['steps']}  loss {losses[-1]:.4f}  "
                    f"{seconds[-1] * 1e3:7.1f} ms")
        communicating += trainer.collective_seconds()
        trainer.model.update(trainer.full_params())
        sample = generate(trainer.model, c["prompt"], c["sample"]) if c["sample"] else ""
    timed = seconds[1:] or seconds
    per_step = float(np.median(timed))
    result = {
        "ranks": trainer.dp * trainer.pp * trainer.tp, "dp": trainer.dp, "pp": trainer.pp,
        "tp": trainer.tp, "device": trainer.device.name, "config": c,
        "jit": not c["eager"], "losses": losses, "step_seconds": seconds,
        "seconds_per_step": per_step, "tokens_per_second": c["batch"] * c["seq"] / per_step,
        "communication_share": communicating / sum(timed) if len(seconds) > 1 else None,
        "sample": sample,
    }
    say(summary(result))
    return result


def summary(result: Mapping) -> str:
    """The run in a few lines: loss first -> last, speed, communication share, sample."""
    share = result["communication_share"]
    lines = [
        f"trained {len(result['losses'])} steps on {result['ranks']} rank(s) (dp {result['dp']}"
        f" x pp {result.get('pp', 1)} x tp {result['tp']}, rank 0 on {result['device']}): "
        f"loss {result['losses'][0]:.4f} -> {result['losses'][-1]:.4f}",
        f"{result['tokens_per_second']:.0f} tokens/s, {result['seconds_per_step'] * 1e3:.1f} "
        f"ms/step (median)" + ("" if share is None else f", {share:.0%} of it in collectives"),
    ]
    if result["sample"]:
        lines.append(f"sample: {result['sample']!r}")
    return "\n".join(lines)

