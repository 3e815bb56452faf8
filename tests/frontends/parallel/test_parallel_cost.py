"""The collective cost model (frontends.parallel.cost) and the step-time projection (planner)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from frontends.parallel import planner
from frontends.parallel.cost import ALGORITHMS, CostModel, fit
from frontends.parallel.planner import ClusterSpec, ModelSpec, project, ring
from hal import HalError

# ---------------------------------------------------------------- the alpha-beta model


def model_of(lines, **context):
    return CostModel({("all_reduce", a): ab for a, ab in lines.items()}, context or None)


def test_fit_recovers_alpha_beta_and_stays_non_negative():
    n = np.array([8, 512, 2**15, 2**20, 2**25], dtype=float)
    alpha, beta = fit(list(zip(n, 7e-6 + 2e-9 * n)))
    assert alpha == pytest.approx(7e-6, rel=1e-6) and beta == pytest.approx(2e-9, rel=1e-6)
    # unconstrained least squares would give a negative alpha here
    alpha, beta = fit([(1e3, 1e-6), (1e6, 2e-3), (1e7, 2e-2)])
    assert alpha == 0 and beta > 0


def test_predict_choose_and_crossovers_by_hand():
    cost = model_of({"allreduce": (10e-6, 1e-9), "rs_ag": (20e-6, 0.5e-9),
                     "hierarchical": (30e-6, 0.6e-9)})
    assert cost.predict("all_reduce", "rs_ag", 1000) == pytest.approx(20e-6 + 0.5e-6)
    # allreduce = rs_ag at 10e-6 / 0.5e-9 = 20000 bytes; hierarchical is never the cheapest
    assert cost.crossovers() == [(0.0, "allreduce"), (pytest.approx(20000), "rs_ag")]
    assert [cost.choose(n) for n in (0, 19_999, 20_001, 1e12)] == [
        "allreduce", "allreduce", "rs_ag", "rs_ag"]


def test_choose_breaks_an_equal_latency_by_bandwidth():
    cost = model_of({"allreduce": (0.0, 2e-9), "rs_ag": (0.0, 1e-9)})
    assert cost.crossovers() == [(0.0, "rs_ag")]


def test_choose_is_the_argmin_of_predict():
    rng = np.random.default_rng(0)
    sizes = np.geomspace(1, 1e9, 200)
    for _ in range(20):
        cost = model_of({a: (rng.uniform(0, 1e-4), rng.uniform(0, 1e-9)) for a in ALGORITHMS})
        for n in sizes:
            best = min(cost.predict("all_reduce", a, n) for a in ALGORITHMS)
            assert cost.predict("all_reduce", cost.choose(n), n) == pytest.approx(best)


def test_bad_fits_and_unknown_names_are_refused():
    with pytest.raises(HalError, match="all_reduce: allreduce, rs_ag, hierarchical"):
        CostModel({("all_reduce", "ring"): (1e-6, 1e-9)})
    with pytest.raises(HalError, match="non-negative"):
        CostModel({("all_gather", "mpi"): (1e-6, -1e-9)})
    cost = model_of({"allreduce": (1e-6, 1e-9)})
    with pytest.raises(HalError, match="no fit for collective 'all_gather'"):
        cost.choose(10, "all_gather")
    with pytest.raises(HalError, match=r"no fit for \('all_reduce', 'rs_ag'\)"):
        cost.predict("all_reduce", "rs_ag", 10)


def test_save_load_round_trip(tmp_path):
    cost = CostModel({("all_reduce", "allreduce"): (9e-6, 1.8e-9),
                      ("all_reduce", "rs_ag"): (15e-6, 1.1e-9),
                      ("all_to_all", "mpi"): (8e-6, 6e-10)},
                     {"ranks": 2, "nodes": 1, "hosts": ["h"]},
                     {("all_reduce", "allreduce"): [(8, 9.1e-6), (2**20, 1.9e-3)]})
    loaded = CostModel.load(cost.save(tmp_path / "sub" / "cost.json"))
    assert loaded.fits == cost.fits and loaded.context == cost.context
    assert loaded.samples[("all_reduce", "allreduce")] == [(8, 9.1e-6), (2**20, 1.9e-3)]
    assert loaded.crossovers() == cost.crossovers()
    assert json.loads((tmp_path / "sub" / "cost.json").read_text())["schema"] == (
        "hal.parallel.cost_model")
    rows = {(r["collective"], r["algorithm"]): r for r in loaded.table()}
    assert rows["all_reduce", "allreduce"]["alpha_us"] == pytest.approx(9.0)
    assert rows["all_reduce", "allreduce"]["max_rel_err"] == pytest.approx(max(
        abs(9e-6 + 1.8e-9 * n - t) / t for n, t in [(8, 9.1e-6), (2**20, 1.9e-3)]))


@pytest.mark.parametrize("text, message", [
    (None, "no such file.*python -m frontends.parallel.cost"),
    ("{not json", "cannot be read"),
    ('{"schema": "other"}', "is not a hal cost model"),
    ('{"schema": "hal.parallel.cost_model", "version": 99}', "version 99"),
    ('{"schema": "hal.parallel.cost_model", "version": 1, "fits": [{"collective": '
     '"all_reduce"}]}', "malformed.*KeyError"),
    ('{"schema": "hal.parallel.cost_model", "version": 1, "fits": [{"collective": '
     '"all_reduce", "algorithm": "allreduce", "alpha_s": -1, "beta_s_per_byte": 0}]}',
     "non-negative"),
])
def test_a_wrong_or_corrupt_file_names_itself(tmp_path, text, message):
    path = tmp_path / "cost.json"
    if text is not None:
        path.write_text(text)
    with pytest.raises(HalError, match=message) as error:
        CostModel.load(path)
    assert str(path) in str(error.value)


# ---------------------------------------------------------------- over real ranks

@pytest.mark.mpi
def test_run_every_algorithm_sums_over_ranks(run_ranks):
    out = run_ranks(2, '''
        import numpy as np
        from frontends.parallel.cost import ALGORITHMS, run
        from hal import HalError
        comm = MPI.COMM_WORLD
        alone = comm.Split(comm.rank, 0)  # one rank per "node": two leaders all-reduce
        cases = {"f64": lambda r: np.random.default_rng(r).standard_normal((3, 7)),
                 "i64": lambda r: np.arange(11, dtype=np.int64) * (r + 3) - 5,
                 "f32_0d": lambda r: np.float32(r + 0.5) * np.ones((), np.float32)}
        result = {}
        for name, make in cases.items():
            want = sum(make(r) for r in range(comm.size))
            for algorithm in ALGORITHMS:
                for node in (None, alone):
                    got = run(algorithm, comm, make(comm.rank), node)
                    key = f"{name} {algorithm} {'split' if node else 'shared'}"
                    result[key] = [got.shape == want.shape, got.dtype == want.dtype,
                                   float(np.max(np.abs(got - want)))]
        errors = []
        for call in (lambda: run("ring", comm, np.ones(2)),
                     lambda: run("rs_ag", comm, np.ones(2, bool)),
                     lambda: run("hierarchical", MPI.COMM_SELF, np.ones(2), comm)):
            try:
                call()
            except HalError as e:
                errors.append(str(e))
        emit({"result": result, "errors": errors})
    ''')
    for rank in out:
        for key, (shape_ok, dtype_ok, error) in rank["result"].items():
            assert shape_ok and dtype_ok, key
            assert error == 0 if "i64" in key else error < 1e-12, key
        ring_error, bool_error, node_error = rank["errors"]
        assert "unknown all-reduce algorithm 'ring'" in ring_error and "rs_ag" in ring_error
        assert "dtype bool" in bool_error
        assert "ranks outside the communicator" in node_error


@pytest.mark.mpi
def test_calibrate_and_load_or_calibrate(run_ranks, tmp_path):
    path, stale = tmp_path / "cost.json", tmp_path / "stale.json"
    out = run_ranks(2, f'''
        import json
        from frontends.parallel.cost import COLLECTIVES, CostModel, calibrate, load_or_calibrate
        comm = MPI.COMM_WORLD
        model = calibrate(comm, sizes=[8, 4096, 2**18], repeats=2)
        if comm.rank == 0:
            model.save({str(path)!r})
            data = model.to_json()
            data["context"]["ranks"] = 3  # measured elsewhere: to be recalibrated
            open({str(stale)!r}, "w").write(json.dumps(data))
        comm.Barrier()
        reused = load_or_calibrate(comm, path={str(path)!r})
        redone = load_or_calibrate(comm, path={str(stale)!r}, sizes=[8, 64], repeats=1)
        emit({{"fits": {{f"{{c}} {{a}}": ab for (c, a), ab in model.fits.items()}},
               "sizes": [n for n, _ in model.samples["all_reduce", "rs_ag"]],
               "context": model.context, "reused": reused.fits == model.fits,
               "redone_sizes": len(redone.samples["all_reduce", "allreduce"]),
               "redone_ranks": redone.context["ranks"],
               "choice": [model.choose(n) for n in (8, 2**18)]}})
    ''')
    assert out[0]["fits"] == out[1]["fits"]  # the max over ranks: one model everywhere
    assert len(out[0]["fits"]) == 6
    assert all(alpha >= 0 and beta >= 0 for alpha, beta in out[0]["fits"].values())
    assert out[0]["sizes"] == [8, 4096, 2**18]
    context = out[0]["context"]
    assert context["ranks"] == 2 and context["nodes"] == 1
    assert context["env"]["MPIR_CVAR_CH4_PROGRESS_THROTTLE"] == "1"
    assert all(o["reused"] for o in out)
    assert [o["redone_ranks"] for o in out] == [2, 2] and out[0]["redone_sizes"] == 2
    assert json.loads(stale.read_text())["context"]["ranks"] == 2  # rank 0 stored the new one
    assert set(out[0]["choice"]) <= set(ALGORITHMS)


# ---------------------------------------------------------------- the projection

TINY = ModelSpec("tiny", params=1e6, layers=2, hidden=64, heads=8, seq=16, vocab=100,
                 tokens=1e9)
TOY = ClusterSpec("toy", gpus=64, gpus_per_node=4, peak_flops=1e12, mfu=0.5, intra_bw=100e9,
                  intra_latency=0.0, inter_bw=10e9, inter_latency=0.0, memory=1e9)


def test_compute_term_is_6PT_over_N_peak_mfu():
    p = project(TINY, TOY, 2, 4, micro_batch=1, global_batch=8)
    assert p["label"] == "projection" and p["gpus"] == 8 and p["accumulation"] == 4
    assert p["compute_s"] == pytest.approx(6 * 1e6 * 8 * 16 / (8 * 1e12 * 0.5), rel=1e-12)
    full = project(TINY, TOY, 2, 4, micro_batch=1, global_batch=8, recompute="full")
    assert full["compute_s"] == pytest.approx(8 / 6 * p["compute_s"], rel=1e-12)
    assert p["tokens_per_s"] == pytest.approx(8 * 16 / p["step_s"])
    assert p["days"] == pytest.approx(1e9 / p["tokens_per_s"] / 86400)


def test_dp_term_scales_with_2_n_minus_1_over_n():
    grads = 1e6 / 4 * 2  # params / tp, 2 bytes each; one bucket; tp fills the node
    for dp in (2, 4, 16):
        p = project(TINY, TOY, dp, 4, micro_batch=1, global_batch=16, algorithm="flat")
        assert p["dp_comm_s"] == pytest.approx(2 * (dp - 1) / dp * grads / 10e9, rel=1e-12)
    zero2 = project(TINY, TOY, 16, 4, micro_batch=1, global_batch=16, zero=2)
    assert zero2["dp_comm_s"] == pytest.approx(p["dp_comm_s"])  # reduce-scatter + all-gather


def test_tp_beyond_a_node_moves_to_the_inter_node_link():
    activations = 1 * 16 * 64 * 2
    for tp, bw, link in ((4, 100e9, "intra"), (8, 10e9, "inter")):
        p = project(TINY, TOY, 2, tp, micro_batch=1, global_batch=2)
        assert p["tp_link"] == link
        assert p["tp_comm_s"] == pytest.approx(4 * 2 * 2 * (tp - 1) / tp * activations / bw)


def test_latency_per_message_without_buckets_and_hierarchical_choice():
    slow = ClusterSpec("slow", gpus=64, gpus_per_node=4, peak_flops=1e12, mfu=0.5,
                       intra_bw=100e9, intra_latency=1e-6, inter_bw=1e9, inter_latency=5e-6,
                       memory=1e9)
    grads, dp = 1e6 * 2, 16  # tp = 1: 4 dp ranks per node, 4 nodes
    p = project(TINY, slow, dp, 1, micro_batch=1, global_batch=16, bucket=False,
                algorithm="flat")
    messages = 2 * 12 + 4
    assert p["dp_comm_s"] == pytest.approx(messages * ring("all_reduce", grads / messages, dp,
                                                           5e-6, 1e9))
    assert p["dp_comm_s"] == pytest.approx(
        messages * 2 * (dp - 1) * 5e-6 + 2 * (dp - 1) / dp * grads / 1e9)
    h = project(TINY, slow, dp, 1, micro_batch=1, global_batch=16)
    assert h["dp_algorithm"] == "hierarchical"
    assert h["dp_comm_s"] == pytest.approx(ring("all_reduce", grads, 4, 1e-6, 100e9)
                                           + ring("all_reduce", grads / 4, 4, 5e-6, 1e9))
    assert h["dp_comm_s"] < project(TINY, slow, dp, 1, micro_batch=1, global_batch=16,
                                    algorithm="flat")["dp_comm_s"]


def test_memory_sharded_by_zero_and_does_not_fit_flagged():
    per = [project(TINY, TOY, 8, 2, micro_batch=1, global_batch=8, zero=z)["memory"]
           for z in (0, 1, 2)]
    weights = 1e6 / 2 * 2
    assert [m["weights"] for m in per] == [weights] * 3
    assert [m["grads"] for m in per] == [weights, weights, weights / 8]
    assert [m["optimizer"] for m in per] == [1e6 / 2 * 12, 1e6 / 2 * 12 / 8, 1e6 / 2 * 12 / 8]
    sbh = 16 * 64
    assert per[0]["activations"] == pytest.approx(2 * sbh * (10 + 24 / 2 + 5 * 8 * 16 / (64 * 2)))
    small = ClusterSpec(**{**TOY.__dict__, "memory": 1e6})
    assert not project(TINY, small, 8, 2, micro_batch=1, global_batch=8)["fits"]


def test_bad_plans_are_refused():
    with pytest.raises(HalError, match="dp x tp = 128 GPUs"):
        project(TINY, TOY, 32, 4, micro_batch=1, global_batch=32)
    with pytest.raises(HalError, match="not a multiple of dp"):
        project(TINY, TOY, 4, 4, micro_batch=1, global_batch=6)
    with pytest.raises(HalError, match="tp=3 does not divide"):
        project(TINY, TOY, 2, 3, micro_batch=1, global_batch=2)
    with pytest.raises(HalError, match="partly used"):
        project(TINY, TOY, 3, 2, micro_batch=1, global_batch=3)


def test_pipeline_bubble_messages_and_activations_per_schedule():
    flat = project(TINY, TOY, 2, 2, micro_batch=1, global_batch=8)
    one = project(TINY, TOY, 2, 2, pp=2, micro_batch=1, global_batch=8)
    gpipe = project(TINY, TOY, 2, 2, pp=2, micro_batch=1, global_batch=8, schedule="gpipe")
    assert one["microbatches"] == 4 and one["bubble"] == pytest.approx(1 / 5)
    assert one["compute_s"] == pytest.approx(flat["compute_s"] / 2)  # twice the GPUs
    assert one["bubble_s"] == pytest.approx(one["compute_s"] / 4)  # (p-1)/m of it
    assert one["bubble_s"] / (one["compute_s"] + one["bubble_s"]) == pytest.approx(one["bubble"])
    assert one["pp_comm_s"] == pytest.approx(2 * 1 * (16 * 64 * 2 / 2) / 100e9)  # tp*pp <= 4
    assert one["memory"]["weights"] == pytest.approx(flat["memory"]["weights"] / 2)
    per_stage = flat["memory"]["activations"] / 2
    assert (one["held_microbatches"], gpipe["held_microbatches"]) == (2, 4)
    assert one["memory"]["activations"] == pytest.approx(2 * per_stage)
    assert gpipe["memory"]["activations"] == pytest.approx(4 * per_stage)
    assert gpipe["step_s"] == pytest.approx(one["step_s"])
    assert planner.pipeline_bubble(4, 8) == pytest.approx(3 / 11)
    with pytest.raises(HalError, match="pp=3 must be at least 1, divide the 2 layers"):
        project(TINY, TOY, 2, 2, pp=3, micro_batch=1, global_batch=8)
    with pytest.raises(HalError, match="schedule 'zigzag'"):
        project(TINY, TOY, 2, 2, pp=2, micro_batch=1, global_batch=8, schedule="zigzag")


def test_sequence_parallel_shards_the_activations_between_split_layers_at_no_time_cost():
    plain = project(TINY, TOY, 2, 4, micro_batch=1, global_batch=8)
    sp = project(TINY, TOY, 2, 4, micro_batch=1, global_batch=8, sp=True)
    sbh = 16 * 64
    assert sp["memory"]["activations"] == pytest.approx(
        2 * sbh * (10 / 4 + 24 / 4 + 5 * 8 * 16 / (64 * 4)))
    assert plain["memory"]["activations"] - sp["memory"]["activations"] == pytest.approx(
        2 * sbh * (10 - 10 / 4))
    assert sp["step_s"] == plain["step_s"] and sp["sp"] and not plain["sp"]


def test_best_ranks_fitting_plans_first_and_fastest_first():
    plans = planner.best(TINY, TOY, global_batch=64)
    assert plans and all(p["gpus"] == 64 for p in plans)
    fits = [p["fits"] for p in plans]
    assert fits == sorted(fits, reverse=True)
    steps = [p["step_s"] for p in plans if p["fits"]]
    assert steps == sorted(steps)


def test_cluster_from_a_cost_model_reproduces_its_all_reduce():
    cost = CostModel({("all_reduce", "allreduce"): (12e-6, 2e-9)}, {"ranks": 4, "nodes": 1})
    cluster = ClusterSpec.from_cost_model(cost, peak_flops=1e11, mfu=0.5, memory=8e9)
    assert (cluster.gpus, cluster.gpus_per_node) == (4, 4)
    for n in (8, 1e6):
        assert ring("all_reduce", n, 4, cluster.intra_latency, cluster.intra_bw) == (
            pytest.approx(cost.predict("all_reduce", "allreduce", n)))


def test_cluster_from_a_cost_model_with_nccl_within_the_node():
    cost = CostModel({("all_reduce", "allreduce"): (12e-6, 2e-9)}, {"ranks": 4, "nodes": 2})
    host = ClusterSpec.from_cost_model(cost, peak_flops=1e11, mfu=0.5, memory=8e9)
    nccl = ClusterSpec.from_cost_model(cost, peak_flops=1e11, mfu=0.5, memory=8e9,
                                       intra_node="nccl")
    assert (nccl.inter_latency, nccl.inter_bw) == (host.inter_latency, host.inter_bw)
    alpha, beta = planner.ASSUMED_DEVICE_LIBRARIES["nccl"]
    for n in (8, 1e6):  # the assumed NCCL all-reduce of 2 GPUs, reproduced by the link
        assert ring("all_reduce", n, 2, nccl.intra_latency, nccl.intra_bw) == (
            pytest.approx(alpha + beta * n))
    with pytest.raises(HalError, match="intra_node='nvlink'; use mpi or one of nccl"):
        ClusterSpec.from_cost_model(cost, peak_flops=1e11, mfu=0.5, memory=8e9,
                                    intra_node="nvlink")


def test_gpt3_projection_and_the_printed_table(capsys):
    p = project(planner.GPT3_175B, planner.DGX_A100, 128, 8, micro_batch=1, global_batch=1536)
    assert p["compute_s"] == pytest.approx(6 * 175e9 * 1536 * 2048 / (1024 * 312e12 * 0.45))
    planner.main(["--gpus", "1024", "--top", "2"])
    printed = capsys.readouterr().out
    assert printed.startswith("projection (not a measurement): GPT-3 175B")
    assert '"175B: 21 -> 9 days"' in printed and "1024 GPUs:" in printed


def test_choose_follows_the_measured_medians_band_by_band():
    """rs_ag wins small and large but loses in the middle: no single line per algorithm can
    say so; the per-band lines through the medians can."""
    sizes = [1e3, 1e5, 1e6, 1e7]
    allreduce = [10e-6, 200e-6, 700e-6, 10e-3]
    rs_ag = [9e-6, 300e-6, 1e-3, 6e-3]
    fits = {("all_reduce", "allreduce"): fit(list(zip(sizes, allreduce))),
            ("all_reduce", "rs_ag"): fit(list(zip(sizes, rs_ag)))}
    samples = {("all_reduce", "allreduce"): list(zip(sizes, allreduce)),
               ("all_reduce", "rs_ag"): list(zip(sizes, rs_ag))}
    cost = CostModel(fits, None, samples)
    assert [cost.choose(n) for n in (500, 1e3, 1e5, 1e6, 1e7, 1e9)] == [
        "rs_ag", "rs_ag", "allreduce", "allreduce", "rs_ag", "rs_ag"]
    assert [a for _, a in cost.crossovers()] == ["rs_ag", "allreduce", "rs_ag"]
