"""The "Parallel training" section: the LM's steps per layout with scaling efficiency and the
share of a step in collectives, bucketing, ZeRO-2, overlap and the pipeline stage's
compiled graphs (against op by op) compared, the pipeline's bubble
against its formulas, all_reduce algorithms
against the cost model's choice, and the planner's projection for a 175B model beside
the published claims (all from the parallel suite's records and facts)."""

from __future__ import annotations

import pandas as pd

from benchmarks.claims import claim
from benchmarks.schema.records import Measurement, Results
from reports.figures.lookup import median, number, ok, per_item, ratio, seconds_cell, suite_section
from reports.frame import format_seconds
from reports.section import Block, Section

SINGLE = "1 rank"
COMPARISONS = {"buckets on / off": ("dp=2", "dp=2 buckets off"),
               "ZeRO-2 / plain dp=2": ("dp=2 zero=2", "dp=2"),
               "overlap / buckets after the backward": ("dp=2 overlap", "dp=2"),
               "pp=2 graphs / op by op": ("pp=2", "pp=2 eager")}
PLAN_COLUMNS = {"dp": "dp", "tp": "tp", "zero": "ZeRO", "recompute": "recompute",
                "global_batch": "batch", "dp_algorithm": "dp algorithm", "step_s": "step s",
                "comm_share": "comm share", "tokens_per_s": "tokens/s", "days": "days",
                "memory_gb_per_gpu": "GB/GPU", "fits": "fits"}


def sections(results: list[Results]) -> list[Section]:
    """The section, empty without parallel suite measurements."""
    return suite_section(results, "parallel", "Parallel training", _blocks)


def _blocks(ms: list[Measurement]) -> list[Block]:
    blocks: list[Block] = []
    steps = steps_table(ms)
    if not steps.empty:
        blocks += ["Training steps of the byte-level LM per layout, timed from outside the MPI "
                   "job: median ms per step (min-max), tokens/s, the 2-rank scaling efficiency "
                   "(tokens/s / (2 x tokens/s at 1 rank)), the share of a step rank 0 spends "
                   "inside collectives and its collective calls per step, and the loss's "
                   "relative difference to the single-process loss.", steps]
        compared = comparisons(ms)
        if compared:
            blocks.append("Step time ratios (below 1: the first is faster): "
                          + "; ".join(f"{name} {value}" for name, value in compared.items())
                          + ".")
    bubbles = bubble_table(ms)
    if not bubbles.empty:
        blocks += ["The pipeline's bubble (pp=2, 1F1B) per microbatch count m: the formula "
                   "(p-1)/(m+p-1) for equal stages and free messages, each stage's measured "
                   "idle share of the step, the bubble the stages' measured work predicts "
                   "(uneven: the slowest stage sets the pace), and the share each stage "
                   "spent waiting for its handoffs (recvs).", bubbles]
    reductions = all_reduce_table(ms)
    if not reductions.empty:
        blocks += [_floor_text(ms) + "all_reduce on 2 ranks: median time per all_reduce of "
                   "each algorithm (the cost model's prediction in brackets), the algorithm "
                   "the model chose and its time over the best measured one.", reductions]
        model = cost_model_table(ms)
        if not model.empty:
            blocks += ["The cost model, calibrated in the job at its first `chosen` call:",
                       model]
    plans = projection_table(ms)
    if not plans.empty:
        days = claim("days_175b")
        blocks += [f"The planner's projection (not a measurement) for GPT-3 175B: the best "
                   f"fitting plan and the naive one (data parallel only, one flat all-reduce "
                   f"per gradient tensor). The claim: \"{days.published}\" "
                   f"({days.ratio:.2f}x).", plans]
    blocks += lines_text(ms)
    return blocks


def _steps(ms: list[Measurement]) -> dict[str, Measurement]:
    """layout -> its lm_step measurement."""
    return {str(m.params["layout"]): m for m in ms if m.workload == "lm_step"}


def _rate(m: Measurement | None) -> float | None:
    return m.metrics.get("items_per_s") if m is not None and m.status == "ok" else None


def steps_table(ms: list[Measurement]) -> pd.DataFrame:
    """Layout: step time, tokens/s, scaling efficiency, collectives, the loss check."""
    steps = _steps(ms)
    single = _rate(steps.get(SINGLE))
    rows = []
    for layout, m in steps.items():
        ranks = int(m.params.get("dp", 1)) * int(m.params.get("pp", 1)) \
            * int(m.params.get("tp", 1))
        seconds, rate = median(m), _rate(m)
        spread = (f"{1e3 * m.stats['min']:.1f}-{1e3 * m.stats['max']:.1f}"
                  if seconds is not None else "")
        collective = m.facts.get("collective_s_per_step")
        rows.append({
            "layout": layout, "ranks": ranks,
            "ms/step": number(1e3 * seconds, ".1f") if seconds is not None else m.status,
            "(min-max)": spread, "tokens/s": number(rate, ".0f"),
            "scaling efficiency": number(rate / (ranks * single), ".0%")
            if rate and single and ranks > 1 else "",
            "in collectives": number(collective / seconds, ".0%")
            if collective is not None and seconds else "",
            "collective calls/step": number(m.facts.get("collective_calls_per_step"), ".0f"),
            "loss rel diff": number(m.check.max_error if m.check else None, ".1e"),
            "loss check": "" if m.check is None else ("ok" if m.check.passed else "FAILED")})
    return pd.DataFrame(rows)


