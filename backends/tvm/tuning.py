"""Autotuning with meta_schedule: a JSON tuning database per target under the cache
directory, looked up by every compile, filled by `hal tune`.

Workloads are the PrimFuncs the kernels compile (captured by running the hal ops once),
so what is tuned is exactly what later runs. The database keeps every finished trial
as it is measured, so an interrupted or time-limited tuning keeps its work.

TVM's JSONDatabase takes the process down (a segfault or abort, not an exception) on some
files that are valid JSON but not of the shape it writes: a record that is an object or
null, a null run time, a decision naming no instruction, a blank line. So every database
is checked line by line in Python before TVM reads it (`database_problem`); a damaged one
is named in a warning, kernels keep the default schedule, and `hal tune` refuses it.

Two fixes to the installed TVM 0.27 live here: its x86 intrinsics module imports the
CUDA/ROCm/ARM intrinsic modules too (about 31 s per process, longer than the builder's
timeout), so those are stubbed before import, in this process and in every builder
worker; and its VNNI dot-product intrinsic fails LLVM 22 verification (operand types),
so it is registered again with uint8x64/int8x64 operands.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import functools
import json
import logging
import math
import os
import signal
import sys
import time
import types
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import hal

from .target import TargetInfo

_GPU_INTRINSICS = ("cuda", "rocm", "metal", "hexagon", "arm_cpu", "riscv_cpu")
VNNI_INTRIN = "dot_16x4_vnni"
BATCH = 16  # trials per search iteration: how long Ctrl-C or a time limit waits at most
_databases: dict[Path, object] = {}


class TuningDatabaseWarning(UserWarning):
    """A tuning database could not be read; kernels use the default schedule."""


def database_dir(info: TargetInfo) -> Path:
    """Where the tuning database of a target lives."""
    import tvm

    return hal.settings.cache_dir / "tvm" / f"{info.key}-tvm{tvm.__version__}" / "tuning"


def prepare() -> None:
    """Import TVM's x86 tensor intrinsics quickly and with a VNNI intrinsic LLVM accepts.

    Runs in this process before tuning or applying tuned schedules, and as the
    initializer of every builder worker.
    """
    if "tvm.s_tir.tensor_intrin.x86" in sys.modules and _vnni_fixed():
        return
    for name in _GPU_INTRINSICS:
        sys.modules.setdefault(f"tvm.s_tir.tensor_intrin.{name}",
                               types.ModuleType(f"tvm.s_tir.tensor_intrin.{name}"))
    import tvm.s_tir.tensor_intrin  # noqa: F401  (registers the x86 intrinsics)

    _register_vnni()


def prepare_worker(log: str) -> None:
    """A builder worker's initializer: prepare(), with its stderr in the log file."""
    _stderr_to(log)
    prepare()


def _stderr_to(log: str) -> int:
    """Point file descriptor 2 at a log file; returns a duplicate of the old one."""
    saved = os.dup(2)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 2)
    os.close(fd)
    return saved


@contextlib.contextmanager
def _quiet_stderr(log: str):
    """TVM's C++ warnings (one per vectorised loop and failed tensorize of every
    candidate, thousands per run) go to the log file while tuning, not the terminal."""
    sys.stderr.flush()
    saved = _stderr_to(log)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def _vnni_fixed() -> bool:
    return getattr(sys.modules[__name__], "_vnni_registered", False)


def _register_vnni() -> None:
    from tvm.s_tir import TensorIntrin
    from tvm.s_tir.tensor_intrin.x86 import dot_product_16x4_u8i8i32_desc
    from tvm.script import tirx as T

    @T.prim_func(s_tir=True)
    def vnni_impl(a: T.handle, b: T.handle, c: T.handle) -> None:
        A = T.match_buffer(a, (4,), "uint8", offset_factor=1)
        B = T.match_buffer(b, (16, 4), "int8", offset_factor=1)
        C = T.match_buffer(c, (16,), "int32", offset_factor=1)
        with T.sblock("root"):
            T.reads(C[0:16], A[0:4], B[0:16, 0:4])
            T.writes(C[0:16])
            a_i32 = T.reinterpret(A.vload([0], "uint8x4"), dtype="int32")
            C[T.ramp(T.int32(0), 1, 16)] = T.call_llvm_pure_intrin(
                T.llvm_lookup_intrinsic_id("llvm.x86.avx512.vpdpbusd.512"),
                C.vload([0], dtype="int32x16"),
                T.reinterpret(T.broadcast(a_i32, 16), dtype="uint8x64"),
                B.vload([0, 0], dtype="int8x64"),
                dtype="int32x16",
            )

    TensorIntrin.register(VNNI_INTRIN, dot_product_16x4_u8i8i32_desc, vnni_impl, override=True)
    sys.modules[__name__]._vnni_registered = True


def _files(directory: Path) -> tuple[Path, Path]:
    """The workload and tuning record files of the database in `directory`."""
    return directory / "database_workload.json", directory / "database_tuning_record.json"


