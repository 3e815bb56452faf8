"""The "Parallel training" section, built from hand-made parallel suite records."""

from __future__ import annotations

import re

import pytest

from benchmarks.schema.files import load_results
from reports.figures import parallel
from reports.report import build_report

LAYOUTS = {"1 rank": ({"dp": 1}, 0.100), "dp=2": ({"dp": 2}, 0.080),
           "dp=2 buckets off": ({"dp": 2, "bucket_mb": 0}, 0.100),
           "dp=2 zero=2": ({"dp": 2, "zero": 2}, 0.120), "tp=2": ({"dp": 1, "tp": 2}, 0.090),
           "dp=2 overlap": ({"dp": 2, "overlap": True}, 0.072),
           "pp=2": ({"dp": 1, "pp": 2, "microbatches": 4}, 0.060),
           "pp=2 eager": ({"dp": 1, "pp": 2, "microbatches": 4, "eager": True}, 0.075)}
LINES = {"lines/single_device_lines": 40, "lines/parallel_lines": 46, "lines/lines_differing": 6,
         "lines/model_annotation_lines": 6, "lines/manual_lines": 80,
         "lines/manual_lines_differing": 45}
MODEL = {"model/all_reduce/allreduce/alpha_us": 50.0, "model/all_reduce/allreduce/GB/s": 2.0,
         "model/all_reduce/allreduce/sizes": 9, "model/all_reduce/rs_ag/alpha_us": 80.0,
         "model/all_reduce/rs_ag/GB/s": 4.0, "model/all_reduce/rs_ag/sizes": 9,
         "model/all_reduce/rs_ag/max_rel_err": 0.25}


@pytest.fixture
def parallel_file(suite_measurement, results_file):
    def m(workload, median, params, dtype="float32", **kw):
        return suite_measurement("parallel", workload, "cpu", median, params=params,
                                 dtype=dtype, **kw)

    ms = [m("lm_step", median, {"layout": layout, **p}, items=512,
            metrics={"items_per_s": 512 / median}, max_error=2e-13,
            facts={"collective_s_per_step": median / 4 if layout != "1 rank" else 0.0,
                   "collective_calls_per_step": 3, "reference_loss": 5.5,
                   **(LINES if layout == "tp=2" else {})})
          for layout, (p, median) in LAYOUTS.items()]
    sizes = {"allreduce": 0.010, "rs_ag": 0.006, "hierarchical": 0.012, "chosen": 0.010}
    ms += [m("all_reduce", t, {"bytes": 65536, "algorithm": a, "ranks": 2, "calls": 4}, items=4,
             facts={"chosen": "allreduce", "predicted_s/allreduce": 0.0025,
                    "predicted_s/rs_ag": 0.0012, **MODEL} if a == "chosen" else None)
           for a, t in sizes.items()]
    ms += [m("pipeline_bubble", 0.05, {"pp": 2, "microbatches": mb, "schedule": "1f1b"},
             dtype="float32", facts={"formula": 1 / (mb + 1), "measured/stage0": 0.6 / mb,
                                     "measured/stage1": 0.5 / mb,
                                     "uneven_formula/stage0": 0.55 / mb,
                                     "uneven_formula/stage1": 0.45 / mb,
                                     "handoff_wait/stage0": 0.04, "handoff_wait/stage1": 0.02})
           for mb in (8, 1, 4)]
    ms.append(m("command_floor", 0.0005, {"bytes": 4, "algorithm": "allreduce", "ranks": 2}))
    ms.append(m("gpt3_175b_plan[1024]", 0.005, {"gpus": 1024, "model": "GPT-3 175B"},
                dtype="float64",
                facts={"label": "projection (not a measurement)",
                       **{f"{plan}/{k}": v for plan, days in (("best", 31.3), ("naive", 58.3))
                          for k, v in {"dp": 128, "tp": 8, "zero": 1, "recompute": "selective",
                                       "global_batch": 1536, "dp_algorithm": "ring",
                                       "step_s": 10.0, "comm_share": 0.2,
                                       "tokens_per_s": 1e5, "days": days,
                                       "memory_gb_per_gpu": 60.0, "fits": "yes"}.items()}}))
    return results_file("parallel.jsonl", ms)


