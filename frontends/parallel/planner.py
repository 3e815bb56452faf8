"""Projected step time of data x pipeline x tensor parallel training: a model, not a
measurement.

`project(model, cluster, dp, tp, pp=..., ...)` adds up, per optimizer step, the compute
(from the FLOP count and an assumed model FLOP utilisation), the pipeline's bubble
((p-1)/(m+p-1) of the step idle) and stage-to-stage messages, Megatron tensor-parallel
all-reduces and the data-parallel gradient reduction (alpha-beta costs of ring and
hierarchical algorithms on the cluster's links), and the memory each GPU holds (the
activations of m microbatches under GPipe, at most p under 1F1B); `best` ranks the
dp x pp x tp x sp choices (sequence parallelism shards the activations between
tensor-parallel layers). ZeRO-3 is not modelled. Everything printed is labelled a
projection.

    python -m frontends.parallel.planner --gpus 512 1024 3072
"""

from __future__ import annotations

import argparse
import itertools
import math
from dataclasses import dataclass, replace

from tabulate import tabulate

from hal import HalError

from .cost import ASSUMED_DEVICE_LIBRARIES, CostModel

TENSORS_PER_LAYER = 12  # a GPT block: QKV, projection, 2 MLP weights, their 4 biases, 2 norms x 2
OTHER_TENSORS = 4  # token and position embeddings, the final norm's weight and bias
OPTIMIZER_BYTES = 12  # Adam in mixed precision: fp32 master weights, m and v per parameter
RECOMPUTE = ("none", "selective", "full")
SCHEDULES = ("1f1b", "gpipe")


@dataclass(frozen=True)
class ModelSpec:
    """A decoder-only transformer and how many tokens it trains on; `params` counts the
    embeddings (vocab is descriptive), dtype_bytes is 2 for 16-bit training."""

    name: str
    params: float
    layers: int
    hidden: int
    heads: int
    seq: int
    vocab: int
    dtype_bytes: int = 2
    tokens: float = 300e9


GPT3_175B = ModelSpec("GPT-3 175B", params=175e9, layers=96, hidden=12288, heads=96, seq=2048,
                      vocab=51200, tokens=300e9)
"""GPT-3 175B (Brown et al. 2020, tables 2.1 and 2.2): 96 layers, d_model 12288, 96 heads,
context 2048, trained on 300B tokens; 51200 is its vocabulary padded as Megatron-LM does."""


@dataclass(frozen=True)
class ClusterSpec:
    """GPUs, peak dense 16-bit FLOP/s and memory per GPU, an achievable model FLOP
    utilisation, and two links, each a per-step latency (s) and a per-GPU one-way
    bandwidth (bytes/s): within a node (NVLink) and between nodes (InfiniBand)."""

    name: str
    gpus: int
    gpus_per_node: int
    peak_flops: float
    mfu: float
    intra_bw: float
    intra_latency: float
    inter_bw: float
    inter_latency: float
    memory: float

    def with_gpus(self, gpus: int) -> ClusterSpec:
        """The same cluster with `gpus` GPUs."""
        return replace(self, gpus=gpus)

    @classmethod
    def from_cost_model(cls, cost: CostModel, *, peak_flops: float, mfu: float,
                        memory: float, name: str = "calibrated",
                        intra_node: str = "mpi") -> ClusterSpec:
        """The ranks a CostModel was calibrated on, as a cluster: the link whose ring
        all-reduce, 2(p-1) latency + 2(p-1)/p n / bw, equals its fitted "allreduce" alpha +
        beta n at p ranks, used within and between nodes alike; with intra_node="nccl" the
        link within a node is NCCL's instead (cost.ASSUMED_DEVICE_LIBRARIES: an
        assumption for 2 GPUs until calibrated on a GPU node), MPI's between nodes."""
        ranks, nodes = cost.context["ranks"], cost.context["nodes"]
        if ranks < 2:
            raise HalError(f"ClusterSpec.from_cost_model: the model was calibrated on {ranks} "
                           "rank; calibrate on 2 or more (mpiexec -n 2 ...)")
        if intra_node not in ("mpi", *ASSUMED_DEVICE_LIBRARIES):
            raise HalError(f"ClusterSpec.from_cost_model: intra_node={intra_node!r}; use mpi "
                           f"or one of {', '.join(ASSUMED_DEVICE_LIBRARIES)}")
        latency, bw = _ring_link(*cost.fits["all_reduce", "allreduce"], ranks)
        intra = (latency, bw) if intra_node == "mpi" else _ring_link(
            *ASSUMED_DEVICE_LIBRARIES[intra_node], 2)
        return cls(name, ranks, ranks // nodes, peak_flops, mfu, intra[1], intra[0], bw,
                   latency, memory)


