"""Results files: appending records durably under a lock, and reading them back.

One process at a time writes a results file: its writer holds the file's lock (`lock`).
Readers skip a truncated or corrupt line, or a record whose fields have the wrong JSON
types (a list for an object, text for a number, NaN among the samples), with a warning
naming file:line, and reject a major schema version they do not know. `load_results`
also reads pytest-benchmark JSON files, telling them apart by their contents.
"""

from __future__ import annotations

import json
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from benchmarks.schema.lock import RunLock
from benchmarks.schema.pytest_benchmark import load_pytest_benchmark
from benchmarks.schema.records import (
    SCHEMA_VERSION,
    Measurement,
    MeasurementKey,
    Results,
    ResultsError,
    RunRecord,
    SchemaVersionError,
    utc_now,
)
from benchmarks.schema.validation import from_dict

_NEWLINE = b"\n"


class ResultWriter:
    """Appends records to a results file, flushing and fsyncing each one as it is written;
    holds the file's RunLock from opening to `close()`.

    A file whose last line lacks its newline (a write cut short by a crash) is mended
    first, with a warning naming file:line, so that the next record starts a line of its
    own: a whole record gets its newline, an unfinished one is cut off.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.lock = RunLock(self.path)
        try:
            self._mend_torn_tail()
            self._file: TextIO = open(self.path, "a", encoding="utf-8")
        except BaseException:
            self.lock.release()
            raise

    def _mend_torn_tail(self) -> None:
        try:
            f = open(self.path, "rb+")
        except FileNotFoundError:
            return
        with f:
            data = f.read()
            if not data or data.endswith(_NEWLINE):
                return
            start = data.rfind(_NEWLINE) + 1
            where = f"{self.path}:{data.count(_NEWLINE) + 1}"
            try:
                json.loads(data[start:])
            except ValueError:
                f.truncate(start)
                warnings.warn(f"{where}: cut off a torn last line ({len(data) - start} bytes "
                              "of an unfinished record) before appending", stacklevel=3)
            else:
                f.write(_NEWLINE)
                warnings.warn(f"{where}: the last record lacked its newline; added it before "
                              "appending", stacklevel=3)

    def _write(self, record: dict[str, Any]) -> None:
        """Write one JSON line and make it durable."""
        self._file.write(json.dumps(record, default=str) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def write_run(self, run: RunRecord) -> None:
        """Write (or rewrite, e.g. with peaks filled in) the run record."""
        self._write(run.to_dict())

    def write(self, measurement: Measurement) -> None:
        """Append one measurement."""
        self._write(measurement.to_dict())

    def write_end(self, run_id: str, completed: bool) -> None:
        """Record when the run stopped and whether everything asked for was measured."""
        self._write(
            {
                "type": "end",
                "schema": SCHEMA_VERSION,
                "run": run_id,
                "end": utc_now(),
                "completed": completed,
            }
        )

    def close(self) -> None:
        """Close the file and release its lock."""
        self._file.close()
        self.lock.release()

    def __enter__(self) -> ResultWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class _End:
    """The fields of an `end` record that a reader uses."""

    completed: bool = False
    end: str | None = None


def _check_version(version: Any, where: str) -> None:
    """Raise SchemaVersionError unless `version` has this reader's major version."""
    major = str(SCHEMA_VERSION).split(".")[0]
    if str(version).split(".")[0] != major:
        raise SchemaVersionError(
            f"{where}: results schema version {version} is not readable by this version of "
            f"hal (reads {major}.x, writes {SCHEMA_VERSION}); use a hal release that writes "
            f"schema {version}"
        )


def read_results(path: Path) -> Results:
    """Read a JSON-lines results file; corrupt lines are skipped with a warning."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultsError(f"cannot read results file {path}: {exc}") from exc
    run: RunRecord | None = None
    by_key: dict[MeasurementKey, Measurement] = {}
    completed = False
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            record = json.loads(line)
            if not (isinstance(record, dict) and isinstance(record.get("type"), str)
                    and isinstance(record.get("schema"), str)):
                raise ValueError("not a record object with a 'type' and a 'schema'")
        except ValueError as exc:
            warnings.warn(f"{where}: skipped a truncated or corrupt line ({exc})", stacklevel=2)
            continue
        _check_version(record.pop("schema"), where)
        kind = record.pop("type")
        try:
            if kind == "run":
                run = from_dict(RunRecord, record)
            elif kind == "measurement":
                m = Measurement.from_dict(record)
                by_key[m.key] = m
            elif kind == "end":
                end = from_dict(_End, record)
                completed = end.completed
                if run is not None:
                    run.end = end.end
            else:
                raise ValueError(f"unknown record type {kind!r}")
        except (TypeError, ValueError) as exc:
            warnings.warn(f"{where}: skipped an invalid {kind} record ({exc})", stacklevel=2)
    if run is None:
        raise ResultsError(f"{path}: no run record; is this a hal results file?")
    return Results(path=path, run=run, measurements=list(by_key.values()), completed=completed)


def load_results(path: Path) -> Results:
    """Read a hal results file or a pytest-benchmark JSON file, telling them apart by content."""
    path = Path(path)
    try:
        with open(path, encoding="utf-8") as f:
            head = f.read(4096)
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultsError(f"cannot read results file {path}: {exc}") from exc
    first_line = head.split("\n", 1)[0]
    if head.lstrip().startswith("{") and '"type"' not in first_line:
        return load_pytest_benchmark(path)
    return read_results(path)
