"""Pipeline parallelism: schedules and their formulas, send/recv between real ranks, and
training over dp x pp x tp meshes equal to one process (float64, rtol 1e-10)."""

from __future__ import annotations

import pytest

from frontends import nn
from frontends.parallel.language_model import LanguageModel
from frontends.parallel.pipeline import (
    bubble,
    cut,
    held_activations,
    p2p_per_step,
    pieces,
    schedule,
    uneven_bubbles,
)
from hal import HalError


# -- without MPI ------------------------------------------------------------------------------
def test_1f1b_warms_up_then_alternates_and_gpipe_runs_every_forward_first():
    assert schedule("1f1b", 4, 0, 6) == [("F", 0), ("F", 1), ("F", 2), ("F", 3), ("B", 0),
                                         ("F", 4), ("B", 1), ("F", 5), ("B", 2), ("B", 3),
                                         ("B", 4), ("B", 5)]
    assert schedule("1f1b", 4, 3, 2) == [("F", 0), ("B", 0), ("F", 1), ("B", 1)]
    assert schedule("1f1b", 4, 0, 2) == [("F", 0), ("F", 1), ("B", 0), ("B", 1)]
    assert schedule("gpipe", 2, 1, 3) == [("F", 0), ("F", 1), ("F", 2), ("B", 0), ("B", 1),
                                          ("B", 2)]
    with pytest.raises(HalError, match="unknown schedule 'zigzag'"):
        schedule("zigzag", 2, 0, 1)


@pytest.mark.parametrize("kind", ["1f1b", "gpipe"])
@pytest.mark.parametrize("stages, microbatches", [(1, 1), (2, 1), (2, 4), (4, 8), (3, 2)])
def test_every_microbatch_runs_forward_then_backward_once(kind, stages, microbatches):
    for stage in range(stages):
        order = schedule(kind, stages, stage, microbatches)
        assert sorted(order) == sorted([(op, i) for op in "FB" for i in range(microbatches)])
        assert all(order.index(("F", i)) < order.index(("B", i)) for i in range(microbatches))


def test_activation_memory_gpipe_holds_all_microbatches_1f1b_at_most_the_stages():
    assert [held_activations("gpipe", 4, s, 8) for s in range(4)] == [8, 8, 8, 8]
    assert [held_activations("1f1b", 4, s, 8) for s in range(4)] == [4, 3, 2, 1]
    assert [held_activations("1f1b", 4, s, 2) for s in range(4)] == [2, 2, 2, 1]


def test_formulas():
    assert bubble(2, 1) == 0.5 and bubble(2, 4) == pytest.approx(0.2)
    assert bubble(4, 8) == pytest.approx(3 / 11) and bubble(1, 5) == 0.0
    assert uneven_bubbles([8.0, 8.0, 8.0], 4) == pytest.approx([bubble(3, 4)] * 3)
    # stage 1 takes 3 s a microbatch, stage 0 1 s: a step of 1 + 3 + 3 * 3 = 13 s
    assert uneven_bubbles([4.0, 12.0], 4) == pytest.approx([1 - 4 / 13, 1 - 12 / 13])
    assert p2p_per_step(1, 0, 4) == {"send": 0, "recv": 0}
    assert [p2p_per_step(3, s, 4)["send"] for s in range(3)] == [4, 8, 4]
    assert cut(4, 2) == [range(0, 2), range(2, 4)]
    assert cut(5, 3) == [range(0, 2), range(2, 4), range(4, 5)]
    with pytest.raises(HalError, match="4 pieces cannot make 5 stages"):
        cut(4, 5)


def test_the_lm_and_sequentials_are_chains_of_pieces():
    import hal

    model = LanguageModel(dim=8, heads=2, layers=2, seq=4, dtype=hal.float64, seed=0)
    chain = pieces(model)
    assert [p.paths for p in chain] == [("tokens", "positions"), ("blocks.0",), ("blocks.1",),
                                        ("norm", "head")]
    ids = hal.asarray([[1, 2, 3]])
    x = ids
    for piece in chain:
        x = piece.run(model, x)
    assert float(hal.max(hal.abs(x - model(ids)))) == 0.0
    assert [p.paths for p in pieces(nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2)))] == \
        [("0",), ("1",)]
    with pytest.raises(HalError, match="not a chain of pieces"):
        pieces(nn.Linear(2, 2))


