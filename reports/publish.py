"""`hal publish`: keep a run as the reference result of its device.

The run's results file, its conformance results and the report built over them are copied
into `reports/reference/<device-name>/`, where later runs are compared against them
(`hal compare reports/reference/<device>/<run>.jsonl NEW`). Only a finished run without
failed measurements makes a reference: a workload missing or failed in the reference has
no verdict when a later run regresses on it.

A reference is one run: publishing another into the directory replaces the files the last
publication wrote there (listed in its `reference.json`). A run measured on a busy machine
(its load average at the start against its usable cores) or published without conformance
results is published with a warning.
"""

from __future__ import annotations

import json
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
MANIFEST = "reference.json"  # what the last publication wrote into a reference directory
BUSY_LOAD = 0.5  # load average per usable core from which a run counts as measured busy


class PublishError(ReportError):
    """A run that is not published: the message says why and what to do."""


@dataclass
class Published:
    """Where a run was published: the files copied there and the report built over them."""

    directory: Path
    copied: list[Path]
    report: list[Path]
    warnings: list[str]
    replaced: list[str]  # the run ids of the reference this one replaced


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


def busy(run: RunRecord) -> str | None:
    """A warning when the run started on a machine already loaded by other work (its load
    average at the start against its usable cores), or None."""
    load = (run.loadavg or [None])[0]
    cores = run.host.get("usable_cores") or run.host.get("cores")
    if load is None or not cores or load < BUSY_LOAD * cores:
        return None
    return (
        f"run {run.id} started at load average {load:.2f} on {cores} usable core(s): other "
        "work shared the machine, so later runs are compared with noisy figures; publish "
        "a run measured on an otherwise idle machine"
    )


def missing_conformance(results: list[Results]) -> str:
    """The warning for a run published without conformance results, naming the newest
    conformance file beside its results file where there is one."""
    beside = sorted(
        {p for r in results for p in Path(r.path).parent.glob("conformance-*.json")},
        key=lambda p: p.name,
    )
    hint = f" (the newest beside the run: {beside[-1]})" if beside else ""
    return (
        f"no conformance results published with run {', '.join(r.run.id for r in results)}: "
        "the reference does not say whether the device computes correctly; give "
        f"--conformance FILE (`hal conformance --out FILE`){hint}"
    )


def _replace_previous(directory: Path, keep: set[str]) -> list[str]:
    """Remove the files the last publication in `directory` wrote (its manifest) that are
    not among `keep`; return the run ids it held."""
    try:
        previous = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    for name in previous.get("files", []):
        path = directory / Path(name).name  # names only: nothing outside the directory
        if path.name in keep or path.name == MANIFEST:
            continue
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
    return [run for run in previous.get("runs", []) if run]


def _others(directory: Path, keep: set[str]) -> list[str]:
    """Results files in `directory` that no manifest accounts for (published before
    manifests, or put there by hand)."""
    return sorted(p.name for p in directory.glob("*.jsonl") if p.name not in keep)


def publish(
    paths: Sequence[Path],
    conformance: Sequence[Path] = (),
    to: Path | None = None,
    force: bool = False,
) -> Published:
    """Copy one run's results file(s), conformance files and a report over them into the
    reference directory of their device (or `to`), replacing the run published there
    before; the outcome carries the warnings (a busy machine, no conformance results).

    Raises `benchmarks.schema.records.ResultsError` for an unreadable file and `PublishError` for a
    run that did not complete or has failed measurements (unless `force`), for files of
    several runs, or for a run whose device cannot be told (give `to`).
    """
    for path in paths:
        if is_conformance(path):
            raise PublishError(f"{path} holds conformance results: give it with --conformance")
    results = [load_results(p) for p in paths]
    for path in conformance:
        read_conformance(path)  # a malformed file is refused before anything is copied
    runs = sorted({r.run.id for r in results})
    if len(runs) > 1:
        raise PublishError(
            f"a reference is one run, and {', '.join(map(str, paths))} hold runs "
            f"{', '.join(runs)}: publish one of them"
        )
    problems = [why for why in map(refusal, results) if why]
    if problems and not force:
        raise PublishError("; ".join(problems) + "; pass --force to publish it anyway")
    warnings = [why for why in (busy(r.run) for r in results) if why]
    if not conformance:
        warnings.append(missing_conformance(results))
    directory = Path(to) if to is not None else _destination(results)
    report_dir = f"{runs[0]}-report"
    keep = {Path(p).name for p in [*paths, *conformance]} | {report_dir}
    try:
        directory.mkdir(parents=True, exist_ok=True)
        replaced = [r for r in _replace_previous(directory, keep) if r != runs[0]]
        others = _others(directory, keep)
        copied = [_copy(Path(p), directory) for p in [*paths, *conformance]]
        manifest = json.dumps({"runs": runs, "files": sorted(keep)}, indent=1)
        (directory / MANIFEST).write_text(manifest + "\n", encoding="utf-8")
    except OSError as exc:
        raise PublishError(f"cannot publish to {directory}: {exc.strerror or exc}") from exc
    if others:
        warnings.append(
            f"{directory} also holds {', '.join(others)}, not published by `hal publish`: "
            "a reference is one run; remove them"
        )
    report = build_report(copied, directory / report_dir)
    return Published(directory, copied, report, warnings, replaced)
