"""`hal train`: the byte-level LM learns, parallel runs reproduce the one-rank losses, bad
options end the job with a message, and the single-device and parallel scripts agree."""

from __future__ import annotations

import argparse
import math

import numpy as np
import pytest

import hal
from frontends.parallel.corpus import TrainConfigError, batches
from frontends.parallel.language_model import LanguageModel, cross_entropy, generate
from frontends.parallel.train import register, run
from frontends.parallel.trainer import check_config, check_same_on_every_rank
from frontends.parallel.training_scripts import annotation_lines, side_by_side

CPU = {"HAL_DEVICE": "cpu"}  # no probing of the other backends in the ranks
TINY = {"steps": 3, "batch": 4, "seq": 16, "dim": 32, "heads": 2, "layers": 1, "lr": 1e-2,
        "sample": 8, "log_every": 1}


# -- without MPI ------------------------------------------------------------------------------
def test_cross_entropy_is_the_mean_negative_log_likelihood():
    rng = np.random.default_rng(0)
    logits, targets = rng.standard_normal((2, 3, 5)), rng.integers(0, 5, (2, 3))
    log_p = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    expected = -np.take_along_axis(log_p, targets[..., None], -1).mean()
    got = cross_entropy(hal.asarray(logits), hal.asarray(targets))
    assert float(got) == pytest.approx(expected, rel=1e-12)


def test_batches_are_shifted_windows_split_over_parts():
    text = np.arange(50, dtype=np.uint8)
    (whole, after), = batches(1, 4, 6, seed=3, text=text)
    ids, targets = whole.numpy(), after.numpy()
    assert ids.shape == (4, 6) and np.array_equal(targets, ids + 1)
    assert np.array_equal(np.diff(ids, axis=1), np.ones((4, 5)))  # contiguous windows
    halves = [next(batches(1, 4, 6, seed=3, text=text, part=p, parts=2))[0].numpy()
              for p in (0, 1)]
    assert np.array_equal(np.concatenate(halves), ids)


def test_generate_is_greedy():
    model = LanguageModel(dim=16, heads=2, layers=1, seq=8, seed=1)
    bias = np.zeros(256, dtype=np.float32)
    bias[ord("x")] = 1e3  # every position's most likely next byte is "x"
    model.update({"head.bias": hal.asarray(bias)})
    assert generate(model, "memory", 12) == "memory" + "x" * 12  # windows past seq too


def test_bad_configs_are_refused_with_the_reason():
    cases = [({"dp": 2, "tp": 2}, 2, "--dp 2 x --tp 2 = 4 ranks, but this job has 2"),
             ({"tp": 2}, 1, "--tp 2 does not divide the 1 rank(s)"),
             ({"tp": 2, "heads": 3, "dim": 48}, 2, "--heads 3 (and so --dim 48) must be a "
                                                    "multiple of --tp 2"),
             ({"dim": 30, "heads": 4}, 1, "--dim 30 is not a multiple of --heads 4"),
             ({"batch": 3}, 2, "--batch 3 must be a multiple of --dp 2"),
             ({"seq": 10**6}, 1, "--seq 1000000 is too long"),
             ({"dtype": "int32"}, 1, "--dtype int32 is not a floating dtype"),
             ({"width": 3}, 1, "unknown key(s) width")]
    for config, ranks, message in cases:
        with pytest.raises(TrainConfigError) as caught:
            check_config(config, ranks)
        assert message in str(caught.value)
    assert check_config({"tp": 2}, 4)["dp"] == 2


class Gathered:
    """A stand-in communicator whose allgather returns the given configs, one per rank."""

    def __init__(self, *configs):
        self.configs = configs

    def allgather(self, mine):
        return [{**mine, **c} for c in self.configs]


