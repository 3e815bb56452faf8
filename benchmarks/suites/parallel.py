"""Parallel suite: training steps of the byte-level LM over MPI ranks, all_reduce algorithms,
and the planner's projection for a 175B model.

The ranks are an MPI job (`mpiexec -n P python -m frontends.parallel.stepper CONFIG`)
started once per layout and driven through a pipe (`benchmarks.mpi_job`): one call of a
workload is one command, so the harness times a distributed step from outside, including
the pipe round trip and the ranks' wake-up (`command_floor`). The training steps' ranks
compute on the device under test (`hal train --device`: each rank opens it; collectives are
staged through host memory) under the run's fallback policy, so a device without kernels
for the step is skipped saying which op. Every device runs the layouts `ON_EVERY_DEVICE`;
the others and the bubble rows compare ways to communicate and run on cpu and cuda
(starting a job per layout and device costs a trace and its compile). The all_reduce rows
(MPI on host buffers) and the planner do not depend on the device and are measured under
the cpu backend only.

- `lm_step[layout]`: one step (loss, gradient, gradient sync, AdamW with lr 0, so the
  parameters stay as they are) of `frontends.parallel.LanguageModel` (dim 128, 2 layers, 4 heads,
  seq 64, batch 8, float32) under `hal.jit`; items are tokens, so items_per_s is tokens/s.
  Layouts: 1 rank; dp=2 (25 MiB buckets); dp=2 with bucketing off (one all_reduce per
  gradient); dp=2 with ZeRO-2; tp=2 (Megatron's split written as annotations), and with
  sequence parallelism (sp: reduce_scatter/all_gather in place of all_reduce, the partial
  gradients summed in one fused all_reduce); pp=2 (two
  pipeline stages, 4 microbatches, 1F1B and GPipe; a stage runs each microbatch's forward
  and backward as two compiled graphs, its VJP traced once and split at the cotangent), and
  1F1B op by op ("pp=2 eager"); dp=2 op by op ("dp=2 eager"); dp=2 with the gradient
  buckets issued during the backward pass, each piece's (the embedding, each block, the
  head) as soon as its backward has run, the pieces' forwards and backwards compiled
  graphs as a pipeline stage's ("dp=2 overlap": `frontends.parallel.overlap`). The output
  (the step's loss) is checked against the same model's loss on the whole batch in this
  process. Facts: the seconds rank 0 spends inside collectives and its collective calls,
  per step (over a few steps after the timing); tp=2 adds the lines of the single-device
  and parallel training scripts (the claim: -70% code).
- `all_reduce[bytes, algorithm]` on 2 ranks: allreduce (MPI's), rs_ag (reduce-scatter then
  all-gather), hierarchical (within the node, then among node leaders), and chosen (what
  the cost model, calibrated in the job at its first "chosen" call, picks for that size);
  checked by the exact sum. A call is `calls` all_reduces (64 at 64 KiB, 4 at 4 MiB, 1 at
  32 MiB, so that a command takes ~10 ms or more and its overhead stays small); items are
  all_reduces. `chosen` records as facts the algorithm chosen, the cost model's fits and
  its predicted time per algorithm.
- `pipeline_bubble[microbatches]`: one step of the pp=2 layout (1F1B) with m = 1, 4, 8
  microbatches; facts: each stage's measured bubble (the share of the step outside its
  forwards and backwards, from their timestamps; the median over a few steps) beside the
  formula (p-1)/(m+p-1), and each stage's sends and recvs per step against m (its one
  neighbour; 2m(p-1) of each over p stages). The formula assumes equal stages and free
  messages, but the last stage also holds the head and the loss: `uneven_formula` is the
  bubble the stages' measured work predicts (the slowest sets the pace:
  `pipeline.uneven_bubbles`); `handoff_wait` is the share of the step each stage spent
  waiting in its recvs (for the activations and gradients handed over). On 2 cores each
  stage competes with the driver.
- `command_floor`: a 4-byte all_reduce per command on the 2-rank job: what a command
  costs besides its work (0.5-0.6 ms here, 1% of a step).
- `gpt3_175b_plan[gpus]`: the planner (`frontends.parallel.planner`) searching the plans
  of GPT-3 175B on DGX A100 nodes (the time is the search's); its facts are the best plan
  and the naive one (data parallel only, one flat all-reduce per gradient tensor), with
  their days to train: a projection, not a measurement.

The report's "Parallel training" section reads scaling efficiency (tokens/s at 2 ranks /
(2 x at 1 rank)), the share of a step spent in collectives, bucketing on/off, ZeRO-2
against plain dp=2, overlap against the buckets after the backward, pp=2 as compiled
graphs against op by op, the cost model's choice against the best algorithm and the
projection from these records.
"""