def database_problem(directory: Path) -> str | None:
    """Why the tuning database in `directory` must not be handed to TVM ("file:line: what
    is wrong"), or None when each line has the shape TVM writes (or there is no database)."""
    workloads, records = _files(directory)
    count, problem = _check_lines(workloads, _workload_problem)
    if problem is None:
        problem = _check_lines(records, functools.partial(_record_problem, workloads=count))[1]
    return problem


def _check_lines(path: Path, check: Callable[[object], str | None]) -> tuple[int, str | None]:
    """(lines in `path`, the first problem as "file:line: what" or None)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    except (OSError, UnicodeDecodeError) as e:
        return 0, f"{path}: cannot be read ({e})"
    for number, line in enumerate(lines, start=1):
        try:
            problem = check(json.loads(line)) if line.strip() else "a blank line"
        except (ValueError, RecursionError) as e:
            problem = f"not JSON ({type(e).__name__}: {e})"
        if problem:
            return number, f"{path}:{number}: {problem}"
    return len(lines), None


def _is_list(value, length: int | None = None) -> bool:
    return isinstance(value, list) and (length is None or len(value) == length)


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _workload_problem(line) -> str | None:
    """What is wrong with a workload line: it is [structural hash, base64 of the module]."""
    if not (_is_list(line, 2) and all(isinstance(v, str) for v in line)):
        return "a workload is [structural hash, base64 module], two strings"
    try:
        base64.b64decode(line[1], validate=True)
    except binascii.Error:
        return "the workload's module is not base64"
    return None


def _record_problem(line, workloads: int) -> str | None:
    """What is wrong with a tuning record line: it is [workload index, [trace, run seconds,
    target, argument info]], the trace [instructions, decisions]."""
    if not (_is_list(line, 2) and _is_int(line[0]) and _is_list(line[1], 4)):
        return "a record is [workload index, [trace, run seconds, target, argument info]]"
    index, (trace, seconds, target, args) = line
    if not 0 <= index < workloads:
        return f"workload index {index} is not one of the file's {workloads} workloads"
    if not (_is_list(trace, 2) and _is_list(trace[0]) and _is_list(trace[1])):
        return "the trace is not [instructions, decisions]"
    instructions, decisions = trace
    if not all(_is_list(i, 4) and isinstance(i[0], str) and all(map(_is_list, i[1:]))
               for i in instructions):
        return "an instruction is not [name, inputs, attributes, outputs]"
    if not all(_is_list(d, 2) and _is_int(d[0]) and 0 <= d[0] < len(instructions)
               for d in decisions):
        return "a decision is not [index of an instruction, value]"
    if seconds is not None and not (_is_list(seconds) and all(
            isinstance(s, int | float) and not isinstance(s, bool) and math.isfinite(s)
            for s in seconds)):
        return "the run seconds are not a list of finite numbers"
    if target is not None and not (isinstance(target, dict)
                                   and isinstance(target.get("kind"), str)):
        return "the target is not an object with a 'kind'"
    if args is not None and not (_is_list(args) and all(
            _is_list(a) and a and isinstance(a[0], str) for a in args)):
        return "the argument info is not a list of [kind, ...] lists"
    return None


def check_database(info: TargetInfo) -> None:
    """Raise HalError naming the file and what to do if the target's database is damaged."""
    directory = database_dir(info)
    problem = database_problem(directory)
    if problem:
        raise hal.HalError(f"tuning database {directory} is damaged ({problem}); delete or "
                           "move that directory, then run `hal tune` again")


def open_database(info: TargetInfo):
    """The target's JSONDatabase, or None when there is none (or it cannot be read: a
    TuningDatabaseWarning names the file, and kernels keep the default schedule)."""
    from tvm.s_tir import meta_schedule as ms

    directory = database_dir(info)
    if directory in _databases:
        return _databases[directory]
    workloads, records = _files(directory)
    if not records.exists():
        return None
    db, problem = None, database_problem(directory)
    if problem is None:
        prepare()
        try:
            db = ms.database.JSONDatabase(path_workload=str(workloads),
                                          path_tuning_record=str(records),
                                          allow_missing=True)
        except Exception as e:
            problem = f"{records}: {type(e).__name__}: {(str(e).splitlines() or [''])[0][:300]}"
    if problem:
        warnings.warn(
            f"tuning database {directory} cannot be used ({problem}); kernels use the default "
            "schedule. Delete or move that directory, then run `hal tune` again to rebuild it.",
            TuningDatabaseWarning, stacklevel=2)
    _databases[directory] = db
    return db


def forget_databases() -> None:
    """Drop the databases this process has read (after tuning wrote new records)."""
    _databases.clear()


def _default_list(info: TargetInfo) -> Path:
    return database_dir(info) / "default-schedule-kept.txt"


def keep_default(func, info: TargetInfo) -> None:
    """Record that a PrimFunc runs faster with the default schedule than with its best
    tuning record: lookup() answers None for it from now on."""
    from tvm_ffi import structural_hash

    with open(_default_list(info), "a") as f:
        f.write(f"{structural_hash(func)}\n")