def comparisons(ms: list[Measurement]) -> dict[str, str]:
    """Step-time ratios: buckets on / off, ZeRO-2 / plain dp=2, overlapped buckets / after
    the backward, pp=2's stages as compiled graphs / op by op, where both were measured."""
    steps = _steps(ms)
    found = {}
    for name, (a, b) in COMPARISONS.items():
        value = ratio(median(steps.get(a)), median(steps.get(b)))
        if value:
            found[name] = value
    return found


def bubble_table(ms: list[Measurement]) -> pd.DataFrame:
    """Microbatches: the bubble formula, then per stage the measured bubble, the uneven-work
    formula and the handoff waits (from the pipeline_bubble facts)."""
    rows = []
    for m in sorted((m for m in ok(ms) if m.workload == "pipeline_bubble"),
                    key=lambda m: int(m.params["microbatches"])):
        row = {"m": int(m.params["microbatches"]), "formula": number(m.facts.get("formula"))}
        stages = sorted({k.split("/stage")[1] for k in m.facts if "/stage" in k}, key=int)
        for figure, label in (("measured", "measured"), ("uneven_formula", "uneven"),
                              ("handoff_wait", "handoff wait")):
            row |= {f"{label} s{s}": number(m.facts.get(f"{figure}/stage{s}"), ".3f")
                    for s in stages}
        rows.append(row)
    return pd.DataFrame(rows)


def _floor_text(ms: list[Measurement]) -> str:
    floor = [m for m in ok(ms) if m.workload == "command_floor"]
    if not floor:
        return ""
    return (f"A command to the job costs {format_seconds(median(floor[0]))} besides its work "
            "(a 4-byte all_reduce: the pipe round trip and the ranks' wake-up). ")


def all_reduce_table(ms: list[Measurement]) -> pd.DataFrame:
    """Bytes: each algorithm's time per all_reduce (predicted), chosen, best, chosen/best."""
    by_size: dict[int, dict[str, Measurement]] = {}
    for m in ms:
        if m.workload == "all_reduce":
            by_size.setdefault(int(m.params["bytes"]), {})[str(m.params["algorithm"])] = m
    rows = []
    for nbytes, found in sorted(by_size.items()):
        chosen_m = found.get("chosen")
        facts = chosen_m.facts if chosen_m is not None else {}
        row: dict[str, str | int] = {"bytes": nbytes}
        measured = {}
        for algorithm, m in found.items():
            predicted = facts.get(f"predicted_s/{algorithm}")
            row[algorithm] = seconds_cell(m, per_item) + (
                f" ({format_seconds(predicted)})" if predicted is not None else "")
            if algorithm != "chosen" and per_item(m) is not None:
                measured[algorithm] = per_item(m)
        chosen = facts.get("chosen")
        best = min(measured, key=measured.get) if measured else None
        row |= {"chosen": chosen or "", "best": best or "",
                "chosen/best": ratio(measured.get(chosen), measured.get(best))
                if chosen in measured and best else ""}
        rows.append(row)
    return pd.DataFrame(rows)


def cost_model_table(ms: list[Measurement]) -> pd.DataFrame:
    """The cost model's fits, from the facts of a `chosen` all_reduce."""
    facts = next((m.facts for m in ok(ms) if m.workload == "all_reduce"
                  and any(k.startswith("model/") for k in m.facts)), {})
    fits: dict[tuple[str, str], dict] = {}
    for key, value in facts.items():
        if key.startswith("model/"):
            _, collective, algorithm, figure = key.split("/", 3)
            fits.setdefault((collective, algorithm), {})[figure] = value
    return pd.DataFrame([{"collective": c, "algorithm": a,
                          "alpha us": number(f.get("alpha_us"), ".1f"),
                          "GB/s": number(f.get("GB/s"), ".2f"),
                          "sizes": number(f.get("sizes"), ".0f"),
                          "worst fit error": number(f.get("max_rel_err"), ".0%")}
                         for (c, a), f in sorted(fits.items())])


def projection_table(ms: list[Measurement]) -> pd.DataFrame:
    """GPU count x plan (best, naive): the planner's figures; naive days / best days."""
    rows = []
    for m in ok(ms):
        if not m.workload.startswith("gpt3_175b_plan"):
            continue
        gpus = int(m.params["gpus"])
        for plan in ("best", "naive"):
            if f"{plan}/days" not in m.facts:
                continue
            row = {"GPUs": gpus, "plan": plan}
            row |= {label: _plan_cell(m.facts[f"{plan}/{key}"])
                    for key, label in PLAN_COLUMNS.items()}
            row["naive/best days"] = ratio(m.facts["naive/days"], m.facts["best/days"]) if (
                plan == "best" and "naive/days" in m.facts) else ""
            rows.append(row)
    return pd.DataFrame(rows)


def _plan_cell(value: float | str) -> str:
    """Text as it is, a count whole, any other figure to 3 digits."""
    if isinstance(value, str):
        return value
    return str(int(value)) if float(value).is_integer() else number(value)


def lines_text(ms: list[Measurement]) -> list[str]:
    """The training scripts' line counts (from the tp=2 step's facts) beside the claim."""
    facts = next((m.facts for m in ms if "lines/parallel_lines" in m.facts), None)
    if facts is None:
        return []
    n = {k.removeprefix("lines/"): int(v) for k, v in facts.items() if k.startswith("lines/")}
    return [f"Training scripts: {n['single_device_lines']} lines on one device, "
            f"{n['parallel_lines']} in parallel, {n['lines_differing']} of them added or "
            f"changed, and {n['model_annotation_lines']} annotation lines in the model; with "
            f"Megatron's split written by hand {n['manual_lines_differing']} lines differ. "
            f"The claim: \"{claim('parallel_code').published}\"."]