from __future__ import annotations

import functools
import json

import numpy as np

import hal
from benchmarks.mpi_job import MpiJob
from benchmarks.workload import Case, Workload, only_on
from frontends.parallel import planner
from frontends.parallel.training_scripts import annotation_lines

MODEL = {"dim": 128, "layers": 2, "heads": 4, "seq": 64, "batch": 8, "dtype": "float32",
         "lr": 0.0, "sample": 0, "steps": 1000}
LAYOUTS = {
    "1 rank": {"dp": 1},
    "dp=2": {"dp": 2},
    "dp=2 buckets off": {"dp": 2, "bucket_mb": 0},
    "dp=2 zero=2": {"dp": 2, "zero": 2},
    "tp=2": {"dp": 1, "tp": 2},
    "tp=2 sp": {"dp": 1, "tp": 2, "sp": True},
    "dp=2 eager": {"dp": 2, "eager": True},
    "dp=2 overlap": {"dp": 2, "overlap": True},
    "pp=2": {"dp": 1, "pp": 2, "microbatches": 4},
    "pp=2 gpipe": {"dp": 1, "pp": 2, "microbatches": 4, "schedule": "gpipe"},
    "pp=2 eager": {"dp": 1, "pp": 2, "microbatches": 4, "eager": True},
}
ON_EVERY_DEVICE = ("1 rank", "dp=2", "dp=2 buckets off", "tp=2", "pp=2")
STRATEGY_BACKENDS = ("cpu", "cuda")  # where the other layouts and the bubble rows run
WHY_STRATEGIES = ("the other layouts compare ways to communicate (ZeRO, sp, overlap, "
                  "schedules), measured on the host and on GPUs; every device runs "
                  f"{', '.join(ON_EVERY_DEVICE)} (the utilisation and code claims' rows)")
BUBBLE_MICROBATCHES = (1, 4, 8)
SIZES = (64 * 2**10, 4 * 2**20, 32 * 2**20)  # bytes per rank
CALLS = {64 * 2**10: 64, 4 * 2**20: 4, 32 * 2**20: 1}  # all_reduces per command: >= ~10 ms
ALGORITHMS = ("allreduce", "rs_ag", "hierarchical", "chosen")
FACT_STEPS = 3  # steps whose collective seconds and calls make a step's facts
PLANNER_GPUS = (512, 1024, 3072)


def stepper_job(config: dict, fallback: str = "error") -> MpiJob:
    """An MPI job of `frontends.parallel.stepper` for one training config (keys of
    `trainer.DEFAULTS`; dp x pp x tp ranks), its ranks under the CPU-fallback policy."""
    return MpiJob("frontends.parallel.stepper", [json.dumps(config)],
                  config.get("dp", 1) * config.get("pp", 1) * config.get("tp", 1),
                  "parallel suite", env={"HAL_FALLBACK": fallback})


@functools.cache
def ranks(layout: str, device: str = "cpu:0", fallback: str = "error") -> MpiJob:
    """The running job of a layout with its ranks on `device` (started on first use, ended
    at exit)."""
    return stepper_job({**MODEL, **LAYOUTS[layout], "device": device}, fallback)


@functools.cache
def bubble_job(microbatches: int, device: str = "cpu:0", fallback: str = "error") -> MpiJob:
    """The running pp=2 job with `microbatches` microbatches on `device` (started on first
    use)."""
    return stepper_job({**MODEL, "dp": 1, "pp": 2, "microbatches": microbatches,
                        "device": device}, fallback)


def on_device(job, x: hal.Tensor, *key):
    """`job(*key)` with its ranks on x's device under the run's current fallback policy."""
    return job(*key, x.device.name, hal.settings.fallback)


def _bubble_step(microbatches: int):
    def run(x: hal.Tensor) -> hal.Tensor:
        loss = on_device(bubble_job, x, microbatches).request("step")["loss"]
        return hal.asarray(np.float64(loss), device=x.device)

    return run