def test_options_that_differ_across_ranks_are_named_with_each_rank_value():
    check_same_on_every_rank({"lr": math.nan}, Gathered({}, {}))  # equal, nan too
    with pytest.raises(TrainConfigError) as caught:
        check_same_on_every_rank({}, Gathered({"steps": 2}, {"steps": 3, "bucket_mb": 0.5},
                                              {"steps": 2, "width": 3}))
    assert str(caught.value) == (
        "cannot train: the ranks were given different options: --steps 2 on rank 0, 3 on "
        "rank 1, 2 on rank 2; --bucket-mb 25.0 on rank 0, 0.5 on rank 1, 25.0 on rank 2; "
        "--width unset on rank 0, unset on rank 1, 3 on rank 2; start every rank with the "
        "same ones")


def test_hal_train_is_a_subcommand():
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    args = parser.parse_args(["train", "--tp", "2", "--bucket-mb", "0.5", "--zero", "1"])
    assert args.func is run and (args.tp, args.bucket_mb, args.zero) == (2, 0.5, 1)


def test_annotation_lines_are_counted_honestly():
    counts = annotation_lines()
    # added: one import, the mesh, DataParallel; changed: parallelize, the batch slice,
    # dp.sync (the parallelized model is called as the model: model.call_with)
    # by hand: the groups, the shards, the forward with its collectives, the gradient mean
    assert counts == {"single_device_lines": 14, "parallel_lines": 17, "lines_differing": 6,
                      "model_annotation_lines": 6, "manual_lines": 55,
                      "manual_lines_differing": 45}
    assert "6 of 17 lines differ" in side_by_side()


# -- on MPI ranks -----------------------------------------------------------------------------
@pytest.mark.mpi
def test_tiny_model_learns_on_one_rank(run_ranks):
    out, = run_ranks(1, f'''
        from frontends.parallel.trainer import train
        r = train({{**{TINY!r}, "steps": 20}}, log=None)
        emit({{"losses": r["losses"], "tokens": r["tokens_per_second"]}})
    ''', env=CPU)
    losses = out["losses"]
    assert len(losses) == 20 and abs(losses[0] - math.log(256)) < 0.5  # about uniform at first
    assert np.mean(losses[-5:]) < losses[0] - 1.0
    assert out["tokens"] > 0


# Each rank trains the tiny config alone (COMM_SELF: the one-rank reference) and then on the
# whole job's layout: float64 AdamW through hal.jit (with tp the graph carries the
# collectives) and float32 SGD op by op.
PARALLEL_RUN = '''
from frontends.parallel.trainer import train
runs = {{}}
for dtype, optimizer, eager in (("float64", "adamw", False), ("float32", "sgd", True)):
    config = {{**{tiny!r}, "dtype": dtype, "optimizer": optimizer, "eager": eager,
              "sample": 8 if dtype == "float64" else 0}}
    one = train(config, comm=MPI.COMM_SELF, log=None)
    many = train({{**config, **{layout!r}}}, log=None)
    runs[dtype] = {{"one": one["losses"], "many": many["losses"], "samples":
                   [one["sample"], many["sample"]], "layout": [many["dp"], many["tp"]]}}
emit(runs)
'''


@pytest.mark.mpi
@pytest.mark.parametrize("ranks, layout", [
    (2, {"dp": 2}),
    (2, {"tp": 2}),
    pytest.param(4, {"dp": 2, "tp": 2}, marks=pytest.mark.slow),
], ids=["dp2", "tp2", "dp2xtp2"])
def test_parallel_losses_equal_one_rank(run_ranks, ranks, layout):
    out = run_ranks(ranks, PARALLEL_RUN.format(tiny=TINY, layout=layout), env=CPU)
    for runs in out:
        for dtype, rtol in (("float64", 1e-10), ("float32", 1e-5)):
            run = runs[dtype]
            assert run["layout"] == [layout.get("dp", 1), layout.get("tp", 1)]
            np.testing.assert_allclose(run["many"], run["one"], rtol=rtol)
        assert runs["float64"]["samples"][0] == runs["float64"]["samples"][1]


