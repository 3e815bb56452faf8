"""The "Science" section: the science suite's FFTs, KdV solves, Navier-Stokes steps and
multigrid cycles per item beside the peers, what bounds each (dispatch or arithmetic),
the full solves extrapolated, float32 against float64 in error and memory, and the MPI
cases on 1 and 2 ranks."""

from __future__ import annotations

import pandas as pd

from benchmarks.schema.records import Measurement, Results
from reports.figures.lookup import (
    case_and_label,
    error_cell,
    full_solve,
    median,
    number,
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

FFT_OPS = ("fftn", "ifftn", "rfftn", "irfftn")
KDV = ("kdv_kt", "kdv_large", "kdv_soft")
MPI_FIGURES = ("sha256", "factor", "iterations", "residual", "max_error")


def sections(results: list[Results]) -> list[Section]:
    """The section, empty without science suite measurements."""
    return suite_section(results, "science", "Science", _blocks)


def _blocks(ms: list[Measurement]) -> list[Block]:
    floors = dispatch_floors(ms)
    parts = [
        ("The fixed cost of one call per backend (an op on an 8 x 8 array). A workload is "
         "`dispatch`-bound when its op calls (from its placement), each priced at this cost "
         "(an FFT at the fft's, any other op at the multiply's), come to over half its time.",
         floor_table(floors)),
        ("KdV: time per ETDRK4 step, the full solve extrapolated from the steps measured (a "
         "projection of the measured rate, not a measured solve), the max-norm error against "
         "the exact solution after the steps measured, hal's op calls per step.",
         per_item_table(ms, KDV, floors, "per step", extrapolate=True)),
        ("Navier-Stokes (Kolmogorov flow): time per IF-RK4 step.",
         per_item_table(ms, ("navier_stokes",), floors, "per step")),
        ("FFT: time per transform and GFLOP/s at 5 N log2 N.",
         per_item_table(ms, ("fft", "fft2"), floors, "per transform", rate=True)),
        ("Multigrid: time per V(1,1) cycle and the convergence factor per cycle.",
         per_item_table(ms, ("multigrid_v11",), floors, "per cycle")),
        ("float32 against float64 on cpu: the error of each and the peak memory of a call in "
         "a fresh process (MiB above its inputs).", memory_table(ms)),
        ("MPI cases on 1 and 2 ranks, each run timed from outside the job; speedup is the "
         "1-rank time over this one.", mpi_table(ms)),
    ]
    blocks: list[Block] = []
    for text, table in parts:
        if not table.empty:
            blocks += [text, table]
    return blocks


def dispatch_floors(ms: list[Measurement]) -> dict[str, dict[str, float]]:
    """device -> {"multiply", "fft": median seconds of the tiny op}."""
    floors: dict[str, dict[str, float]] = {}
    for m in ok(ms):
        case, op = case_and_label(m)
        if case == "dispatch_floor":
            floors.setdefault(m.device, {})[op] = median(m)
    return floors


def floor_table(floors: dict[str, dict[str, float]]) -> pd.DataFrame:
    """Device: the tiny multiply and fft."""
    return pd.DataFrame([{"device": device, "tiny multiply": format_seconds(f.get("multiply")),
                          "tiny fft": format_seconds(f.get("fft"))}
                         for device, f in sorted(floors.items())])


def op_calls(m: Measurement) -> tuple[int, int]:
    """(op calls, FFT calls) of one call of a measurement, from its placement."""
    if m.placement is None:
        return 0, 0
    calls = {op: sum(where.values()) for op, where in m.placement.ops.items()}
    return sum(calls.values()), sum(n for op, n in calls.items() if op in FFT_OPS)


def bound(m: Measurement, floors: dict[str, dict[str, float]]) -> str:
    """"dispatch" when the op calls priced at the device's floor are over half the time,
    "arithmetic" otherwise; empty without a floor or ops (a peer)."""
    calls, ffts = op_calls(m)
    floor, seconds = floors.get(m.device, {}), median(m)
    if not calls or seconds is None or set(floor) != {"multiply", "fft"}:
        return ""
    fixed = ffts * floor["fft"] + (calls - ffts) * floor["multiply"]
    return "dispatch" if fixed > 0.5 * seconds else "arithmetic"


def _who(m: Measurement) -> str:
    """hal and its device, or the peer and the device under test it was placed on."""
    return f"{m.params['peer']} on {m.device}" if "peer" in m.params else f"hal {m.device}"


def per_item_table(ms: list[Measurement], cases: tuple[str, ...],
                   floors: dict[str, dict[str, float]], per: str, *, extrapolate: bool = False,
                   rate: bool = False) -> pd.DataFrame:
    """Every measurement of `cases` (peers not measured here left out: the report's skipped
    section says why): time per item, op calls per item, what bounds it; the whole solve
    extrapolated, the rate, the error and the facts where asked for or held."""
    rows = []
    for m, case, _ in of_cases(ms, cases):
        if "peer" in m.params and m.status == "skipped":
            continue
        calls, _ = op_calls(m)
        row = {"case": case, "params": params_text(m, ("peer", "full_steps")), "who": _who(m),
               "dtype": m.dtype, per: seconds_cell(m, per_item)}
        if extrapolate:
            row |= {"full solve, extrapolated": full_solve(m), "max-norm error": error_cell(m)}
        if rate:
            row["GFLOP/s"] = number(m.metrics.get("gflops") if m.status == "ok" else None)
        if "factor" in m.facts:
            row["factor"] = number(m.facts["factor"], ".3f")
        row |= {f"op calls {per}": number(calls / (m.items or 1)) if calls else "",
                "bound": bound(m, floors)}
        rows.append(row)
    return pd.DataFrame(rows)


def memory_table(ms: list[Measurement]) -> pd.DataFrame:
    """The memory workloads: error, footprint and call peak, the factor where held."""
    return pd.DataFrame([{"case": what, "params": params_text(m, ("full_steps",)),
                          "dtype": m.dtype,
                          "error": error_cell(m) if m.status == "ok" else m.status,
                          "footprint MiB": number(m.metrics.get("footprint_mib"), ".3g"),
                          "call peak MiB": number(m.metrics.get("call_peak_mib"), ".3g"),
                          "factor": number(m.facts.get("factor"), ".3f")}
                         for m, _, what in of_cases(ms, ("memory",))])


def mpi_table(ms: list[Measurement]) -> pd.DataFrame:
    """Each MPI case and rank count: time per run and per item, the speedup over one rank,
    the job's figures."""
    cases = {(m.workload, params_text(m, ("ranks",)), int(m.params["ranks"])): m
             for m in ms if m.workload.startswith("mpi_")}
    figures = [k for k in MPI_FIGURES if any(k in m.facts for m in cases.values())]
    rows = []
    for (case, params, ranks), m in sorted(cases.items()):
        single = cases.get((case, params, 1))
        rows.append({"case": case.removeprefix("mpi_"), "params": params, "ranks": ranks,
                     "per run": seconds_cell(m), "per item": seconds_cell(m, per_item),
                     "speedup": ratio(median(single), median(m)) if ranks > 1 else "",
                     **{k: _fact(m.facts[k]) if k in m.facts else "" for k in figures}})
    return pd.DataFrame(rows)


def _fact(value: float | str) -> str:
    """A fact as text: a hash shortened, a number to 4 digits."""
    return value[:12] if isinstance(value, str) else number(value, ".4g")