def _bubble_facts(microbatches: int):
    """Each stage's measured bubble (median over FACT_STEPS steps), the formula, and the
    sends and recvs per step of each stage against the schedule's count."""

    def facts(x: hal.Tensor) -> dict[str, float | str]:
        job = on_device(bubble_job, x, microbatches)
        before = job.request("pipeline")
        rows, waited = [], before["recv_s"]
        for _ in range(FACT_STEPS):
            job.request("step")
            rows.append(job.request("pipeline"))
            rows[-1]["handoff"] = [(now - then) / rows[-1]["step_s"]
                                   for now, then in zip(rows[-1]["recv_s"], waited)]
            waited = rows[-1]["recv_s"]
        found: dict[str, float | str] = {"formula": rows[-1]["formula"],
                                         "reference_loss": single_loss()}
        for stage in range(len(rows[-1]["bubble"])):
            found[f"measured/stage{stage}"] = float(np.median([r["bubble"][stage]
                                                               for r in rows]))
            found[f"uneven_formula/stage{stage}"] = float(np.median([r["uneven"][stage]
                                                                     for r in rows]))
            found[f"handoff_wait/stage{stage}"] = float(np.median([r["handoff"][stage]
                                                                   for r in rows]))
            for kind in ("sends", "recvs"):
                found[f"{kind}_per_step/stage{stage}"] = \
                    (rows[-1][kind][stage] - before[kind][stage]) / FACT_STEPS
        found["p2p_per_step/formula"] = microbatches  # each of the 2 stages, each kind
        return found

    return facts


@functools.cache
def single_loss() -> float:
    """The model's loss on the whole first batch, on one device in this process."""
    from frontends.parallel import LanguageModel, batches, cross_entropy

    model = LanguageModel(256, MODEL["dim"], MODEL["heads"], MODEL["layers"], MODEL["seq"],
                          dtype=hal.dtype(MODEL["dtype"]), device="cpu", seed=0)
    ids, targets = next(batches(1, MODEL["batch"], MODEL["seq"], device="cpu"))
    return float(cross_entropy(model(ids), targets).numpy())


def _on_cpu(device) -> None:
    """Rows that do not depend on the device (MPI on host buffers, the planner) are measured
    once, under the cpu backend."""
    if device.backend.name != "cpu":
        raise hal.UnsupportedOp(f"MPI's collectives on host buffers and the planner do not "
                                f"depend on the device; measured under the cpu backend, not "
                                f"{device.name}")


def _step(layout: str):
    def run(x: hal.Tensor) -> hal.Tensor:
        loss = on_device(ranks, x, layout).request("step")["loss"]
        return hal.asarray(np.float64(loss), device=x.device)

    return run


def _step_facts(layout: str):
    """Rank 0's collective seconds and calls per step over FACT_STEPS steps, and the
    single-process loss the steps are checked against; tp=2 adds the training scripts'
    line counts."""

    def facts(x: hal.Tensor) -> dict[str, float | str]:
        job = on_device(ranks, x, layout)
        before = job.request("stats")
        for _ in range(FACT_STEPS):
            job.request("step")
        after = job.request("stats")
        found: dict[str, float | str] = {
            "reference_loss": single_loss(),
            "collective_s_per_step":
                (after["collective_seconds"] - before["collective_seconds"]) / FACT_STEPS,
            "collective_calls_per_step": (after["calls"] - before["calls"]) / FACT_STEPS}
        if LAYOUTS[layout].get("tp", 1) > 1:
            found |= {f"lines/{k}": v for k, v in annotation_lines().items()}
        return found

    return facts


def _all_reduce(nbytes: int, algorithm: str, calls: int):
    def run(x: hal.Tensor) -> hal.Tensor:
        _on_cpu(x.device)
        answer = on_device(ranks, x, "dp=2").request(f"all_reduce {nbytes} {algorithm} {calls}")
        return hal.asarray(np.float64(answer["checksum"]), device=x.device)

    return run


def _chosen_facts(nbytes: int):
    """The algorithm the cost model chooses for nbytes, its fits, and its predicted
    seconds per all_reduce of each algorithm."""

    def facts(x: hal.Tensor) -> dict[str, float | str]:
        job = on_device(ranks, x, "dp=2")
        found: dict[str, float | str] = {
            "chosen": job.request(f"all_reduce {nbytes} chosen 1")["algorithm"]}
        for row in job.request("stats")["cost_model"] or []:
            fit = f"model/{row['collective']}/{row['algorithm']}"
            found |= {f"{fit}/alpha_us": row["alpha_us"], f"{fit}/GB/s": row["GB/s"],
                      f"{fit}/sizes": row["sizes"]}
            if row["max_rel_err"] is not None:
                found[f"{fit}/max_rel_err"] = row["max_rel_err"]
            if row["collective"] == "all_reduce":
                found[f"predicted_s/{row['algorithm']}"] = (
                    row["alpha_us"] * 1e-6 + nbytes / (row["GB/s"] * 1e9))
        return found

    return facts


def _case(items: float, bytes_: float | None = None):
    return lambda dtype: Case([np.zeros(1, np.float32)], items=items, bytes=bytes_)


