"""The "hal.jit" section: the jit suite's cases eager against jitted per backend, hal.jit
against the compiled peers, the KdV solve per step and in full, the replay cost of one
node, compile times, and the trace cache."""

from __future__ import annotations

import pandas as pd

from benchmarks.schema.records import Measurement, Results
from reports.figures.lookup import (
    case_and_label,
    error_cell,
    full_solve,
    median,
    of_cases,
    ok,
    params_text,
    per_item,
    ratio,
    seconds_cell,
    suite_section,
)
from reports.frame import format_seconds
from reports.section import Block, Section

HAL_MODES = ("eager", "jit", "jit-uncaptured")
WHO = ("mode", "peer")  # params naming who ran a case, not what it computes
FIRST_CALL = ("first_call_empty_cache_s", "first_call_disk_cache_s")


def sections(results: list[Results]) -> list[Section]:
    """The section, empty without jit suite measurements."""
    return suite_section(results, "jit", "hal.jit", _blocks)


def _blocks(ms: list[Measurement]) -> list[Block]:
    blocks: list[Block] = []
    eager = eager_against_jit(ms)
    if not eager.empty:
        blocks += ["Each case run op by op (eager) and through `hal.jit` on each backend: "
                   "median time per call; eager/jit above 1 is how many times faster the "
                   "jitted call is.", eager]
    peers = jit_against_peers(ms)
    if not peers.empty:
        labels = sorted({str(m.params["peer"]) for m in ms if "peer" in m.params})
        blocks += ["`hal.jit` on each device against the same algorithm in the peers placed "
                   "on it (`frontends.science.peers`): median time per call; hal.jit/peer "
                   f"below 1 is hal.jit faster. Peers: {', '.join(labels)}.", peers]
    kdv = kdv_solve(ms)
    if not kdv.empty:
        blocks += ["The Kassam-Trefethen KdV problem (N=256, float64): time per ETDRK4 step, "
                   "and the full solve extrapolated from the steps measured (a projection "
                   "of the measured rate, not a measured solve); the max-norm error against "
                   "the exact 2-soliton after the steps measured.", kdv]
    replay = replay_per_node(ms)
    if not replay.empty:
        blocks += ["Replay cost: a chain of tiny subtractions where nothing fuses, so every "
                   "node runs on its own; median time per node (jitted) or per op.", replay]
    compile_ = compile_times(ms)
    if not compile_.empty:
        blocks += ["Compile time: the first call (trace, compile, checked first run) in a "
                   "fresh process with an empty cache directory, and in a second one with "
                   "the disk caches the first left, beside the replay of the compiled call "
                   "(the median). A library the first call imports (numba) counts in it.",
                   compile_]
    blocks += cache_reuse(ms)
    return blocks


def _hal_rows(ms: list[Measurement]) -> dict[tuple, dict[str, Measurement]]:
    """(case, params, dtype, backend, device) -> {mode: measurement} of hal's workloads."""
    rows: dict[tuple, dict[str, Measurement]] = {}
    for m in ms:
        case, label = case_and_label(m)
        if label in HAL_MODES and "peer" not in m.params:
            key = (case, params_text(m, WHO), m.dtype, m.backend, m.device)
            rows.setdefault(key, {})[label] = m
    return rows


def eager_against_jit(ms: list[Measurement]) -> pd.DataFrame:
    """Case x backend: eager and jitted medians and eager/jit; where the backend captured
    jitted graphs, the uncaptured jit beside them."""
    rows = []
    for (case, params, dtype, backend, _), modes in sorted(_hal_rows(ms).items()):
        if "eager" not in modes:
            continue
        eager, jit = modes.get("eager"), modes.get("jit")
        row = {"case": case, "params": params, "dtype": dtype, "backend": backend,
               "eager": seconds_cell(eager), "hal.jit": seconds_cell(jit),
               "eager/jit": ratio(median(eager), median(jit))}
        uncaptured = modes.get("jit-uncaptured")
        if uncaptured is not None and uncaptured.status != "skipped":
            row |= {"hal.jit uncaptured": seconds_cell(uncaptured),
                    "uncaptured/jit": ratio(median(uncaptured), median(jit))}
        rows.append(row)
    return pd.DataFrame(rows)


