"""Autotuning with meta_schedule: a JSON tuning database per target under the cache
directory, looked up by every compile, filled by `hal tune`.

Workloads are the PrimFuncs the kernels compile (captured by running the hal ops once),
so what is tuned is exactly what later runs. The database keeps every finished trial
as it is measured, so an interrupted or time-limited tuning keeps its work.

Two fixes to the installed TVM 0.27 live here: its x86 intrinsics module imports the
CUDA/ROCm/ARM intrinsic modules too (about 31 s per process, longer than the builder's
timeout), so those are stubbed before import, in this process and in every builder
worker; and its VNNI dot-product intrinsic fails LLVM 22 verification (operand types),
so it is registered again with uint8x64/int8x64 operands.
"""

from __future__ import annotations

import contextlib
import functools
import logging
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


def open_database(info: TargetInfo):
    """The target's JSONDatabase, or None when there is none (or it cannot be read: a
    TuningDatabaseWarning names the file, and kernels keep the default schedule)."""
    from tvm.s_tir import meta_schedule as ms

    directory = database_dir(info)
    if directory in _databases:
        return _databases[directory]
    records = directory / "database_tuning_record.json"
    workloads = directory / "database_workload.json"
    if not records.exists():
        return None
    prepare()
    try:
        db = ms.database.JSONDatabase(path_workload=str(workloads),
                                      path_tuning_record=str(records), allow_missing=True)
    except Exception as e:
        warnings.warn(
            f"tuning database {records} (with {workloads.name}) cannot be read "
            f"({type(e).__name__}: "
            f"{str(e).splitlines()[0][:300]}); kernels use the default schedule. Delete "
            f"the directory or run `hal tune` again to rebuild it.", TuningDatabaseWarning,
            stacklevel=2)
        db = None
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
    import json

    try:
        lines = (database_dir(info) / "runs.jsonl").read_text().splitlines()
    except OSError:
        return []
    found = []
    for line in lines[-last:]:
        with contextlib.suppress(ValueError):
            found.append(json.loads(line))
    return found


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