def _expected_sum(nbytes: int) -> float:
    """The exact sum of an all_reduce of nbytes on 2 ranks: ranks 0 and 1 send 1 and 2 in
    every float32 element."""
    return float(nbytes // 4 * 3)


def plan_facts(plan: dict, prefix: str) -> dict[str, float | str]:
    """A planner projection as facts named "<prefix>/<figure>"."""
    figures = {"dp": plan["dp"], "pp": plan["pp"], "tp": plan["tp"], "zero": plan["zero"],
               "bubble": plan["bubble"],
               "recompute": plan["recompute"], "global_batch": plan["global_batch"],
               "dp_algorithm": plan["dp_algorithm"] + ("" if plan["bucket"] else ", per tensor"),
               "step_s": plan["step_s"], "compute_s": plan["compute_s"],
               "tp_comm_s": plan["tp_comm_s"],
               "dp_comm_s": plan["dp_comm_s"] - plan["dp_hidden_s"],
               "comm_share": plan["comm_share"], "tokens_per_s": plan["tokens_per_s"],
               "days": plan["days"], "memory_gb_per_gpu": plan["memory_total"] / 1e9,
               "fits": "yes" if plan["fits"] else "no"}
    return {f"{prefix}/{k}": v for k, v in figures.items()}


def _plans(gpus: int) -> tuple[dict | None, dict]:
    """(the best fitting plan or None, the naive plan) of GPT-3 175B on `gpus` A100s."""
    cluster = planner.DGX_A100.with_gpus(gpus)
    ranked = planner.best(planner.GPT3_175B, cluster)
    return (ranked[0] if ranked else None), planner.naive(planner.GPT3_175B, cluster)


def plan_workload(gpus: int) -> Workload:
    """The planner's search for GPT-3 175B on `gpus` GPUs; facts: the best and naive plans."""

    def run(x: hal.Tensor) -> hal.Tensor:
        _on_cpu(x.device)
        best, naive = _plans(gpus)
        return hal.asarray(np.array([best["days"] if best else np.inf, naive["days"]]),
                           device=x.device)

    def reference(_x) -> np.ndarray:
        best, naive = _plans(gpus)
        return np.array([best["days"] if best else np.inf, naive["days"]])

    def facts(x: hal.Tensor) -> dict[str, float | str]:
        best, naive = _plans(gpus)
        found = {"label": "projection (not a measurement)", "model": planner.GPT3_175B.name,
                 "cluster": planner.DGX_A100.name,
                 "mfu": planner.DGX_A100.with_gpus(gpus).mfu, **plan_facts(naive, "naive")}
        return found | (plan_facts(best, "best") if best else {})

    return Workload(f"gpt3_175b_plan[{gpus}]", {"gpus": gpus, "model": "GPT-3 175B"},
                    ["float64"], _case(1), run, reference, facts=facts)


def workloads() -> list[Workload]:
    """One step per layout; all_reduce per size and algorithm at 2 ranks, and the floor of
    a command; the planner's projection per GPU count."""
    tokens = MODEL["batch"] * MODEL["seq"]
    shape = {k: MODEL[k] for k in ("dim", "layers", "heads", "seq", "batch")}
    found = [Workload(
        "lm_step", {"layout": layout, **LAYOUTS[layout], **shape}, ["float32"],
        _case(tokens), _step(layout), lambda _x: np.float64(single_loss()),
        tolerance_scale=10.0, facts=_step_facts(layout))
        for layout in LAYOUTS]
    found = [w if w.params["layout"] in ON_EVERY_DEVICE
             else only_on(w, STRATEGY_BACKENDS, WHY_STRATEGIES) for w in found]
    for nbytes in SIZES:
        for algorithm in ALGORITHMS:
            found.append(Workload(
                "all_reduce", {"bytes": nbytes, "algorithm": algorithm, "ranks": 2,
                               "calls": CALLS[nbytes]},
                ["float32"], _case(CALLS[nbytes], 2 * nbytes * CALLS[nbytes]),
                _all_reduce(nbytes, algorithm, CALLS[nbytes]),
                functools.partial(lambda _x, e: np.float64(e), e=_expected_sum(nbytes)),
                facts=_chosen_facts(nbytes) if algorithm == "chosen" else None))
    for m in BUBBLE_MICROBATCHES:
        found.append(only_on(Workload(
            "pipeline_bubble", {"pp": 2, "microbatches": m, "schedule": "1f1b", **shape},
            ["float32"], _case(tokens), _bubble_step(m), lambda _x: np.float64(single_loss()),
            tolerance_scale=10.0, facts=_bubble_facts(m)), STRATEGY_BACKENDS, WHY_STRATEGIES))
    found.append(Workload("command_floor", {"bytes": 4, "algorithm": "allreduce", "ranks": 2},
                          ["float32"], _case(1), _all_reduce(4, "allreduce", 1),
                          lambda _x: np.float64(_expected_sum(4))))
    return found + [plan_workload(gpus) for gpus in PLANNER_GPUS]
