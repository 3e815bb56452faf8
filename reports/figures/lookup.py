"""A suite's measurements in results files, and the figures a section reads from them.

Figures of different runs are never mixed: a section holds one part per run, named by
the run when there are several. A figure that was not measured shows the measurement's
status (its whole reason is in the report's "Skipped and failed" section).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from benchmarks.schema.records import Measurement, Results
from reports.frame import format_params, format_seconds
from reports.section import Block, Section


def suite_section(results: list[Results], suite: str, title: str,
             blocks: Callable[[list[Measurement]], list[Block]]) -> list[Section]:
    """The section `title` of `suite`'s measurements: `blocks(measurements)` of each run
    that has any, each introduced by its run id when there are several; none without."""
    runs = [(r.run.id, [m for m in r.measurements if m.suite == suite]) for r in results]
    runs = [(run, ms) for run, ms in runs if ms]
    if not runs:
        return []
    section = Section(title)
    for run, ms in runs:
        if len(runs) > 1:
            section.blocks.append(f"Run `{run}`:")
        section.blocks += blocks(ms)
    return [section]


def case_and_label(m: Measurement) -> tuple[str, str]:
    """A workload name `case[label]` split, e.g. ("kdv_kt", "jit"); ("name", "") without."""
    case, _, label = m.workload.partition("[")
    return case, label.rstrip("]")


def of_cases(ms: Iterable[Measurement], cases: Iterable[str]) -> list[tuple[Measurement, str, str]]:
    """(measurement, case, label) of each measurement whose case is one of `cases`."""
    wanted = set(cases)
    return [(m, *case_and_label(m)) for m in ms if case_and_label(m)[0] in wanted]


def params_text(m: Measurement, leave_out: Iterable[str] = ()) -> str:
    """The measurement's params as a label, without those that name who ran it."""
    return format_params({k: v for k, v in m.params.items() if k not in set(leave_out)})


def ok(ms: Iterable[Measurement]) -> list[Measurement]:
    """The measurements whose status is `ok`."""
    return [m for m in ms if m.status == "ok"]


def median(m: Measurement | None) -> float | None:
    """Median seconds per call of an `ok` measurement, else None."""
    return m.median if m is not None and m.status == "ok" else None


def per_item(m: Measurement | None) -> float | None:
    """Median seconds per item (step, node, sample) of an `ok` measurement, else None."""
    seconds = median(m)
    return seconds / m.items if seconds is not None and m.items else None


def seconds_cell(m: Measurement | None, figure: Callable[[Measurement | None], float | None]
                 = median) -> str:
    """A time figure of a measurement with its unit; its status when it is not `ok`, empty
    without a measurement."""
    if m is None:
        return ""
    value = figure(m)
    return format_seconds(value) if value is not None else m.status


def ratio(numerator: float | None, denominator: float | None) -> str:
    """numerator / denominator to two decimals, empty where either is missing."""
    if numerator is None or not denominator:
        return ""
    return f"{numerator / denominator:.2f}"


def number(value: float | None, fmt: str = ".3g") -> str:
    """A figure formatted, empty where it is missing."""
    return "" if value is None else format(value, fmt)


def error_cell(m: Measurement) -> str:
    """The output check's error against the reference, empty without a check."""
    return number(m.check.max_error if m.check else None, ".2g")


def full_solve(m: Measurement) -> str:
    """A solve of `full_steps` (its params) extrapolated from the steps measured (its items):
    the time per step times the count, with the count; empty where the measurement is the
    whole solve or has no time."""
    full, step = m.params.get("full_steps"), per_item(m)
    if step is None or not full or full <= (m.items or 1):
        return ""
    return f"{format_seconds(step * full)} ({full} steps)"
