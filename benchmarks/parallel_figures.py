"""Parallel training figures: `python -m benchmarks.parallel_figures [--json F] [--steps N]
[--repeats R]`.

The `parallel` suite's MPI jobs (benchmarks.suites.parallel: one job per layout, each
driven through a pipe, so a step is timed from outside) give:

(1) Steps of the byte-level LM per layout (1 rank, dp=2, dp=2 buckets off, dp=2 zero=2,
    tp=2): the median over `--steps` steps after warm-up, the jobs called in turn (round
    robin) so that load from other work falls on all alike; tokens/s; the 2-rank scaling
    efficiency, tokens/s at 2 ranks / (2 x tokens/s at 1 rank); the share of the timed
    steps' wall time rank 0 spent inside collectives, and its collective calls per step;
    the loss each job returned against the same model's loss on the whole batch in this
    process (they must agree within the suite's tolerance).
(2) From (1): bucketing on vs off (dp=2 / dp=2 buckets off, step time) and ZeRO-2 vs plain
    dp=2.
(3) all_reduce at each of the suite's sizes on 2 ranks (the dp=2 job, the others closed):
    the median of `--repeats` calls per algorithm, the one the cost model (calibrated in
    the job at its first "chosen" call) chose and its time over the best measured one;
    the model's table and its predictions beside.
(4) The planner's projection for GPT-3 175B (not a measurement) for a few GPU counts, the
    claim "175B: 21 -> 9 days" beside, and the lines of the single-device and parallel
    training scripts (the claim: -70%).

The 1/5/15-minute load averages are recorded around every section (the machine may be
shared). All jobs are closed at the end.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

import numpy as np

from benchmarks.figures import finish, measured
from benchmarks.suites import parallel as suite
from frontends.parallel import planner
from frontends.parallel.cost import ALGORITHMS
from frontends.parallel.training_scripts import annotation_lines

WARMUP_STEPS = 2  # the first compiles the step's hal.jit graph
PLANNER_GPUS = (512, 1024, 3072)
DAYS_CLAIM = "175B: 21 -> 9 days"
LINES_CLAIM = "-70% lines"


# -- measuring ----------------------------------------------------------------------------------
def start(layouts) -> tuple[dict[str, suite.Ranks], dict[str, str]]:
    """({layout: its running job}, {layout: why it did not start})."""
    jobs, failed = {}, {}
    for layout in layouts:
        try:
            jobs[layout] = suite.ranks(layout)
        except suite.RanksError as e:
            failed[layout] = str(e)
    return jobs, failed


def round_robin(calls: dict[object, Callable], rounds: int,
                settle: Callable | None = None) -> dict[object, dict]:
    """{key: {samples_s, outputs}}: `rounds` rounds, each calling every call once in turn
    (after an untimed `settle()` if given)."""
    out = {key: {"samples_s": [], "outputs": []} for key in calls}
    for _ in range(rounds):
        for key, call in calls.items():
            if settle:
                settle()
            begin = time.perf_counter()
            output = call()
            out[key]["samples_s"].append(time.perf_counter() - begin)
            out[key]["outputs"].append(output)
    return out


# -- (1) and (2): training steps ----------------------------------------------------------------
def figure_steps(jobs: dict[str, suite.Ranks], steps: int) -> dict:
    """Per layout: step time, tokens/s, collective share and calls, loss against the
    single-process loss; the 2-rank scaling efficiency where "1 rank" ran."""
    tokens = suite.MODEL["batch"] * suite.MODEL["seq"]
    reference = suite.single_loss()
    tolerance = {w.params["layout"]: w.tolerance(suite.MODEL["dtype"])
                 for w in suite.workloads() if w.name == "lm_step"}
    first = {}
    for layout, job in jobs.items():
        begin = time.perf_counter()
        for _ in range(WARMUP_STEPS):
            job.request("step")
        first[layout] = time.perf_counter() - begin
    before = {layout: job.request("stats") for layout, job in jobs.items()}
    timed = round_robin({layout: lambda job=job: job.request("step")["loss"]
                         for layout, job in jobs.items()}, steps)
    rows = {}
    for layout, job in jobs.items():
        after = job.request("stats")
        samples, losses = timed[layout]["samples_s"], timed[layout]["outputs"]
        median = float(np.median(samples))
        error = max(abs(loss - reference) for loss in losses) / abs(reference)
        rows[layout] = {
            "ranks": job.ranks, "warmup_s": first[layout], "median_s": median,
            "min_s": min(samples), "max_s": max(samples), "tokens_per_s": tokens / median,
            "collective_share": (after["collective_seconds"] - before[layout]["collective_seconds"])
            / sum(samples),
            "collective_calls_per_step": (after["calls"] - before[layout]["calls"]) / steps,
            "loss": losses[-1], "loss_rel_diff": error,
            "loss_agrees": bool(error <= tolerance[layout])}
    single = rows.get("1 rank")
    for row in rows.values():
        if single and row["ranks"] == 2:
            row["scaling_efficiency"] = row["tokens_per_s"] / (2 * single["tokens_per_s"])
    return {"model": dict(suite.MODEL), "tokens_per_step": tokens, "steps": steps,
            "warmup_steps": WARMUP_STEPS, "reference_loss": reference, "rows": rows}


def comparisons(rows: dict) -> dict:
    """Step-time ratios from figure (1): buckets on / off, ZeRO-2 / plain dp=2 (<1: faster)."""
    pairs = {"buckets on / off": ("dp=2", "dp=2 buckets off"),
             "zero=2 / plain": ("dp=2 zero=2", "dp=2")}
    return {name: rows[a]["median_s"] / rows[b]["median_s"]
            for name, (a, b) in pairs.items() if a in rows and b in rows}


# -- (3): all_reduce algorithms -----------------------------------------------------------------
def predicted(table: list[dict], nbytes: int) -> dict[str, float]:
    """Seconds the cost model's all_reduce fits predict for a buffer of nbytes."""
    return {row["algorithm"]: row["alpha_us"] * 1e-6 + nbytes / (row["GB/s"] * 1e9)
            for row in table if row["collective"] == "all_reduce"}


