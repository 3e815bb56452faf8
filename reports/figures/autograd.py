"""The "Autograd" section: f^(k) of sin(x) exp(-x^2) by hal Taylor mode, hal nested reverse
mode, jax jet and torch nested autograd side by side per order: time per call with the
error against the closed form, and the peak memory of a call."""

from __future__ import annotations

import pandas as pd

from benchmarks.schema.records import Measurement, Results
from reports.figures.lookup import number, seconds_cell, suite_section
from reports.section import Block, Section


def sections(results: list[Results]) -> list[Section]:
    """The section, empty without autograd suite measurements."""
    return suite_section(results, "autograd", "Autograd", _blocks)


def _blocks(ms: list[Measurement]) -> list[Block]:
    blocks: list[Block] = []
    time = side_by_side(ms, _time_cell)
    if not time.empty:
        n = ", ".join(sorted({str(m.params["n"]) for m in ms}))
        blocks += [f"f^(k) of sin(x) exp(-x^2) at {n} points: median time per call and the "
                   "normwise error against the Hermite closed form; hal on each backend, the "
                   "peers on the host.", time]
    memory = side_by_side(ms, _memory_cell)
    if memory.drop(columns=["k", "dtype"]).ne("").any(axis=None):
        blocks += ["Peak memory of a call (MiB): the resident high-water mark above the "
                   "inputs, in a fresh process, so hal, XLA and torch buffers count alike.",
                   memory]
    return blocks


def who(m: Measurement) -> str:
    """The column of a measurement: hal's mode and device, or the peer and its version."""
    how = m.workload.removeprefix("autograd-")
    return f"{how} ({m.params['peer']})" if "peer" in m.params else f"hal {how} on {m.device}"


def _time_cell(m: Measurement) -> str:
    error = m.check.max_error if m.status == "ok" and m.check else None
    return seconds_cell(m) + (f" (err {error:.0e})" if error is not None else "")


def _memory_cell(m: Measurement) -> str:
    return number(m.metrics.get("footprint_mib"), ".3g") if m.status == "ok" else ""


def side_by_side(ms: list[Measurement], cell) -> pd.DataFrame:
    """Order and dtype x who: `cell(measurement)`, empty where one did not measure."""
    table: dict[tuple[int, str], dict[str, str]] = {}
    columns: list[str] = []
    for m in sorted(ms, key=lambda m: ("peer" in m.params, m.workload, m.device)):
        column = who(m)
        if column not in columns:
            columns.append(column)
        table.setdefault((int(m.params["order"]), m.dtype), {})[column] = cell(m)
    rows = [{"k": k, "dtype": dtype, **{c: found.get(c, "") for c in columns}}
            for (k, dtype), found in sorted(table.items(), key=lambda kv: (kv[0][1] != "float64",
                                                                          kv[0][0]))]
    return pd.DataFrame(rows, columns=["k", "dtype", *columns])
