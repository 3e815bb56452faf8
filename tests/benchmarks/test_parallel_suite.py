"""The parallel suite's workloads, its MPI jobs on a tiny float64 model (losses equal the
single-process loss, exact all_reduce sums, a bad config reported), and the facts its
workloads record on those jobs."""

from __future__ import annotations

import itertools

import pytest

import hal
from benchmarks import mpi_job
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

    def get(layout: str, device: str = "cpu:0") -> mpi_job.MpiJob:
        try:
            started[layout, device] = suite.ranks(layout, device, "error")
        except hal.UnsupportedOp as e:
            pytest.skip(str(e))
        return started[layout, device]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(suite, "MODEL", {**suite.MODEL, **TINY_MODEL})
        patch.setattr(mpi_job, "REPLY_TIMEOUT_S", 60.0)
        suite.ranks.cache_clear()
        suite.bubble_job.cache_clear()
        suite.single_loss.cache_clear()
        yield get
        for ranks in started.values():
            ranks.close()
        suite.ranks.cache_clear()
        suite.bubble_job.cache_clear()
        suite.single_loss.cache_clear()


def test_the_suite_has_a_step_per_layout_and_all_reduce_per_size_and_algorithm():
    workloads = suite.workloads()
    steps = {w.params["layout"]: w for w in workloads if w.name == "lm_step"}
    assert list(steps) == list(suite.LAYOUTS)
    for layout, w in steps.items():
        ranks = w.params["dp"] * w.params.get("pp", 1) * w.params.get("tp", 1)
        assert ranks == (1 if layout == "1 rank" else 2)
        assert w.build("float32").items == suite.MODEL["batch"] * suite.MODEL["seq"]
    reductions = {(w.params["bytes"], w.params["algorithm"]) for w in workloads
                  if w.name == "all_reduce"}
    assert reductions == set(itertools.product(suite.SIZES, suite.ALGORITHMS))
    assert set(suite.ALGORITHMS) == {*cost.ALGORITHMS, "chosen"}
    assert {w.name for w in workloads} == {"lm_step", "all_reduce", "command_floor",
                                           "pipeline_bubble",
                                           *(f"gpt3_175b_plan[{n}]" for n in suite.PLANNER_GPUS)}
    bubbles = [w.params["microbatches"] for w in workloads if w.name == "pipeline_bubble"]
    assert bubbles == list(suite.BUBBLE_MICROBATCHES) == [1, 4, 8]


@pytest.mark.mpi
@pytest.mark.parametrize("layout", ["dp=2", "dp=2 overlap", "tp=2", "tp=2 sp", "pp=2",
                                    "pp=2 gpipe", "pp=2 eager"])
def test_a_two_rank_step_has_the_single_process_loss(job, layout):
    ranks = job(layout)
    assert (ranks.info["dp"], ranks.info["pp"], ranks.info["tp"]) == {
        "dp=2": (2, 1, 1), "dp=2 overlap": (2, 1, 1), "tp=2": (1, 1, 2),
        "tp=2 sp": (1, 1, 2)}.get(layout, (1, 2, 1))
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
    with pytest.raises(mpi_job.MpiJobError) as failure:
        suite.stepper_job({**suite.MODEL, "heads": 3, "dp": 1, "tp": 2})
    message = str(failure.value)
    assert "2-rank job failed" in message and "TrainConfigError" in message
    assert "--heads 3" in message and "--tp 2" in message


@pytest.mark.mpi
def test_the_ranks_compute_on_the_device_under_test(job):
    if "opencl" not in hal.available_backends():
        pytest.skip("no OpenCL device here (pip install -e '.[opencl]' brings PoCL)")
    device = hal.device("opencl:0")
    job("dp=2", device.name)
    record = measure(_workload("lm_step", layout="dp=2"), "parallel", "float32", device,
                     ONE_CALL)
    assert record.status == "ok" and record.check.max_error <= 1e-12, record.error


@pytest.mark.mpi
def test_a_device_without_the_steps_kernels_is_a_skip_naming_the_op(job):
    suite.ranks.cache_clear()
    if "null" not in hal.available_backends():
        pytest.skip("the null template backend is not registered here")
    for _ in range(2):  # the second workload on the job that refused is refused alike
        record = measure(_workload("lm_step", layout="dp=2"), "parallel", "float32",
                         hal.device("null:0"), ONE_CALL)
        assert record.status == "skipped" and "FallbackRefused" in record.error, record.error
        assert "null:0" in record.error