def test_steps_scaling_efficiency_and_collective_share(parallel_file):
    rows = {r["layout"]: r for r in
            parallel.steps_table(load_results(parallel_file).measurements).to_dict("records")}
    assert rows["1 rank"]["ranks"] == 1 and rows["1 rank"]["scaling efficiency"] == ""
    assert rows["dp=2"]["ranks"] == 2 and rows["tp=2"]["ranks"] == 2
    assert rows["dp=2"]["scaling efficiency"] == "62%"  # (512/0.08) / (2 x 512/0.1)
    assert rows["dp=2"]["in collectives"] == "25%" and rows["dp=2"]["collective calls/step"] == "3"
    assert float(rows["dp=2"]["ms/step"]) == pytest.approx(80, rel=0.02)
    assert rows["tp=2"]["loss rel diff"] == "2.0e-13" and rows["tp=2"]["loss check"] == "ok"


def test_comparisons_are_step_time_ratios(parallel_file):
    found = parallel.comparisons(load_results(parallel_file).measurements)
    assert float(found["buckets on / off"]) == pytest.approx(0.8, rel=0.03)
    assert float(found["ZeRO-2 / plain dp=2"]) == pytest.approx(1.5, rel=0.03)
    assert float(found["overlap / buckets after the backward"]) == pytest.approx(0.9, rel=0.03)
    assert float(found["pp=2 graphs / op by op"]) == pytest.approx(0.8, rel=0.03)


def test_all_reduce_algorithms_against_the_choice_and_the_model(parallel_file):
    ms = load_results(parallel_file).measurements
    (row,) = parallel.all_reduce_table(ms).to_dict("records")
    assert row["chosen"] == "allreduce" and row["best"] == "rs_ag"
    assert float(row["chosen/best"]) == pytest.approx(10 / 6, rel=0.03)
    assert row["rs_ag"].endswith("(1.2 ms)") and row["hierarchical"].startswith("3")
    model = parallel.cost_model_table(ms).to_dict("records")
    assert [(r["algorithm"], r["alpha us"], r["GB/s"]) for r in model] == [
        ("allreduce", "50.0", "2.00"), ("rs_ag", "80.0", "4.00")]
    assert model[1]["worst fit error"] == "25%"


def test_the_projection_and_the_lines_beside_the_claims(parallel_file, tmp_path):
    ms = load_results(parallel_file).measurements
    plans = parallel.projection_table(ms).to_dict("records")
    assert [(p["GPUs"], p["plan"], p["days"]) for p in plans] == [(1024, "best", "31.3"),
                                                                 (1024, "naive", "58.3")]
    assert plans[0]["naive/best days"] == "1.86" and plans[1]["naive/best days"] == ""
    assert plans[0]["batch"] == "1536" and plans[0]["dp"] == "128"
    (lines,) = parallel.lines_text(ms)
    assert "40 lines on one device, 46 in parallel, 6 of them added or changed" in lines
    md = build_report([parallel_file], tmp_path / "out")[3].read_text()
    assert "## Parallel training" in md and "projection (not a measurement)" in md
    assert "21 -> 9 days" in md and re.search(r"costs (49\d|50\d) us besides its work", md)


def test_the_bubble_per_microbatch_count_beside_its_formulas(parallel_file):
    rows = parallel.bubble_table(load_results(parallel_file).measurements).to_dict("records")
    assert [(r["m"], r["formula"]) for r in rows] == [(1, "0.5"), (4, "0.2"), (8, "0.111")]
    assert rows[1]["measured s0"] == "0.150" and rows[1]["uneven s1"] == "0.113"
    assert rows[2]["handoff wait s0"] == "0.040" and rows[2]["measured s1"] == "0.062"
