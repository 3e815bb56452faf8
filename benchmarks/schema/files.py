"""Results files: appending records durably under a lock, and reading them back.

One process at a time writes a results file: its writer holds the file's lock (`lock`).
Readers skip a truncated or corrupt line, or a record whose fields have the wrong JSON
types (a list for an object, text for a number, NaN among the samples), with a warning
naming file:line. They refuse a major schema version they do not know, a line longer than
any record (`max_record_bytes`; read no further) and what is no regular file (a symbolic
link loop, a FIFO). `load_results` also reads pytest-benchmark JSON files, telling them
apart by their contents.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, TextIO

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
MAX_RECORD_VARIABLE = "HAL_MAX_RECORD_BYTES"
MAX_RECORD_BYTES = 64 << 20
"""The largest record (JSON line) readers accept unless HAL_MAX_RECORD_BYTES says otherwise:
hal writes records of kilobytes; a line this long is damage, or no results file."""


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


def max_record_bytes() -> int:
    """The largest record a reader accepts, in bytes: HAL_MAX_RECORD_BYTES, else 64 MiB."""
    value = os.environ.get(MAX_RECORD_VARIABLE, "").strip()
    if not value:
        return MAX_RECORD_BYTES
    if not value.isdigit() or int(value) < 1:
        raise ResultsError(f"{MAX_RECORD_VARIABLE}={value!r}: give the largest record a results "
                           "file may hold as a whole number of bytes")
    return int(value)


def regular_file(path: Path) -> Path:
    """The path of a results file that can be read: ResultsError naming it when it is
    missing, unreachable (a symbolic link loop among the causes) or no regular file (a
    FIFO would leave its reader waiting)."""
    path = Path(path)
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        hint = ": a symbolic link that leads back to itself; remove it or point it at a " \
            "results file" if exc.errno == errno.ELOOP else ""
        raise ResultsError(f"cannot read results file {path}: {exc.strerror or exc}{hint}") \
            from exc
    if not stat.S_ISREG(mode):
        raise ResultsError(f"{path} is not a regular file (a directory, FIFO or device); "
                           "give results files, or directories of them")
    return path


def _lines(f: BinaryIO, path: Path) -> Iterator[tuple[int, bytes]]:
    """(line number, line) of a file, refusing a line over `max_record_bytes()` with
    ResultsError as soon as that much of it is read."""
    limit = max_record_bytes()
    for lineno, line in enumerate(iter(lambda: f.readline(limit + 1), b""), start=1):
        if len(line) > limit and not line.endswith(_NEWLINE):
            raise ResultsError(
                f"{path}:{lineno}: a line of more than {limit} bytes, longer than any record: "
                "the file is damaged or no hal results file; cut that line out (or, for a "
                f"record that long, raise {MAX_RECORD_VARIABLE})")
        yield lineno, line


def read_results(path: Path) -> Results:
    """Read a JSON-lines results file; corrupt lines are skipped with a warning, a line
    longer than any record is refused (see `max_record_bytes`)."""
    path = regular_file(path)
    run: RunRecord | None = None
    by_key: dict[MeasurementKey, Measurement] = {}
    completed = False
    try:
        f = open(path, "rb")
    except OSError as exc:
        raise ResultsError(f"cannot read results file {path}: {exc.strerror or exc}") from exc
    with f:
        records = [(lineno, line) for lineno, line in _lines(f, path) if line.strip()]
    for lineno, line in records:
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
    """Read a hal results file or a pytest-benchmark JSON file, telling them apart by content
    (a pytest-benchmark file, one JSON document, is one record for `max_record_bytes`)."""
    path = regular_file(path)
    try:
        with open(path, encoding="utf-8") as f:
            head = f.read(4096)
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultsError(f"cannot read results file {path}: {exc}") from exc
    first_line = head.split("\n", 1)[0]
    if not (head.lstrip().startswith("{") and '"type"' not in first_line):
        return read_results(path)
    check_document_size(path)
    return load_pytest_benchmark(path)


def check_document_size(path: Path) -> None:
    """Refuse, unread, a one-document JSON file (it is one record) over `max_record_bytes()`."""
    size, limit = path.stat().st_size, max_record_bytes()
    if size > limit:
        raise ResultsError(f"{path}: a JSON document of {size} bytes, more than the {limit} a "
                           f"record may have; raise {MAX_RECORD_VARIABLE} to read it")