def test_rows_that_do_not_depend_on_the_device_are_measured_under_cpu_only():
    if "null" not in hal.available_backends():
        pytest.skip("the null template backend is not registered here")
    record = measure(_workload("command_floor"), "parallel", "float32", hal.device("null:0"),
                     ONE_CALL)
    assert record.status == "skipped" and "measured under the cpu backend" in record.error


def _workload(name: str, **params):
    (found,) = [w for w in suite.workloads() if w.name == name
                and all(w.params.get(k) == v for k, v in params.items())]
    return found


@pytest.mark.mpi
def test_the_facts_of_steps_and_of_the_chosen_all_reduce_on_two_rank_jobs(job, cpu):
    job("tp=2")
    step = measure(_workload("lm_step", layout="tp=2"), "parallel", "float32", cpu, ONE_CALL)
    assert step.status == "ok" and step.error is None, step.error
    assert step.check.passed and step.check.max_error <= 1e-12
    # measured over steps of their own: under load it may exceed the timed steps' median
    assert step.facts["collective_s_per_step"] > 0
    assert step.facts["collective_calls_per_step"] >= 1
    assert step.facts["reference_loss"] == suite.single_loss()
    assert step.facts["lines/lines_differing"] < step.facts["lines/parallel_lines"]
    assert step.metrics["items_per_s"] == pytest.approx(64 / step.median)
    job("dp=2")
    chosen = measure(_workload("all_reduce", bytes=suite.SIZES[0], algorithm="chosen"),
                     "parallel", "float32", cpu, ONE_CALL)
    assert chosen.status == "ok" and chosen.check.passed and chosen.error is None
    assert chosen.facts["chosen"] in cost.ALGORITHMS
    predicted = {k.split("/")[1] for k in chosen.facts if k.startswith("predicted_s/")}
    assert predicted == set(cost.ALGORITHMS)
    assert all(chosen.facts[f"predicted_s/{a}"] > 0 for a in predicted)
    floor = measure(_workload("command_floor"), "parallel", "float32", cpu, ONE_CALL)
    assert floor.status == "ok" and 0 < floor.median < step.median


@pytest.mark.mpi
def test_the_bubble_row_measures_each_stage_and_counts_its_messages(job, cpu):
    job("1 rank")  # the fixture's tiny model, which bubble_job reads too
    try:
        record = measure(_workload("pipeline_bubble", microbatches=4), "parallel", "float32",
                         cpu, ONE_CALL)
    finally:
        suite.bubble_job(4, "cpu:0", "error").close()
    assert record.status == "ok" and record.check.passed, record.error
    facts = record.facts
    assert facts["formula"] == pytest.approx(1 / 5)
    for stage in (0, 1):
        assert 0 <= facts[f"measured/stage{stage}"] < 1
        assert 0 <= facts[f"uneven_formula/stage{stage}"] < 1
        assert 0 <= facts[f"handoff_wait/stage{stage}"] < 1
        assert facts[f"sends_per_step/stage{stage}"] == facts["p2p_per_step/formula"] == 4
        assert facts[f"recvs_per_step/stage{stage}"] == 4


def test_the_projection_is_the_planners_best_plan_beside_the_naive_one(cpu):
    record = measure(suite.plan_workload(512), "parallel", "float64", cpu, ONE_CALL)
    assert record.status == "ok" and record.check.passed
    facts = record.facts
    assert facts["label"] == "projection (not a measurement)"
    assert facts["best/fits"] == "yes" and facts["best/days"] < facts["naive/days"]
    assert facts["naive/dp"] == 512 and facts["naive/dp_algorithm"] == "flat, per tensor"


def test_the_first_of_answers_joined_on_one_line_is_read():
    joined = '{"error": "rank 1 of 2: E: x", "kind": "E"}{"error": "rank 0 of 2: E: x"}\n'
    assert mpi_job._first_object(joined) == {"error": "rank 1 of 2: E: x", "kind": "E"}
    assert mpi_job._first_object('{"error": "rank 1 of 2: E{"error"\n') is None
    assert mpi_job._first_object("") is None and mpi_job._first_object("[1]\n") is None