def default_kept(func, info: TargetInfo) -> bool:
    """True if tuning found the default schedule of this PrimFunc faster (keep_default)."""
    from tvm_ffi import structural_hash

    try:
        return str(structural_hash(func)) in _default_list(info).read_text().split()
    except OSError:
        return False


def lookup(func, info: TargetInfo):
    """The tuned IRModule of a PrimFunc from the target's database, or None (none tuned, or
    the default schedule measured faster)."""
    db = open_database(info)
    if db is None:
        return None
    if default_kept(func, info):
        return None
    from tvm import ir

    mod = ir.IRModule({"main": func})
    try:
        sch = db.query_schedule(mod, info.target, workload_name="main")
    except Exception as e:  # a record from another TVM that no longer applies
        warnings.warn(f"tuning database {database_dir(info)}: a record could not be applied "
                      f"({type(e).__name__}); using the default schedule",
                      TuningDatabaseWarning, stacklevel=2)
        return None
    return None if sch is None else sch.mod


def runs(info: TargetInfo, last: int = 10) -> list[dict]:
    """The last `hal tune` runs for a target (from the database's runs.jsonl), newest last."""
    try:
        lines = (database_dir(info) / "runs.jsonl").read_text().splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    found = []
    for line in lines[-last:]:
        with contextlib.suppress(ValueError):
            found.append(json.loads(line))
    return [run for run in found if isinstance(run, dict)]


@dataclass
class Outcome:
    """What a tuning run did: trials measured, seconds, and whether it was cut short."""

    trials: int
    seconds: float
    stopped: str | None  # None, "time limit" or "interrupted"


class _Stop(Exception):
    """Raised from the measure callback to end tuning (time limit or Ctrl-C)."""


def tune(funcs: list, info: TargetInfo, trials: int, time_limit: float | None = None,
         progress: Callable[[int], None] | None = None) -> Outcome:
    """Tune PrimFuncs together for up to `trials` trials (and `time_limit` seconds).

    Records go to the target's database as they are measured; Ctrl-C or the time limit
    ends tuning with what was found so far.
    """
    from tvm import ir
    from tvm.ir.utils import derived_object
    from tvm.s_tir import meta_schedule as ms

    check_database(info)
    prepare()
    directory = database_dir(info)
    directory.mkdir(parents=True, exist_ok=True)
    # meta_schedule logs every step to stdout at the level its logger has before tuning
    # starts; keep the console to warnings (the full log goes to <database>/logs).
    logging.getLogger("tvm.s_tir.meta_schedule").setLevel(logging.WARNING)
    start = time.perf_counter()
    done = [0]
    stop: list[str] = []  # why tuning should end at the next batch: "interrupted", ...

    @derived_object
    class Progress(ms.measure_callback.PyMeasureCallback):
        def apply(self, task_scheduler, task_id, candidates, builds, runs) -> None:
            done[0] += len(candidates)
            if progress is not None:
                progress(done[0])
            if time_limit is not None and time.perf_counter() - start > time_limit:
                stop.append("time limit")
            if stop:
                raise _Stop(stop[0])  # crosses TVM's FFI as a RuntimeError

    mod = ir.IRModule({f"w{i}": f for i, f in enumerate(funcs)})
    log = str(directory / "tvm-warnings.log")
    db = ms.database.JSONDatabase(work_dir=str(directory), allow_missing=True)
    try:
        with _ctrl_c_requests(stop), _quiet_stderr(log):
            ms.tune_tir(
                mod, info.target, str(directory), max_trials_global=trials * len(funcs),
                max_trials_per_task=trials, num_trials_per_iter=min(BATCH, trials),
                # A builder worker starts in ~4 s with the stubs; LLVM on an over-unrolled
                # candidate can take minutes, and such a candidate is never the best.
                builder=ms.builder.LocalBuilder(
                    initializer=functools.partial(prepare_worker, log), timeout_sec=30),
                runner=ms.runner.LocalRunner(timeout_sec=60),
                database=db,
                measure_callbacks=[*ms.measure_callback.MeasureCallback.create("default"),
                                   Progress()],
                num_tuning_cores=dict(info.config).get("num-cores", "physical"),
            )
    except Exception as e:
        if not stop:
            raise hal.HalError(f"tuning failed for {info.key}: {type(e).__name__}: "
                               f"{str(e)[:1000]}") from e
    forget_databases()
    return Outcome(done[0], time.perf_counter() - start, stop[0] if stop else None)


@contextlib.contextmanager
def _ctrl_c_requests(stop: list[str]):
    """Ctrl-C during tuning asks it to stop after the batch being measured (whose trials
    are then in the database); a second Ctrl-C interrupts at once."""
    def request(signum, frame):
        stop.append("interrupted")
        signal.signal(signal.SIGINT, signal.default_int_handler)

    try:
        previous = signal.signal(signal.SIGINT, request)
    except ValueError:  # not the main thread: Ctrl-C cannot reach this tuning anyway
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