DGX_A100 = ClusterSpec("DGX A100", gpus=1024, gpus_per_node=8, peak_flops=312e12, mfu=0.45,
                       intra_bw=300e9, intra_latency=2e-6, inter_bw=25e9, inter_latency=5e-6,
                       memory=80e9)
"""NVIDIA DGX A100 80GB nodes. Published (A100 and DGX A100 datasheets): 312 TFLOP/s dense
BF16 per GPU, 80 GB HBM2e, NVLink 3 at 600 GB/s per GPU both directions (300 one way), one
200 Gb/s HDR InfiniBand ConnectX-6 per GPU (25 GB/s). Assumed: MFU 0.45 (Megatron-LM,
Narayanan et al. SC'21, reports 52% of peak for a 1T-parameter model on 3072 GPUs, counting
recomputation), latencies 2 us (NVLink) and 5 us (InfiniBand) per ring step."""

H100_CLUSTER = ClusterSpec("DGX H100", gpus=1024, gpus_per_node=8, peak_flops=989e12, mfu=0.40,
                           intra_bw=450e9, intra_latency=2e-6, inter_bw=50e9,
                           inter_latency=5e-6, memory=80e9)
"""NVIDIA DGX H100 nodes. Published (H100 SXM and DGX H100 datasheets): 989 TFLOP/s dense
BF16 per GPU, 80 GB HBM3, NVLink 4 at 900 GB/s per GPU both directions (450 one way), one
400 Gb/s NDR InfiniBand ConnectX-7 per GPU (50 GB/s). Assumed: MFU 0.40, latencies 2 us
(NVLink) and 5 us (InfiniBand) per ring step."""

CLUSTERS = {"dgx-a100": DGX_A100, "h100": H100_CLUSTER}


def _ring_link(alpha: float, beta: float, ranks: int) -> tuple[float, float]:
    """(latency, bandwidth) of the link whose ring all-reduce over `ranks` takes alpha +
    beta n."""
    return alpha / (2 * (ranks - 1)), 2 * (ranks - 1) / (ranks * beta)


def ring(collective: str, nbytes: float, ranks: int, latency: float, bw: float) -> float:
    """Seconds of a ring `collective` ("all_reduce", "reduce_scatter" or "all_gather") of an
    nbytes buffer over `ranks`: (p-1) steps of latency + n/(p bw) each, twice for all_reduce
    (a reduce-scatter then an all-gather), i.e. 2(p-1)/p n / bw of transfer."""
    steps = (ranks - 1) * (2 if collective == "all_reduce" else 1)
    return steps * (latency + nbytes / ranks / bw)