@pytest.mark.parametrize("config, ranks, message", [
    ({"pp": 2, "tp": 2}, 2, "--pp 2 x --tp 2 = 4 does not divide the 2 rank(s)"),
    ({"dp": 2, "pp": 2}, 2, "--dp 2 x --pp 2 x --tp 1 = 4 ranks, but this job has 2"),
    ({"pp": 4, "layers": 1}, 4, "--pp 4 stages need at least 4 pieces, but the LM has 3"),
    ({"pp": 2, "batch": 6, "microbatches": 4}, 2, "6 windows per dp rank do not split into "
                                                  "--microbatches 4"),
    ({"pp": 2, "schedule": "zigzag"}, 2, "--schedule 'zigzag' must be one of 1f1b, gpipe"),
    ({"dp": 2, "overlap": True, "zero": 2}, 2, "--zero 0 or 1"),
])
def test_pipeline_configs_that_cannot_run_are_refused(config, ranks, message):
    from frontends.parallel.corpus import TrainConfigError
    from frontends.parallel.trainer import check_config

    with pytest.raises(TrainConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        check_config(config, ranks)
    assert check_config({"pp": 2}, 4)["dp"] == 2 and check_config({"pp": 2}, 4)["microbatches"] == 2


# -- on MPI ranks -----------------------------------------------------------------------------
TRAIN = '''
import numpy as np
import hal
from frontends import autograd as ag
from frontends.parallel.annotate import placements
from frontends.parallel.corpus import batches
from frontends.parallel.language_model import VOCAB, LanguageModel, cross_entropy
from frontends.parallel.pipeline import held_activations, p2p_per_step
from frontends.parallel.placement import Shard
from frontends.parallel.trainer import Trainer, make_optimizer

config = {"batch": 4, "seq": 8, "dim": 16, "heads": 2, "layers": 2, "dtype": "float64",
          "steps": STEPS, "lr": 1e-2, "sample": 0, **CONFIG}
with Trainer(config) as trainer:
    c = trainer.config
    single = LanguageModel(VOCAB, c["dim"], c["heads"], c["layers"], c["seq"],
                           dtype=hal.float64, seed=c["seed"])
    optimizer, params = make_optimizer(c), single.trainable()
    gradient = ag.value_and_grad(lambda p, i, t: cross_entropy(single.call_with(p, i), t))
    losses = []
    for (ids, targets), (all_ids, all_targets) in zip(
            trainer.batches(STEPS), batches(STEPS, c["batch"], c["seq"], c["seed"])):
        loss = trainer.step(ids, targets)
        value, grads = gradient(params, all_ids, all_targets)
        params = optimizer.step(params, grads)
        losses.append((loss, float(value)))
    where, coords = placements(trainer.model), trainer.mesh.coords
    worst = 0.0
    for name, mine in trainer.params.items():
        full = params[name].numpy()
        if isinstance(where[name], Shard):
            full = np.split(full, c["tp"], axis=where[name].dim)[coords["tp"]]
        worst = max(worst, float(np.max(np.abs(mine.numpy() - full)) / np.max(np.abs(full))))
    emit({"losses": losses, "worst": worst, "names": len(trainer.params),
          "counts": dict(trainer.mesh.groups["pp"].counts), "stage": coords["pp"],
          "collectives": {a: dict(g.counts) for a, g in trainer.mesh.groups.items()},
          "held": trainer.stage.held if trainer.stage else None,
          "graphs": len(trainer.stage.vjp.graphs) if trainer.stage else
                    [len(v.graphs) for v in trainer.overlapped.vjps] if trainer.overlapped
                    else None,
          "held_formula": held_activations(c["schedule"], c["pp"], coords["pp"],
                                           c["microbatches"]),
          "expected": {k: STEPS * n for k, n in p2p_per_step(
              c["pp"], coords["pp"], c["microbatches"]).items()}})
'''
ENV = {"HAL_DEVICE": "cpu", "HAL_THREADS": "1"}  # one BLAS thread a rank: 2 cores, up to 4 ranks


def _train(run_ranks, config: dict, steps: int = 3):
    ranks = config.get("dp", 1) * config.get("pp", 1) * config.get("tp", 1)
    code = TRAIN.replace("STEPS", str(steps)).replace("CONFIG", repr(config))
    return run_ranks(ranks, code, timeout=240, env=ENV)


def _jitted_and_eager(run_ranks, config: dict) -> list[tuple[dict, dict]]:
    """Each rank's (jitted, op-by-op) training runs of config, their losses checked equal to
    each other and to one process's, and their parameters to one process's."""
    pairs = list(zip(_train(run_ranks, config), _train(run_ranks, {**config, "eager": True}),
                     strict=True))
    for a, b in pairs:
        for (x, single), (y, _) in zip(a["losses"], b["losses"], strict=True):
            assert x == pytest.approx(single, rel=1e-10) and x == pytest.approx(y, rel=1e-10)
        assert a["worst"] < 1e-10 and b["worst"] < 1e-10
    return pairs


@pytest.mark.mpi
@pytest.mark.parametrize("layout", [(1, 2, 1), (1, 2, 2), (2, 2, 1)],
                         ids=["dp1-pp2-tp1", "dp1-pp2-tp2", "dp2-pp2-tp1"])
def test_pipeline_training_equals_one_process(run_ranks, layout):
    dp, pp, tp = layout
    out = _train(run_ranks, {"dp": dp, "pp": pp, "tp": tp, "microbatches": 2})
    stages = {}
    for rank in out:
        for split, single in rank["losses"]:
            assert split == pytest.approx(single, rel=1e-10)
        assert rank["worst"] < 1e-10
        assert rank["counts"] == rank["expected"] == {"send": 6, "recv": 6}
        stages.setdefault(rank["stage"], rank["names"])
    assert sorted(stages) == [0, 1] and sum(stages.values()) == 38  # every parameter, once


@pytest.mark.mpi
@pytest.mark.parametrize("kind", ["1f1b", "gpipe"])
@pytest.mark.parametrize("layout", [(1, 2, 1), (1, 2, 2)], ids=["pp2-tp1", "pp2-tp2"])
def test_jitted_stages_equal_op_by_op_stages_and_one_process(run_ranks, layout, kind):
    """A stage's forward and backward per microbatch as two compiled graphs (its VJP
    traced once, split at the cotangent) give the op-by-op stage's numbers."""
    dp, pp, tp = layout
    config = {"dp": dp, "pp": pp, "tp": tp, "microbatches": 2, "schedule": kind}
    for a, b in _jitted_and_eager(run_ranks, config):
        assert a["counts"] == b["counts"] == a["expected"]
        assert a["held"] == b["held"] == a["held_formula"]
        assert a["graphs"] == 1 and b["graphs"] == 0


@pytest.mark.mpi
def test_gpipe_and_1f1b_give_the_same_numbers(run_ranks):
    """Three stages, four microbatches: the schedules differ in order only."""
    config = {"pp": 3, "microbatches": 4, "layers": 1}
    one_f_one_b = _train(run_ranks, {**config, "schedule": "1f1b"}, steps=2)
    gpipe = _train(run_ranks, {**config, "schedule": "gpipe"}, steps=2)
    for a, b in zip(one_f_one_b, gpipe, strict=True):
        assert [x for x, _ in a["losses"]] == pytest.approx([x for x, _ in b["losses"]],
                                                            rel=1e-12)
        assert a["worst"] < 1e-10 and b["worst"] < 1e-10
        assert a["counts"] == b["counts"] == a["expected"]
        assert (a["held"], b["held"]) == (a["held_formula"], b["held_formula"])
    assert [r["counts"]["send"] for r in gpipe] == [8, 16, 8]  # 2 steps x 4 x neighbours
    assert [r["held"] for r in one_f_one_b] == [3, 2, 1]  # at most p - s
    assert [r["held"] for r in gpipe] == [4, 4, 4]  # every microbatch


@pytest.mark.mpi
def test_send_recv_between_ranks_in_a_jitted_graph(run_ranks):
    """A graph that receives, computes and sends carries the send/recv ops; a recv whose
    size differs from what was sent is a HalError naming both."""
    out = run_ranks(2, '''
import numpy as np
import hal
from frontends.parallel.mesh import Mesh
C = hal.collectives
with Mesh((2,), ("pp",)) as mesh:
    group, rank = mesh.group("pp"), mesh.rank
    x = hal.asarray(np.arange(6.0).reshape(2, 3) + 10 * rank)
    relay = hal.jit(lambda a: C.send(C.recv(a, group=group, peer=0) * 2.0, group=group, peer=0,
                                     tag=1))
    if rank == 0:
        C.send(x, group=group, peer=1)
        back = C.recv(x, group=group, peer=1, tag=1).numpy().tolist()
    else:
        relay(x)
        back = [n.op for n in relay.graph(x).nodes]
    mesh.groups["pp"].flush()
    error = ""
    if rank == 0:
        C.send(hal.zeros((5,), dtype=hal.float64), group=group, peer=1, tag=3)
    else:
        try:
            C.recv(hal.zeros((4,), dtype=hal.float64), group=group, peer=1 - rank, tag=3)
        except hal.HalError as e:
            error = str(e)
    mesh.comm("pp").Barrier()
    if rank == 1:
        C.recv(hal.zeros((5,), dtype=hal.float64), group=group, peer=0, tag=3)
    emit({"back": back, "error": error, "counts": dict(mesh.groups["pp"].counts)})
''', env=ENV)
    assert out[0]["back"] == [[0.0, 2.0, 4.0], [6.0, 8.0, 10.0]]
    assert out[1]["back"] == ["recv", "multiply", "send"]
    assert "expected recv float64(4)" in out[1]["error"] and "sent 40 bytes" in out[1]["error"]
    assert out[0]["counts"] == {"send": 2, "recv": 1}
    assert out[1]["counts"] == {"recv": 3, "send": 1}


@pytest.mark.mpi
def test_a_stage_that_fails_ends_the_job_with_its_reason(run_ranks):
    proc = run_ranks(2, '''
import hal
from frontends.parallel.pipeline import Stage
from frontends.parallel.trainer import Trainer
original = Stage.forward
def failing(self, params, x):
    if self.index == 1:
        raise RuntimeError("injected in stage 1")
    return original(self, params, x)
Stage.forward = failing
with Trainer({"pp": 2, "batch": 4, "seq": 8, "dim": 16, "heads": 2, "layers": 2}) as trainer:
    for ids, targets in trainer.batches(2):
        trainer.step(ids, targets)
''', env=ENV, timeout=120, expect_failure=True)
    assert proc.returncode != 0
    assert "rank 1 of 2: uncaught RuntimeError" in proc.stderr
    assert "injected in stage 1" in proc.stderr


# -- sequence parallel ------------------------------------------------------------------------
@pytest.mark.mpi
@pytest.mark.parametrize("layout", [(1, 1, 2), (1, 2, 2)], ids=["tp2-sp", "pp2-tp2-sp"])
def test_sequence_parallel_training_equals_one_process(run_ranks, layout):
    dp, pp, tp = layout
    out = _train(run_ranks, {"dp": dp, "pp": pp, "tp": tp, "sp": True, "microbatches": 2})
    for rank in out:
        for split, single in rank["losses"]:
            assert split == pytest.approx(single, rel=1e-10)
        assert rank["worst"] < 1e-10
        assert {k: rank["counts"].get(k, 0) for k in ("send", "recv")} == rank["expected"]


@pytest.mark.mpi
def test_sequence_parallel_collectives_are_megatrons_and_exact(run_ranks):
    """tp=2, three blocks, the collectives MPI ran. Forward, per block, attention and MLP
    each: without sp one all_reduce; with sp one all_gather of the sequence-sharded input
    (the first block's input, the embedding, is whole) and one reduce_scatter of the
    output; the logits gathered once at the end. Backward, the conjugate: each
    reduce_scatter's VJP all-gathers (6) and each gather's reduce-scatters (5); the first
    block's whole input all-reduces its cotangent (f) and the embedding's split along the
    sequence all-gathers; the replicated parameters on sequence shards (layer norms, row
    biases, the head: 20) all-reduce their gradients one by one, or with partial_grads in
    one fused all_reduce. Loss and gradients equal one process's (fp64)."""
    out = run_ranks(2, '''
import numpy as np
import hal
from frontends import autograd as ag
from frontends.parallel.annotate import parallelize, placements, sum_partial_grads
from frontends.parallel.corpus import batches
from frontends.parallel.language_model import LanguageModel, cross_entropy
from frontends.parallel.mesh import Mesh
from frontends.parallel.placement import Shard
with Mesh((2,), ("tp",)) as mesh:
    wire = mesh.groups["tp"].counts
    model = LanguageModel(dim=16, heads=2, layers=3, seq=8, dtype=hal.float64, seed=0)
    ids, targets = next(batches(1, 2, 8))
    loss = lambda m: lambda p: cross_entropy(m.call_with(p, ids), targets)
    value, grads = ag.value_and_grad(loss(model))(model.trainable())
    found = {}
    for name, sp, partial in (("tp", False, False), ("sp", True, False),
                              ("sp partial", True, True)):
        tp = parallelize(model, mesh, sequence_parallel=sp, partial_grads=partial)
        before = dict(wire)
        loss(tp)(tp.trainable())
        forward = {op: n - before.get(op, 0) for op, n in wire.items()}
        before = dict(wire)
        v, g = ag.value_and_grad(loss(tp))(tp.trainable())
        if partial:
            g = sum_partial_grads(tp, g)
        backward = {op: n - before.get(op, 0) - forward.get(op, 0) for op, n in wire.items()}
        where, worst = placements(tp), 0.0
        for n, full in grads.items():
            full = full.numpy()
            if isinstance(where[n], Shard):
                full = np.split(full, 2, axis=where[n].dim)[mesh.rank]
            # relative to max |full|, to 1e-3 where it is ~0 (a key bias's gradient)
            worst = max(worst, float(abs(g[n].numpy() - full).max()
                                     / max(abs(full).max(), 1e-3)))
        found[name] = {"forward": {k: n for k, n in forward.items() if n},
                       "backward": {k: n for k, n in backward.items() if n},
                       "loss": abs(float(v.numpy()) / float(value.numpy()) - 1), "grads": worst,
                       "partial": len(tp._plan.partial)}
    odd = ids[:, :7]  # a sequence that does not divide over the ranks is summed whole
    sp_odd = parallelize(model, mesh, sequence_parallel=True)(odd).numpy()
    single = model(odd).numpy()
    found["odd_error"] = float(abs(sp_odd - single).max() / abs(single).max())
    emit(found)
''', env=ENV)
    for rank in out:
        assert rank["tp"]["forward"] == {"all_reduce": 6}
        assert rank["tp"]["backward"] == {"all_reduce": 6}  # each block's two f's
        for sp in ("sp", "sp partial"):
            assert rank[sp]["forward"] == {"reduce_scatter": 6, "all_gather": 6}
        assert rank["sp"]["backward"] == {"all_gather": 7, "reduce_scatter": 5,
                                          "all_reduce": 1 + 20}
        assert rank["sp partial"]["backward"] == {"all_gather": 7, "reduce_scatter": 5,
                                                  "all_reduce": 1 + 1}
        assert rank["sp partial"]["partial"] == 20 and rank["sp"]["partial"] == 0
        for name in ("tp", "sp", "sp partial"):
            assert rank[name]["loss"] < 1e-12 and rank[name]["grads"] < 1e-10, name
        assert rank["odd_error"] < 1e-12


@pytest.mark.mpi
def test_partial_grads_refuse_a_parameter_used_split_and_whole(run_ranks):
    """A layer norm applied to the whole input and again to the sequence-sharded output
    would have a gradient part partial, part whole: a HalError naming it; and
    sum_partial_grads of a model parallelized without partial_grads is refused."""
    out = run_ranks(2, '''
import numpy as np
import hal
from frontends import nn
from frontends.parallel.annotate import parallel, parallelize, sum_partial_grads
from frontends.parallel.mesh import Mesh

class Twice(nn.Layer):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(8, dtype=hal.float64)
        self.fc1 = parallel(nn.Linear(8, 16, dtype=hal.float64, seed=1), split_dim=1)
        self.fc2 = parallel(nn.Linear(16, 8, dtype=hal.float64, seed=2), split_dim=0)
    def forward(self, x):
        return self.norm(x + self.fc2(self.fc1(self.norm(x))))

with Mesh((2,), ("tp",)) as mesh:
    x = hal.asarray(np.random.default_rng(0).standard_normal((2, 4, 8)))
    errors = []
    try:
        parallelize(Twice(), mesh, sequence_parallel=True, partial_grads=True)(x)
    except hal.HalError as e:
        errors.append(str(e))
    plain = parallelize(Twice(), mesh, sequence_parallel=True)
    try:
        sum_partial_grads(plain, plain.trainable())
    except hal.HalError as e:
        errors.append(str(e))
    emit(errors)
''', env=ENV)
    for mixed, plain in out:
        assert "norm.weight" in mixed and "without partial_grads" in mixed
        assert "not parallelized with partial_grads=True" in plain


# -- gradient buckets overlapped with the backward pass ---------------------------------------
@pytest.mark.mpi
@pytest.mark.parametrize("zero", [0, 1], ids=["dp2", "dp2-zero1"])
def test_jitted_overlap_equals_op_by_op_overlap_and_one_process(run_ranks, zero):
    """Each piece's forward and backward as two compiled graphs (its VJP traced once,
    split at the cotangent) give the op-by-op pieces' numbers and collectives; overlap
    composes with ZeRO-1 (the averaged gradients' shard)."""
    config = {"dp": 2, "overlap": True, "bucket_mb": 0.001, "zero": zero}
    for a, b in _jitted_and_eager(run_ranks, config):
        assert a["collectives"] == b["collectives"]
        assert a["graphs"] == [1, 1, 1, 1] and b["graphs"] == [0, 0, 0, 0]


@pytest.mark.mpi
@pytest.mark.parametrize("zero, overlap", [(0, True), (1, False), (1, True)],
                         ids=["overlap", "zero1-after-backward", "zero1-overlap"])
def test_dp2_tp2_sp_trains_as_one_process(run_ranks, zero, overlap):
    """Four ranks, every dimension but pp: sequence-parallel tp=2 inside (each piece's
    partial gradients summed over tp before its buckets go over dp), optionally ZeRO-1 over
    dp=2 (AdamW on each rank's shard), the buckets issued after or during the backward."""
    out = _train(run_ranks, {"dp": 2, "tp": 2, "sp": True, "zero": zero, "overlap": overlap,
                             "bucket_mb": 0.001})
    for rank in out:
        for split, single in rank["losses"]:
            assert split == pytest.approx(single, rel=1e-10)
        assert rank["worst"] < 1e-10


@pytest.mark.mpi
@pytest.mark.parametrize("eager", [False, True], ids=["jit", "eager"])
def test_overlap_issues_each_pieces_buckets_before_the_backward_of_the_pieces_before_it(
        run_ranks, eager):
    out = run_ranks(2, """
import hal
from frontends.parallel.pipeline import SplitVJP
from frontends.parallel.trainer import Trainer
config = {"dp": 2, "overlap": True, "batch": 4, "seq": 8, "dim": 16, "heads": 2, "layers": 2,
          "dtype": "float64", "eager": EAGER}
log = []
vjp = SplitVJP.__call__
def logged_vjp(self, *args):
    y, back = vjp(self, *args)
    piece = len([e for e in log if e[0] == "forward"])
    log.append(("forward", piece))
    def logged_back(ct):
        log.append(("backward", piece))
        return back(ct)
    return y, logged_back
SplitVJP.__call__ = logged_vjp
with Trainer(config) as trainer:
    dp = trainer.data_parallel
    start = dp.start
    def logged_start(grads):
        log.append(("start", sorted({n.split(".")[0] for n in grads})))
        return start(grads)
    dp.start = logged_start
    ids, targets = next(trainer.batches(1))
    trainer.step(ids, targets)
    emit({"log": log, "issued": trainer.mesh.groups["dp"].counts["iall_reduce"]})
""".replace("EAGER", str(eager)), env=ENV)
    for rank in out:
        log = [tuple(e) if e[0] != "start" else ("start", tuple(e[1])) for e in rank["log"]]
        assert log == [("forward", 0), ("forward", 1), ("forward", 2), ("forward", 3),
                       ("backward", 3), ("start", ("head", "norm")),
                       ("backward", 2), ("start", ("blocks",)),
                       ("backward", 1), ("start", ("blocks",)),
                       ("backward", 0), ("start", ("positions", "tokens"))]
        assert rank["issued"] == 4  # one bucket (of 25 MiB at most) per piece


@pytest.mark.mpi
def test_an_overlapped_piece_that_fails_ends_the_job_with_its_reason(run_ranks):
    proc = run_ranks(2, '''
from frontends.parallel import trainer as module
from frontends.parallel.trainer import Trainer
from mpi4py import MPI
original = module.cross_entropy
def failing(logits, targets):  # traced into the head's piece
    if MPI.COMM_WORLD.Get_rank() == 1:
        raise RuntimeError("injected in the head's piece")
    return original(logits, targets)
module.cross_entropy = failing
with Trainer({"dp": 2, "overlap": True, "batch": 4, "seq": 8, "dim": 16, "heads": 2,
              "layers": 2}) as trainer:
    for ids, targets in trainer.batches(2):
        trainer.step(ids, targets)
''', env=ENV, timeout=120, expect_failure=True)
    assert proc.returncode != 0
    assert "rank 1 of 2: uncaught RuntimeError" in proc.stderr
    assert "injected in the head's piece" in proc.stderr


def test_the_four_d_script_is_counted():
    from frontends.parallel.training_scripts import four_d_lines

    # differing: the imports (2), mesh, pipeline, DataParallel, the stage's parameters, the
    # batch slice, stage.step in place of the jitted gradient, dp.sync, the last stage printing
    assert four_d_lines() == {"single_device_lines": 14, "four_d_lines": 14,
                              "four_d_lines_differing": 10}


@pytest.mark.mpi
def test_the_four_d_script_trains_as_the_single_device_one(run_ranks):
    out = run_ranks(4, """
import contextlib, io
from frontends.parallel.training_scripts import FOUR_D, SINGLE_DEVICE
printed = {}
for name, script in (("single", SINGLE_DEVICE), ("four_d", FOUR_D)):
    with contextlib.redirect_stdout(io.StringIO()) as captured:
        exec(script, {"__name__": name})
    printed[name] = [float(v) for v in captured.getvalue().split()]
emit(printed)
""", env=ENV, timeout=300)
    for rank, printed in enumerate(out):
        assert len(printed["single"]) == 20
        assert len(printed["four_d"]) == (20 if rank >= 2 else 0)  # (pp, tp) = (1, *) print
        if printed["four_d"]:
            assert printed["four_d"] == pytest.approx(printed["single"], rel=1e-4)