def figure_all_reduce(job: suite.Ranks, sizes, repeats: int) -> dict:
    """Per size: the median time of every algorithm and of "chosen", which algorithm the
    cost model chose and its measured time over the best one's, the model's predictions,
    and whether every checksum was the exact sum; and the floor of a call (a 4-byte
    all_reduce: the pipe round trip and the ranks' wake-up). A call's time ends with rank
    0's answer, while the other ranks may still be finishing it, so an untimed 4-byte
    all_reduce (collective: it waits for them) precedes every timed call."""
    ranks = job.ranks
    calls = {(n, a): lambda n=n, a=a: job.request(f"all_reduce {n} {a}")
             for n in sizes for a in suite.ALGORITHMS}
    calls[4, "floor"] = settle = lambda: job.request("all_reduce 4 allreduce")
    for call in calls.values():
        call()  # warm-up
    timed = round_robin(calls, repeats, settle)
    table = job.request("stats")["cost_model"]
    out = {"ranks": ranks, "repeats": repeats, "cost_model": table, "sizes": {},
           "floor_s": float(np.median(timed[4, "floor"]["samples_s"]))}
    for n in sizes:
        medians = {a: float(np.median(timed[n, a]["samples_s"])) for a in suite.ALGORITHMS}
        chosen = timed[n, "chosen"]["outputs"][0]["algorithm"]
        best = min(ALGORITHMS, key=medians.get)
        exact = n // 4 * ranks * (ranks + 1) / 2  # rank r sends r + 1 in every element
        out["sizes"][n] = {
            "median_s": medians, "chosen": chosen, "best": best,
            "chosen/best": medians[chosen] / medians[best],
            "predicted_s": predicted(table, n),
            "checksums_exact": all(o["checksum"] == exact for a in suite.ALGORITHMS
                                   for o in timed[n, a]["outputs"])}
    return out


# -- (4): projection and script lines -----------------------------------------------------------
def figure_projection(gpus=PLANNER_GPUS) -> dict:
    """The planner's best fitting plan and the naive one for GPT-3 175B on DGX A100 nodes
    per GPU count (a projection), and the line counts of the two training scripts."""
    plans = {}
    for count in gpus:
        cluster = planner.DGX_A100.with_gpus(count)
        ranked = planner.best(planner.GPT3_175B, cluster)
        plans[count] = {"best": ranked[0] if ranked else None,
                        "naive": planner.naive(planner.GPT3_175B, cluster)}
    return {"label": "projection (not a measurement)", "model": planner.GPT3_175B.name,
            "cluster": planner.DGX_A100.name, "claim": DAYS_CLAIM, "plans": plans,
            "lines": annotation_lines(), "lines_claim": LINES_CLAIM}


# -- text ---------------------------------------------------------------------------------------
def _load(figure: dict) -> str:
    before, after = figure["load"]["before"], figure["load"]["after"]
    return f"load {', '.join(map(str, before))} -> {', '.join(map(str, after))}"


def _steps_text(f: dict, failed: dict) -> list[str]:
    m = f["model"]
    lines = [f"(1) LM steps: dim {m['dim']}, {m['layers']} layers, {m['heads']} heads, seq "
             f"{m['seq']}, batch {m['batch']}, {m['dtype']}; median of {f['steps']} steps after "
             f"{f['warmup_steps']} warm-up, jobs in turn  [{_load(f)}]",
             f"  single-process loss {f['reference_loss']:.6f}",
             f"  {'layout':<18}{'ranks':>5}{'ms/step':>9}{'(min-max)':>15}{'tokens/s':>10}"
             f"{'eff.':>7}{'coll.':>7}{'calls':>7}{'loss rel diff':>15}"]
    for layout, r in f["rows"].items():
        efficiency = f"{r['scaling_efficiency']:.0%}" if "scaling_efficiency" in r else "-"
        spread = f"({1e3 * r['min_s']:.1f}-{1e3 * r['max_s']:.1f})"
        lines.append(f"  {layout:<18}{r['ranks']:>5}{1e3 * r['median_s']:>9.1f}{spread:>15}"
                     f"{r['tokens_per_s']:>10.0f}{efficiency:>7}{r['collective_share']:>7.0%}"
                     f"{r['collective_calls_per_step']:>7.0f}{r['loss_rel_diff']:>11.1e} "
                     f"{'ok' if r['loss_agrees'] else 'NO'}")
    lines += [f"  {layout}: did not start: {why}" for layout, why in failed.items()]
    lines.append("  eff. = tokens/s / (2 x tokens/s at 1 rank); coll. = share of the step in "
                 "collectives (rank 0); calls = collective calls per step")
    return [*lines, ""]