def dp_collective(cluster: ClusterSpec, collective: str, nbytes: float, dp: int, tp: int,
                  algorithm: str) -> float:
    """Seconds of a data-parallel `collective` of nbytes over dp ranks whose tp-rank
    neighbours fill the node: "flat" is one ring over all dp ranks, on the inter-node link
    as soon as they span nodes; "hierarchical" a ring over the g dp ranks of a node plus one
    over the nodes on the n/g bytes each holds (all_reduce: reduce-scatter in the node,
    all-reduce across nodes, all-gather in the node)."""
    per_node = min(dp, max(1, cluster.gpus_per_node // tp))
    if algorithm == "flat":
        spans = dp > per_node
        return ring(collective, nbytes, dp,
                    *((cluster.inter_latency, cluster.inter_bw) if spans else
                      (cluster.intra_latency, cluster.intra_bw)))
    if algorithm == "hierarchical":
        return (ring(collective, nbytes, per_node, cluster.intra_latency, cluster.intra_bw)
                + ring(collective, nbytes / per_node, dp // per_node, cluster.inter_latency,
                       cluster.inter_bw))
    raise HalError(f"planner: unknown data-parallel algorithm {algorithm!r}; use flat or "
                   "hierarchical")


def bucket_bytes(model: ModelSpec, dp: int) -> float:
    """Bytes of one gradient bucket: max(40M, 1M * dp) parameters, Megatron-LM's default
    (larger buckets for larger dp keep the per-message latency of the ring amortised)."""
    return max(40e6, 1e6 * dp) * model.dtype_bytes


def flops_per_token(model: ModelSpec, recompute: str) -> float:
    """Training FLOPs per token: 6 * params; full recomputation repeats the forward pass
    (+2 * params); selective recomputes only attention's two s x s products (+4 layers s h)."""
    extra = {"none": 0.0, "selective": 4 * model.layers * model.seq * model.hidden,
             "full": 2 * model.params}[recompute]
    return 6 * model.params + extra


def activation_bytes(model: ModelSpec, tp: int, micro_batch: int, recompute: str,
                     sp: bool = False) -> float:
    """Activation memory per GPU for one micro-batch (Korthikanti et al. 2022, 16-bit):
    s b h (10 + 24/t + 5 a s / (h t)) bytes per layer, the 10 (layer norms, dropouts,
    residuals) divided by t too with sequence parallelism (`sp`); selective recomputation
    drops the 5 a s / (h t) of attention's s x s tensors; full recomputation keeps each
    layer's input (1/t of it with sp) and one layer's full set. Embeddings and logits are
    left out."""
    sbh = model.seq * micro_batch * model.hidden
    kept = sbh * (10 / (tp if sp else 1) + 24 / tp)
    layer = kept + sbh * 5 * model.heads * model.seq / (model.hidden * tp)
    if recompute == "full":
        return model.layers * sbh * model.dtype_bytes / (tp if sp else 1) + layer
    return model.layers * (kept if recompute == "selective" else layer)


def pipeline_bubble(pp: int, microbatches: int) -> float:
    """The idle share of a pipelined step, GPipe and 1F1B alike: (p-1)/(m+p-1)."""
    return (pp - 1) / (microbatches + pp - 1)


def held_microbatches(pp: int, microbatches: int, schedule: str) -> int:
    """Microbatches whose activations the first stage holds at once: all m under GPipe, at
    most p under 1F1B (1 without a pipeline: micro-batches accumulate one by one)."""
    if pp == 1:
        return 1
    return microbatches if schedule == "gpipe" else min(pp, microbatches)


def project(model: ModelSpec, cluster: ClusterSpec, dp: int, tp: int, *, micro_batch: int,
            global_batch: int, pp: int = 1, schedule: str = "1f1b", sp: bool = False,
            zero: int = 0,
            bucket: bool = True, overlap: float = 0.0, recompute: str = "none",
            algorithm: str | None = None) -> dict:
    """Projected time and memory of one optimizer step on dp x pp x tp GPUs (a dict;
    "label" is "projection").

    compute = flops_per_token * global_batch * seq / (dp pp tp peak mfu); `recompute` one of
    RECOMPUTE. Pipeline parallelism over pp stages of layers/pp layers, m = global_batch /
    (dp micro_batch) microbatches: the bubble adds compute (p-1)/m (the step's (p-1)/(m+p-1)
    idle), and the first microbatch's activations and the last one's gradients cross the
    p-1 stage boundaries on the critical path (2 (p-1) messages of micro_batch*seq*hidden/tp
    values, on the inter-node link when tp*pp spans nodes); `schedule` ("1f1b", "gpipe")
    sets the activations held (`held_microbatches`). Sequence parallelism (`sp`, tp > 1)
    shards the layer norms', dropouts' and residuals' activations over tp; its all_gather
    and reduce_scatter move what the all_reduce they replace moves, so the time is the
    same. Tensor parallelism: per layer of a stage and micro-batch, 2 forward and 2 backward ring
    all-reduces (2 more with full recomputation) of micro_batch*seq*hidden activations over
    tp ranks, on the intra-node link when tp <= gpus_per_node, else the inter-node link.
    Data parallelism: the params/tp gradients, in `bucket_bytes` buckets (bucket=False: one
    message per tensor, TENSORS_PER_LAYER a layer), by `algorithm` ("flat", "hierarchical";
    None: the cheaper); ZeRO 1 and 2 as a reduce-scatter plus an all-gather of the updated
    weights. `overlap` of the gradient reduction (all of it, or the reduce-scatter) hides
    behind the backward pass when bucketed. Memory per GPU: 16-bit weights and gradients,
    12 bytes of Adam state per parameter, optimizer state sharded over dp from ZeRO 1,
    gradients from ZeRO 2, and `activation_bytes` of a stage's layers times the microbatches
    held; "fits" if at most cluster.memory.
    """
    _check(model, cluster, dp, tp, micro_batch, global_batch, zero, overlap, recompute)
    _check_pipeline(model, cluster, dp, tp, pp, schedule)
    gpus = dp * tp * pp
    accumulation = global_batch // (dp * micro_batch)
    per_token = flops_per_token(model, recompute)
    compute = per_token * global_batch * model.seq / (gpus * cluster.peak_flops * cluster.mfu)
    backward = compute * (1 - 2 * model.params / per_token)
    bubble_s = compute * (pp - 1) / accumulation
    pp_inter = tp * pp > cluster.gpus_per_node
    pp_link = ((cluster.inter_latency, cluster.inter_bw) if pp_inter else
               (cluster.intra_latency, cluster.intra_bw))
    message = micro_batch * model.seq * model.hidden * model.dtype_bytes / tp
    pp_comm = 2 * (pp - 1) * (pp_link[0] + message / pp_link[1])

    tp_inter = tp > cluster.gpus_per_node
    tp_link = ((cluster.inter_latency, cluster.inter_bw) if tp_inter else
               (cluster.intra_latency, cluster.intra_bw))
    activations = micro_batch * model.seq * model.hidden * model.dtype_bytes
    tp_comm = ((6 if recompute == "full" else 4) * model.layers // pp * accumulation
               * ring("all_reduce", activations, tp, *tp_link))

    grads = model.params / (tp * pp) * model.dtype_bytes
    messages = (math.ceil(grads / bucket_bytes(model, dp)) if bucket else
                model.layers // pp * TENSORS_PER_LAYER + OTHER_TENSORS)
    algorithms = (algorithm,) if algorithm else ("flat", "hierarchical")
    reduction = ("all_reduce",) if zero == 0 else ("reduce_scatter", "all_gather")
    times = {a: [messages * dp_collective(cluster, c, grads / messages, dp, tp, a)
                 for c in reduction] for a in algorithms}
    dp_algorithm = min(times, key=lambda a: sum(times[a]))
    dp_comm = sum(times[dp_algorithm])
    hidden = min(overlap * times[dp_algorithm][0], backward) if bucket else 0.0

    weights = model.params / (tp * pp) * model.dtype_bytes
    held = held_microbatches(pp, accumulation, schedule)
    memory = {"weights": weights, "grads": weights / (dp if zero >= 2 else 1),
              "optimizer": model.params / (tp * pp) * OPTIMIZER_BYTES / (dp if zero >= 1 else 1),
              "activations": activation_bytes(model, tp, micro_batch, recompute, sp)
              / pp * held}
    step = compute + bubble_s + pp_comm + tp_comm + dp_comm - hidden
    tokens_per_s = global_batch * model.seq / step
    return {
        "label": "projection", "model": model.name, "cluster": cluster.name, "gpus": gpus,
        "dp": dp, "tp": tp, "pp": pp, "sp": sp, "schedule": schedule, "microbatches": accumulation,
        "bubble": pipeline_bubble(pp, accumulation), "bubble_s": bubble_s,
        "pp_comm_s": pp_comm, "held_microbatches": held, "zero": zero,
        "recompute": recompute, "bucket": bucket,
        "overlap": overlap, "micro_batch": micro_batch, "global_batch": global_batch,
        "accumulation": accumulation, "tp_link": "inter" if tp_inter else "intra",
        "dp_algorithm": dp_algorithm, "compute_s": compute, "tp_comm_s": tp_comm,
        "dp_comm_s": dp_comm, "dp_hidden_s": hidden, "step_s": step,
        "tokens_per_s": tokens_per_s, "days": model.tokens / tokens_per_s / 86400,
        "comm_share": (pp_comm + tp_comm + dp_comm - hidden) / step,
        "memory": memory, "memory_total": sum(memory.values()),
        "fits": sum(memory.values()) <= cluster.memory,
    }


def _check_pipeline(model, cluster, dp, tp, pp, schedule):
    where = f"project({model.name}, dp={dp}, pp={pp}, tp={tp})"
    if pp < 1 or dp * tp * pp > cluster.gpus or model.layers % pp:
        raise HalError(f"{where}: pp={pp} must be at least 1, divide the {model.layers} "
                       f"layers, and dp x pp x tp = {dp * pp * tp} fit the cluster's "
                       f"{cluster.gpus} GPUs")
    node = cluster.gpus_per_node
    if dp * tp * pp > node and (dp * tp * pp) % node:
        raise HalError(f"{where}: dp*pp*tp={dp * pp * tp} leaves a node of {node} GPUs partly "
                       "used; make it a multiple of the GPUs per node")
    if schedule not in SCHEDULES:
        raise HalError(f"{where}: schedule {schedule!r} is not one of {', '.join(SCHEDULES)}")


def _check(model, cluster, dp, tp, micro_batch, global_batch, zero, overlap, recompute):
    where = f"project({model.name}, dp={dp}, tp={tp})"
    if dp < 1 or tp < 1 or dp * tp > cluster.gpus:
        raise HalError(f"{where}: dp x tp = {dp * tp} GPUs, the cluster {cluster.name} has "
                       f"{cluster.gpus}; choose dp, tp >= 1 with dp*tp <= {cluster.gpus}")
    if global_batch % (dp * micro_batch):
        raise HalError(f"{where}: global_batch {global_batch} is not a multiple of dp * "
                       f"micro_batch = {dp * micro_batch}; make it one")
    if model.heads % tp or model.hidden % tp:
        raise HalError(f"{where}: tp={tp} does not divide heads {model.heads} and hidden "
                       f"{model.hidden}; choose a divisor of both")
    node = cluster.gpus_per_node
    if (node % tp if tp < node else tp % node) or (dp * tp > node and (dp * tp) % node):
        raise HalError(f"{where}: tp={tp} or dp*tp={dp * tp} leaves a node of {node} GPUs "
                       "partly used by a group; choose tp dividing, or a multiple of, the GPUs "
                       "per node, and dp*tp a multiple of them")
    if zero not in (0, 1, 2) or not 0 <= overlap <= 1 or recompute not in RECOMPUTE:
        raise HalError(f"{where}: zero={zero}, overlap={overlap}, recompute={recompute!r}; "
                       f"zero is 0, 1 or 2, overlap a fraction in [0, 1], recompute one of "
                       f"{', '.join(RECOMPUTE)}")


def best(model: ModelSpec, cluster: ClusterSpec, *, micro_batch: int = 1,
         global_batch: int = 1536, overlap: float = 0.0, pipeline: bool = True) -> list[dict]:
    """Projections of every valid use of all the cluster's GPUs, tp and pp powers of two
    (pp 1 only without `pipeline`; 1F1B), sequence parallel or not, with ZeRO 0-2 and each
    kind of recomputation, bucketed; those that fit in memory first, each group fastest first."""
    plans = []
    powers = [2**k for k in range(cluster.gpus.bit_length())]
    for tp in powers:
        for pp in powers if pipeline else [1]:
            dp = cluster.gpus // (tp * pp)
            if dp * tp * pp != cluster.gpus:
                continue
            for zero, recompute, sp in itertools.product((0, 1, 2), RECOMPUTE,
                                                         (False, True) if tp > 1 else (False,)):
                try:
                    plans.append(project(model, cluster, dp, tp, pp=pp, sp=sp,
                                         micro_batch=micro_batch, global_batch=global_batch,
                                         zero=zero, overlap=overlap, recompute=recompute))
                except HalError:
                    continue  # this tp or pp does not divide the model, node or batch
    return sorted(plans, key=lambda p: (not p["fits"], p["step_s"], p["zero"],
                                        RECOMPUTE.index(p["recompute"]), not p["sp"]))


def naive(model: ModelSpec, cluster: ClusterSpec, *, micro_batch: int = 1,
          global_batch: int = 1536) -> dict:
    """The plan to beat: data parallel only over every GPU, one flat ring all-reduce per
    gradient tensor, no buckets, no ZeRO, no overlap; the global batch rounded up to a
    multiple of dp * micro_batch."""
    dp = cluster.gpus
    batch = -(-global_batch // (dp * micro_batch)) * dp * micro_batch
    return project(model, cluster, dp, 1, micro_batch=micro_batch, global_batch=batch,
                   bucket=False, algorithm="flat")


def table(projections: list[dict]) -> str:
    """The projections as a text table, one row each."""
    return tabulate([{
        "GPUs": p["gpus"], "dp": p["dp"], "pp": p["pp"], "tp": p["tp"],
        "sp": "yes" if p["sp"] else "no", "ZeRO": p["zero"],
        "recompute": p["recompute"], "batch": p["global_batch"],
        "dp algorithm": p["dp_algorithm"] + ("" if p["bucket"] else ", per tensor"),
        "step s": p["step_s"], "compute s": p["compute_s"], "bubble %": 100 * p["bubble"],
        "pp comm s": p["pp_comm_s"], "tp comm s": p["tp_comm_s"],
        "dp comm s": p["dp_comm_s"] - p["dp_hidden_s"], "comm %": 100 * p["comm_share"],
        "tokens/s": p["tokens_per_s"], "days": p["days"], "GB/GPU": p["memory_total"] / 1e9,
        "fits": "yes" if p["fits"] else "NO"} for p in projections],
        headers="keys", floatfmt=".3g", intfmt="d")


def main(argv=None) -> None:
    """Print the projected GPT-3 175B plans for several GPU counts and the speedup of the
    best fitting plan over the naive one."""
    parser = argparse.ArgumentParser(prog="python -m frontends.parallel.planner",
                                     description=main.__doc__)
    parser.add_argument("--gpus", type=int, nargs="+", default=[512, 1024, 3072])
    parser.add_argument("--cluster", choices=sorted(CLUSTERS), default="dgx-a100")
    parser.add_argument("--global-batch", type=int, default=1536, help="sequences per step")
    parser.add_argument("--micro-batch", type=int, default=1)
    parser.add_argument("--overlap", type=float, default=0.0,
                        help="fraction of the gradient reduction hidden behind backward")
    parser.add_argument("--top", type=int, default=3, help="plans shown per GPU count")
    args = parser.parse_args(argv)
    model, base = GPT3_175B, CLUSTERS[args.cluster]
    print(f"projection (not a measurement): {model.name} ({model.params:.3g} parameters, "
          f"{model.tokens:.3g} tokens) on {base.name} ({base.peak_flops / 1e12:.0f} TFLOP/s "
          f"per GPU at an assumed MFU of {base.mfu}, {base.gpus_per_node} GPUs per node, "
          f"{base.memory / 1e9:.0f} GB each); alpha-beta communication, dp x pp x tp with "
          "1F1B pipelines and sequence parallelism")
    speedups = []
    for gpus in args.gpus:
        cluster = base.with_gpus(gpus)
        plans = best(model, cluster, micro_batch=args.micro_batch,
                     global_batch=args.global_batch, overlap=args.overlap)
        baseline = naive(model, cluster, micro_batch=args.micro_batch,
                         global_batch=args.global_batch)
        print(f"\n{gpus} GPUs: the best {args.top} plans, then the naive one")
        print(table([*plans[:args.top], baseline]))
        if plans and plans[0]["fits"]:
            speedups.append(f"{gpus} GPUs: {baseline['days']:.3g} -> {plans[0]['days']:.3g} "
                            f"days ({baseline['days'] / plans[0]['days']:.2f}x)")
        else:
            speedups.append(f"{gpus} GPUs: no plan fits in memory")
    print('\nseed claim "175B: 21 -> 9 days" (2.33x). This projection, naive plan (dp only, '
          "flat per-tensor all-reduce, no buckets; it does not fit in memory and is timed as "
          "if it did) -> best fitting plan: " + "; ".join(speedups))


if __name__ == "__main__":
    main()