@pytest.mark.mpi
def test_bad_options_end_every_rank_with_the_message(run_ranks):
    proc = run_ranks(2, '''
        from frontends.parallel.train import main
        main(["--dp", "2", "--tp", "2", "--steps", "1"])
    ''', env=CPU, timeout=30, expect_failure=True)
    assert proc.returncode != 0
    message = "cannot train: --dp 2 x --tp 2 = 4 ranks, but this job has 2 (mpiexec -n 2)"
    assert proc.stderr.count(message) == 1  # said once, by rank 0


@pytest.mark.mpi
def test_options_differing_across_ranks_end_the_job_with_the_message(run_ranks):
    # without the comparison, rank 1 alone refuses float128 and waits while rank 0 goes on
    proc = run_ranks(2, '''
        from frontends.parallel.train import main
        rank = MPI.COMM_WORLD.Get_rank()
        main(["--steps", str(2 + rank), "--dtype", ["float32", "float128"][rank], "--timeout",
              "10", "--dim", "32", "--heads", "2", "--layers", "1", "--seq", "16"])
    ''', env=CPU, timeout=30, expect_failure=True)
    assert proc.returncode == 2, proc.stderr
    message = ("hal train: cannot train: the ranks were given different options: --steps 2 on "
               "rank 0, 3 on rank 1; --dtype 'float32' on rank 0, 'float128' on rank 1; start "
               "every rank with the same ones")
    assert proc.stderr.count(message) == 1  # said once, by rank 0


@pytest.mark.mpi
def test_single_device_and_parallel_scripts_agree(run_ranks):
    out = run_ranks(2, '''
        import contextlib, io
        from frontends.parallel.training_scripts import MANUAL, PARALLEL, SINGLE_DEVICE
        printed = {}
        for name, script in (("single", SINGLE_DEVICE), ("parallel", PARALLEL),
                             ("manual", MANUAL)):
            with contextlib.redirect_stdout(io.StringIO()) as captured:
                exec(script, {"__name__": name})
            printed[name] = [float(v) for v in captured.getvalue().split()]
        emit(printed)
    ''', env=CPU)
    for printed in out:
        assert len(printed["single"]) == 20
        np.testing.assert_allclose(printed["parallel"], printed["single"], rtol=1e-4)
        np.testing.assert_allclose(printed["manual"], printed["single"], rtol=1e-4)


@pytest.mark.mpi
def test_ranks_compute_on_the_named_device_and_match_one_cpu_rank(run_ranks):
    if "opencl" not in hal.available_backends():
        pytest.skip("no OpenCL device here (pip install -e '.[opencl]' brings PoCL)")
    out = run_ranks(2, f'''
        from frontends.parallel.trainer import rank_device, train
        config = {{**{TINY!r}, "dtype": "float64", "steps": 3, "sample": 0}}
        one = train({{**config, "device": "cpu:0"}}, comm=MPI.COMM_SELF, log=None)
        many = train({{**config, "dp": 2, "device": "opencl:0"}}, log=None)
        emit({{"one": one["losses"], "many": many["losses"], "device": many["device"],
               "by_backend": rank_device("cpu", MPI.COMM_WORLD).name}})
    ''', env=CPU)
    for rank in out:
        assert rank["device"] == "opencl:0" and rank["by_backend"] == "cpu:0"
        np.testing.assert_allclose(rank["many"], rank["one"], rtol=1e-10)


def test_a_device_that_is_not_here_is_refused_with_the_reason():
    from mpi4py import MPI

    from frontends.parallel.trainer import rank_device

    with pytest.raises(hal.HalError, match="nosuch"):
        rank_device("nosuch:0", MPI.COMM_SELF)
    with pytest.raises(hal.HalError, match="nosuch"):
        rank_device("nosuch", MPI.COMM_SELF)