def _comparisons_text(f: dict) -> list[str]:
    lines = ["(2) Step time ratios (from (1); below 1: the first is faster)"]
    lines += [f"  {name}: {ratio:.2f}" for name, ratio in f.items()]
    return [*lines, ""]


def _all_reduce_text(f: dict) -> list[str]:
    lines = [f"(3) all_reduce on {f['ranks']} ranks, median of {f['repeats']} calls, algorithms "
             f"in turn; a call includes the pipe round trip and the ranks' wake-up: a 4-byte "
             f"call takes {1e3 * f['floor_s']:.3f} ms  [{_load(f)}]",
             "  cost model, calibrated in the job at its first 'chosen' call:"]
    lines += [f"    {r['collective']:<15}{r['algorithm']:<13} alpha {r['alpha_us']:7.1f} us  "
              f"{r['GB/s']:6.2f} GB/s  ({r['sizes']} sizes, worst fit error "
              f"{r['max_rel_err'] or 0:.0%})" for r in f["cost_model"]]
    lines.append(f"  {'bytes':>10}  " + "".join(f"{a + ' ms':>16}" for a in suite.ALGORITHMS)
                 + "  chosen        chosen/best  exact")
    for n, s in f["sizes"].items():
        cells = "".join(
            f"{1e3 * s['median_s'][a]:>8.3f} ({1e3 * s['predicted_s'][a]:5.2f})"
            if a in s["predicted_s"] else f"{1e3 * s['median_s'][a]:>16.3f}"
            for a in suite.ALGORITHMS)
        lines.append(f"  {n:>10}  {cells}  {s['chosen']:<13} {s['chosen/best']:>11.2f}  "
                     f"{'yes' if s['checksums_exact'] else 'NO'}")
    lines.append("  (in brackets: the model's prediction, ms)")
    return [*lines, ""]


def _projection_text(f: dict) -> list[str]:
    lines = [f"(4) {f['label']}: {f['model']} on {f['cluster']} nodes, the best fitting plan "
             f"and the naive one (dp only, per-tensor flat all-reduce)  [{_load(f)}]"]
    for count, p in f["plans"].items():
        best, naive = p["best"], p["naive"]
        lines.append(planner.table([x for x in (best, naive) if x]))
        if best:
            lines.append(f"  {count} GPUs: naive {naive['days']:.3g} -> best {best['days']:.3g} "
                         f"days ({naive['days'] / best['days']:.2f}x), a projection; claim "
                         f"\"{f['claim']}\" (2.33x)")
    n = f["lines"]
    lines += ["", f"  training scripts: {n['single_device_lines']} lines on one device, "
              f"{n['parallel_lines']} in parallel, {n['lines_differing']} of them added or "
              f"changed; {n['model_annotation_lines']} annotation lines in the model; written "
              f"by hand (Megatron's split) {n['manual_lines_differing']} lines differ; claim "
              f"{f['lines_claim']}"]
    return lines


def text(results: dict) -> str:
    """The figures as plain text."""
    f = results["figures"]
    lines = [f"Machine: {results['cores']} cores; load average (1, 5, 15 min) per section.", ""]
    lines += _steps_text(f["1"], results["failed"])
    lines += _comparisons_text(f["2"])
    if "3" in f:
        lines += _all_reduce_text(f["3"])
    lines += _projection_text(f["4"])
    return "\n".join(lines)


def main(argv=None) -> None:
    """Measure the figures, print them (and write them as JSON with --json), close the jobs."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", help="also write the results to this file")
    p.add_argument("--steps", type=int, default=20, help="(1) timed steps per layout")
    p.add_argument("--repeats", type=int, default=10, help="(3) timed calls per algorithm")
    args = p.parse_args(argv)
    results = {"cores": os.cpu_count(), "figures": {}}
    figures = results["figures"]
    jobs, results["failed"] = start(suite.LAYOUTS)
    try:
        figures["1"] = measured(lambda: figure_steps(jobs, args.steps))
        figures["2"] = comparisons(figures["1"]["rows"])
        for layout, job in jobs.items():  # idle ranks would wake on the cores during (3)
            if layout != "dp=2":
                job.close()
        if "dp=2" in jobs:
            figures["3"] = measured(
                lambda: figure_all_reduce(jobs["dp=2"], suite.SIZES, args.repeats))
        figures["4"] = measured(figure_projection)
    finally:
        for job in jobs.values():
            job.close()
    finish(results, args.json, text)


if __name__ == "__main__":
    main()
