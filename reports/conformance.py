"""Conformance results (`hal conformance --out FILE`) read as data, without importing hal.

A file holds a JSON list with one object per certified backend: `backend`, `device`, `ok`,
`host` (absent in older files), `layers`, `cells` and `graphs` (absent in older files),
each cell an op x dtype with its `status` (pass, fail, fallback, unsupported), how the op
ran (`ran`: kernel, decomposed, fallback) and the `error` of a failure; each graph a jit
cell (a workload through `hal.jit`) with its `status`, the `path` it took (graph: the
backend's compile; fused: compile_fused groups; replay) and its `error`. Files are told
from results files by content: a conformance file is a JSON list, a results file is JSON
objects.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from benchmarks.schema.files import check_document_size, regular_file
from benchmarks.schema.records import ResultsError

STATUSES = ("pass", "fail", "fallback", "unsupported")
# How a cell counts in the report, in the order of its columns.
CATEGORIES = ("pass by kernel", "pass decomposed", "fallback", "unsupported", "fail")


class ConformanceError(ResultsError):
    """A conformance file that cannot be read: the message names the file and the problem."""


@dataclass
class ConformanceRun:
    """One backend's device as `hal conformance` certified it."""

    path: Path
    backend: str
    device: str
    ok: bool
    host: str = ""
    layers: list[dict[str, Any]] = field(default_factory=list)
    cells: list[dict[str, Any]] = field(default_factory=list)
    graphs: list[dict[str, Any]] = field(default_factory=list)


def is_conformance(path: Path) -> bool:
    """True when the file's content starts a JSON list (a results file starts an object)."""
    try:
        with open(path, encoding="utf-8") as f:
            return f.read(4096).lstrip().startswith("[")
    except (OSError, UnicodeDecodeError):
        return False


# field -> (accepted JSON types, in words, required)
_REPORT_FIELDS = {
    "backend": (str, "text", True),
    "device": ((str, type(None)), "text or null", True),
    "ok": (bool, "true or false", True),
    "host": (str, "text", False),
    "layers": (list, "a list", False),
    "cells": (list, "a list", True),
    "graphs": (list, "a list", False),
}
_CELL_FIELDS = {
    "op": (str, "text", True),
    "dtype": (str, "text", True),
    "status": (str, "text", True),
    "ran": (str, "text", False),
    "error": (str, "text", False),
}
_GRAPH_FIELDS = {
    "graph": (str, "text", True),
    "dtype": (str, "text", True),
    "status": (str, "text", True),
    "path": (str, "text", False),
    "error": (str, "text", False),
}
_LAYER_FIELDS = {
    "name": (str, "text", True),
    "ok": (bool, "true or false", True),
    "detail": (str, "text", False),
}


def _problem(value: Any, fields: dict[str, tuple], where: str) -> str | None:
    """What makes `value` unfit for an object with `fields`, in words (None when it fits)."""
    if not isinstance(value, dict):
        return f"{where} is not an object"
    for name, (types, words, required) in fields.items():
        if name not in value:
            if required:
                return f"{where} has no {name!r}"
        elif not isinstance(value[name], types):
            return f"{where}.{name} is {json.dumps(value[name])[:40]}, not {words}"
    return None


def _report_problem(i: int, report: Any) -> str | None:
    """The first problem of the list's item `i`, one backend's report."""
    problem = _problem(report, _REPORT_FIELDS, f"item {i}")
    if problem:
        return problem
    for j, layer in enumerate(report.get("layers", [])):
        problem = _problem(layer, _LAYER_FIELDS, f"item {i} layers[{j}]")
        if problem:
            return problem
    for key, fields in (("cells", _CELL_FIELDS), ("graphs", _GRAPH_FIELDS)):
        for j, cell in enumerate(report.get(key, [])):
            problem = _problem(cell, fields, f"item {i} {key}[{j}]")
            if problem:
                return problem
            if cell["status"] not in STATUSES:
                return (
                    f"item {i} {key}[{j}].status is {cell['status']!r}, not one of "
                    f"{', '.join(STATUSES)}"
                )
    return None


def read_conformance(path: Path) -> list[ConformanceRun]:
    """Read and validate a conformance file; ConformanceError names the file and the problem."""
    path, hint = regular_file(path), "write one with `hal conformance --out FILE`"
    check_document_size(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConformanceError(f"cannot read conformance file {path}: {exc}") from exc
    except ValueError as exc:
        raise ConformanceError(
            f"{path}: a conformance file that is not valid JSON ({exc}); {hint}"
        ) from exc
    if not isinstance(data, list):
        raise ConformanceError(f"{path}: not a conformance file (no list of reports); {hint}")
    for i, report in enumerate(data):
        problem = _report_problem(i, report)
        if problem:
            raise ConformanceError(f"{path}: not a hal conformance file: {problem}; {hint}")
    return [
        ConformanceRun(
            path=path,
            backend=r["backend"],
            device=r["device"] or r["backend"],
            ok=r["ok"],
            host=r.get("host", ""),
            layers=r.get("layers", []),
            cells=r["cells"],
            graphs=r.get("graphs", []),
        )
        for r in data
    ]


def category(status: str, ran: str) -> str:
    """How a cell counts: pass by kernel or decomposed, fallback, unsupported or fail.

    A cell counts as fallback when any op of it ran on the CPU fallback, or the op itself
    did (the CPU backend's own fallback).
    """
    if status in ("fail", "unsupported"):
        return status
    if status == "fallback" or ran == "fallback":
        return "fallback"
    return "pass decomposed" if ran == "decomposed" else "pass by kernel"


def cells_frame(runs: list[ConformanceRun]) -> pd.DataFrame:
    """Every cell of `runs` as a row: file, host (short), backend, device, op, dtype, status,
    ran, category and error."""
    columns = [
        "file",
        "host",
        "backend",
        "device",
        "op",
        "dtype",
        "status",
        "ran",
        "category",
        "error",
    ]
    rows = [
        {
            "file": r.path.name,
            "host": r.host.split(".")[0],
            "backend": r.backend,
            "device": r.device,
            "op": c["op"],
            "dtype": c["dtype"],
            "status": c["status"],
            "ran": c.get("ran", ""),
            "category": category(c["status"], c.get("ran", "")),
            "error": c.get("error", ""),
        }
        for r in runs
        for c in r.cells
    ]
    return pd.DataFrame(rows, columns=columns)


def jit_cells(run: ConformanceRun) -> str:
    """The run's jit cells in one line: each graph with the path it took, and its status
    where it did not pass ('kdv_step fused; random-0 graph (fail)')."""
    return "; ".join(
        f"{g['graph']} {g.get('path') or 'not run'}"
        + ("" if g["status"] == "pass" else f" ({g['status']})")
        for g in run.graphs
    )


def failed_graphs_frame(runs: list[ConformanceRun]) -> pd.DataFrame:
    """Every failed jit cell as a row of the failures table: host, backend, device, op (`jit`
    and the graph's name), dtype and error (with the path it took)."""
    rows = [
        {
            "host": r.host.split(".")[0],
            "backend": r.backend,
            "device": r.device,
            "op": f"jit {g['graph']}",
            "dtype": g["dtype"],
            "error": f"{g.get('path') or 'not run'}: {g.get('error', '')}",
        }
        for r in runs
        for g in r.graphs
        if g["status"] == "fail"
    ]
    return pd.DataFrame(rows, columns=["host", "backend", "device", "op", "dtype", "error"])