def jit_against_peers(ms: list[Measurement]) -> pd.DataFrame:
    """Case and device: hal.jit, each peer placed on the same device under test, and
    hal.jit/peer."""
    peers: dict[tuple, dict[str, Measurement]] = {}
    for m in ms:
        if "peer" in m.params:
            peers.setdefault((case_and_label(m)[0], params_text(m, WHO), m.dtype, m.device),
                             {})[str(m.params.get("mode", case_and_label(m)[1]))] = m
    modes = sorted({mode for found in peers.values() for mode in found})
    rows = []
    for (case, params, dtype, _, device), found in sorted(_hal_rows(ms).items()):
        theirs = peers.get((case, params, dtype, device))
        if "jit" not in found or not theirs:
            continue
        jit = found["jit"]
        row = {"case": case, "params": params, "dtype": dtype, "device": device,
               "hal.jit": seconds_cell(jit)}
        for mode in modes:
            peer = theirs.get(mode)
            row[mode] = seconds_cell(peer)
            row[f"hal.jit/{mode}"] = ratio(median(jit), median(peer))
        rows.append(row)
    return pd.DataFrame(rows)


def kdv_solve(ms: list[Measurement]) -> pd.DataFrame:
    """Every kdv_kt measurement: per step, the full solve extrapolated, the error."""
    rows = []
    for m, _, label in of_cases(ms, ("kdv_kt",)):
        if label == "jit-uncaptured" and m.status == "skipped":  # a backend that captures nothing
            continue
        who = str(m.params["peer"]) if "peer" in m.params else f"hal {label} on {m.device}"
        rows.append({"who": who, "dtype": m.dtype, "steps measured": m.params.get("steps"),
                     "per step": seconds_cell(m, per_item),
                     "full solve, extrapolated": full_solve(m),
                     "max-norm error": error_cell(m)})
    return pd.DataFrame(rows)


def replay_per_node(ms: list[Measurement]) -> pd.DataFrame:
    """The chain per runtime: time per node (hal.jit) or per op (eager, numpy)."""
    how = {"jit": "hal.jit, per node", "eager": "hal eager, per op",
           "numpy": "numpy allocating, per op", "numpy-out": "numpy into out= buffers, per op"}
    return pd.DataFrame([{"where": m.device, "how": how.get(label, label),
                          "params": params_text(m, WHO), "time": seconds_cell(m, per_item),
                          "per call": seconds_cell(m)}
                         for m, _, label in of_cases(ms, ("chain",))])


def compile_times(ms: list[Measurement]) -> pd.DataFrame:
    """Workloads with a first call timed apart: first calls and the replay."""
    rows = []
    for m in ok(ms):
        if not all(k in m.metrics for k in FIRST_CALL):
            continue
        empty, cached = (m.metrics[k] for k in FIRST_CALL)
        rows.append({"subject": m.workload, "params": params_text(m, WHO), "dtype": m.dtype,
                     "backend": m.backend, "first call, empty cache": format_seconds(empty),
                     "first call, disk caches": format_seconds(cached),
                     "replay": seconds_cell(m),
                     "first call / replay": ratio(empty, median(m))})
    return pd.DataFrame(rows)


def cache_reuse(ms: list[Measurement]) -> list[Block]:
    """The trace counts after each call of the jit_cache workload, in a sentence."""
    return [f"Trace cache on {m.device}: `Jitted.traces` after calls with shapes "
            f"{m.facts['shapes']}: {m.facts['traces_after_each_call']} (checked: calls with "
            "a shape seen before do not trace again)."
            for m in ok(ms) if m.workload == "jit_cache" and "traces_after_each_call" in m.facts]
