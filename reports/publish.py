"""`hal publish`: keep a run as the reference result of its device.

The run's results file, its conformance results and the report built over them are copied
into `reports/reference/<device-name>/`, where later runs are compared against them
(`hal compare reports/reference/<device>/<run>.jsonl NEW`). Only a finished run without
failed measurements makes a reference: a workload missing or failed in the reference has
no verdict when a later run regresses on it.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks.schema.files import load_results
from benchmarks.schema.records import Results, RunRecord
from reports.conformance import is_conformance, read_conformance
from reports.report import ReportError, build_report

REFERENCE_DIR = Path(__file__).resolve().parent / "reference"


class PublishError(ReportError):
    """A run that is not published: the message says why and what to do."""


@dataclass
class Published:
    """Where a run was published: the files copied there and the report built over them."""

    directory: Path
    copied: list[Path]
    report: list[Path]


def directory_name(name: str) -> str:
    """A device name as a directory name: characters outside [A-Za-z0-9._-] become `_`."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", name).strip("_")


def device_names(run: RunRecord) -> set[str]:
    """The capabilities names of the run's non-cpu devices, or of its devices when all are
    cpu (`""` for a device that never reported one)."""
    devices = [d for d in run.devices if d.backend != "cpu"] or run.devices
    return {d.capabilities.get("name") or "" for d in devices}


def refusal(results: Results) -> str | None:
    """Why a run may not be a reference (unfinished, or with failed measurements), or None."""
    if not results.completed:
        return (
            f"run {results.run.id} ({results.path}) did not complete; finish it with "
            f"`hal bench --resume {results.path}`"
        )
    failed = [m for m in results.measurements if m.status in ("failed", "timeout")]
    if failed:
        names = ", ".join(f"{m.suite}/{m.workload} on {m.device} ({m.status})" for m in failed)
        return (
            f"run {results.run.id} ({results.path}) has {len(failed)} failed "
            f"measurement(s): {names}; a reference with failures gives later runs no "
            "verdict on those workloads"
        )
    return None


def _destination(results: list[Results]) -> Path:
    """reports/reference/<device-name> of the runs (all must name the same one device)."""
    names = set().union(*(device_names(r.run) for r in results))
    if len(names) != 1 or "" in names:
        found = ", ".join(sorted(n or "(unnamed)" for n in names)) or "none"
        files = ", ".join(str(r.path) for r in results)
        raise PublishError(
            f"cannot tell the one device of {files} (device names: {found}); "
            "name the directory with --to DIR"
        )
    name = directory_name(names.pop())
    if name in ("", ".", ".."):
        raise PublishError("the device name gives no directory name; name one with --to DIR")
    return REFERENCE_DIR / name


def _copy(path: Path, directory: Path) -> Path:
    """`path` copied into `directory` (left as it is when it already lies there)."""
    target = directory / path.name
    if not (target.exists() and target.samefile(path)):
        shutil.copy2(path, target)
    return target


def publish(
    paths: Sequence[Path],
    conformance: Sequence[Path] = (),
    to: Path | None = None,
    force: bool = False,
) -> Published:
    """Copy results files, conformance files and a report over them into the reference
    directory of their device (or `to`).

    Raises `benchmarks.schema.records.ResultsError` for an unreadable file and `PublishError` for a
    run that did not complete or has failed measurements (unless `force`), or whose device
    cannot be told (give `to`).
    """
    for path in paths:
        if is_conformance(path):
            raise PublishError(f"{path} holds conformance results: give it with --conformance")
    results = [load_results(p) for p in paths]
    for path in conformance:
        read_conformance(path)  # a malformed file is refused before anything is copied
    problems = [why for why in map(refusal, results) if why]
    if problems and not force:
        raise PublishError("; ".join(problems) + "; pass --force to publish it anyway")
    directory = Path(to) if to is not None else _destination(results)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        copied = [_copy(Path(p), directory) for p in [*paths, *conformance]]
    except OSError as exc:
        raise PublishError(f"cannot publish to {directory}: {exc.strerror or exc}") from exc
    report = build_report(copied, directory / f"{results[0].run.id}-report")
    return Published(directory, copied, report)
