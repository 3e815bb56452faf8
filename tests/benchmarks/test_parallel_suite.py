"""The parallel suite's workloads, its MPI jobs on a tiny float64 model (losses equal the
single-process loss, exact all_reduce sums, a bad config reported), and the functions of
benchmarks.parallel_figures on those jobs."""

from __future__ import annotations

import itertools

import pytest

import hal
from benchmarks import parallel_figures as figures
from benchmarks.suites import parallel as suite
from benchmarks.timing import TimingOptions, measure
from frontends.parallel import cost

TINY_MODEL = {"dim": 32, "layers": 1, "heads": 2, "seq": 16, "batch": 4, "dtype": "float64"}
ONE_CALL = TimingOptions(warmup=0, min_samples=1, max_samples=1, sample_time=0.0, budget=0.0)


@pytest.fixture(scope="module")
def job():
    """job(layout): the suite's running job for a layout on the tiny model (started on first
    use; all closed after this module)."""
    started = {}

    def get(layout: str) -> suite.Ranks:
        try:
            started[layout] = suite.ranks(layout)
        except hal.UnsupportedOp as e:
            pytest.skip(str(e))
        return started[layout]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(suite, "MODEL", {**suite.MODEL, **TINY_MODEL})
        patch.setattr(suite, "REPLY_TIMEOUT_S", 60.0)
        suite.ranks.cache_clear()
        suite.single_loss.cache_clear()
        yield get
        for ranks in started.values():
            ranks.close()
        suite.ranks.cache_clear()
        suite.single_loss.cache_clear()


def test_the_suite_has_a_step_per_layout_and_all_reduce_per_size_and_algorithm():
    workloads = suite.workloads()
    steps = {w.params["layout"]: w for w in workloads if w.name == "lm_step"}
    assert list(steps) == list(suite.LAYOUTS)
    for layout, w in steps.items():
        assert w.params["dp"] * w.params.get("tp", 1) == (1 if layout == "1 rank" else 2)
        assert w.build("float32").items == suite.MODEL["batch"] * suite.MODEL["seq"]
    reductions = {(w.params["bytes"], w.params["algorithm"]) for w in workloads
                  if w.name == "all_reduce"}
    assert reductions == set(itertools.product(suite.SIZES, suite.ALGORITHMS))
    assert set(suite.ALGORITHMS) == {*cost.ALGORITHMS, "chosen"}
    assert {w.name for w in workloads} == {"lm_step", "all_reduce"}


@pytest.mark.mpi
@pytest.mark.parametrize("layout", ["dp=2", "tp=2"])
def test_a_two_rank_step_has_the_single_process_loss(job, layout):
    ranks = job(layout)
    assert (ranks.info["dp"], ranks.info["tp"]) == ((2, 1) if layout == "dp=2" else (1, 2))
    expected = suite.single_loss()
    losses = [ranks.request("step")["loss"] for _ in range(2)]  # lr 0: the same every step
    assert losses[0] == losses[1]
    assert abs(losses[0] - expected) <= 1e-12 * abs(expected)


@pytest.mark.mpi
def test_the_step_workload_is_checked_against_the_single_process_loss(job, cpu):
    job("dp=2")
    (workload,) = [w for w in suite.workloads()
                   if w.name == "lm_step" and w.params["layout"] == "dp=2"]
    record = measure(workload, "parallel", "float32", cpu, ONE_CALL)
    assert record.status == "ok", record.error
    assert record.check.passed and record.metrics["items_per_s"] > 0


@pytest.mark.mpi
def test_every_all_reduce_algorithm_sums_exactly(job):
    ranks = job("dp=2")
    nbytes = 4100  # 1025 float32 elements: an odd count over 2 ranks
    for algorithm in suite.ALGORITHMS:
        answer = ranks.request(f"all_reduce {nbytes} {algorithm}")
        assert answer["checksum"] == 1025 * (1 + 2)
        assert answer["algorithm"] == algorithm or (
            algorithm == "chosen" and answer["algorithm"] in cost.ALGORITHMS)


@pytest.mark.mpi
def test_a_job_with_a_bad_config_raises_with_its_message(job):
    with pytest.raises(suite.RanksError) as failure:
        suite.Ranks({**suite.MODEL, "heads": 3, "dp": 1, "tp": 2})
    message = str(failure.value)
    assert "2-rank job failed" in message and "TrainConfigError" in message
    assert "--heads 3" in message and "--tp 2" in message


@pytest.mark.mpi
def test_the_figures_on_two_rank_jobs(job):
    jobs = {layout: job(layout) for layout in ("dp=2", "tp=2")}
    steps = figures.figure_steps(jobs, steps=2)
    assert list(steps["rows"]) == ["dp=2", "tp=2"]
    for row in steps["rows"].values():
        assert row["ranks"] == 2 and row["loss_agrees"] and row["loss_rel_diff"] <= 1e-12
        assert 0 < row["collective_share"] < 1 and row["collective_calls_per_step"] >= 1
        assert "scaling_efficiency" not in row  # no 1-rank job to compare with
        assert row["tokens_per_s"] == pytest.approx(64 / row["median_s"])
    reductions = figures.figure_all_reduce(jobs["dp=2"], sizes=(1024,), repeats=1)
    size = reductions["sizes"][1024]
    assert reductions["floor_s"] > 0
    assert size["checksums_exact"] and size["chosen"] in cost.ALGORITHMS
    assert size["chosen/best"] >= 1 and set(size["predicted_s"]) == set(cost.ALGORITHMS)
    projection = figures.figure_projection(gpus=(512,))
    plan = projection["plans"][512]
    assert plan["best"]["fits"] and plan["best"]["days"] < plan["naive"]["days"]
    load = {"load": {"before": [0.0] * 3, "after": [0.0] * 3}}
    report = figures.text({"cores": 2, "failed": {}, "figures": {
        "1": {**steps, **load}, "2": figures.comparisons(steps["rows"]),
        "3": {**reductions, **load}, "4": {**projection, **load}}})
    assert "projection (not a measurement)" in report and "21 -> 9 days" in report
    assert "tp=2" in report and "chosen/best" in report


def test_comparisons_are_step_time_ratios():
    rows = {"dp=2": {"median_s": 1.0}, "dp=2 buckets off": {"median_s": 2.0},
            "dp=2 zero=2": {"median_s": 1.5}}
    assert figures.comparisons(rows) == {"buckets on / off": 0.5, "zero=2 / plain": 1.5}
    assert figures.comparisons({"dp=2": {"median_s": 1.0}}) == {}
