"""`hal tune`: autotune the TVM kernels of named workloads with meta_schedule.

    hal tune                                   gemm, linear_gelu and qmatmul, 64 trials each
    hal tune --workload gemm:2048x2048x2048 --trials 256 --time-limit 600
    hal tune --list                            the workloads and their default shapes

Each workload runs once to capture the kernels it compiles, they are tuned together,
and the best schedules are rebuilt into the kernel cache, so every later process runs
them. Ctrl-C or the time limit stops tuning and keeps the trials measured so far.
A JSON line per tuning run is appended to the database's `runs.jsonl`.
"""

from __future__ import annotations

import json
import time


def register(subparsers) -> None:
    """Add `hal tune` to the hal command line (the `hal.commands` entry point)."""
    from hal.cli import positive_float, positive_int  # the hal command's shared types

    p = subparsers.add_parser("tune", help="autotune TVM kernels (meta_schedule) for workloads")
    p.add_argument("--workload", action="append", metavar="NAME[:SHAPE]",
                   help="workload to tune (repeatable; default: gemm, linear_gelu, qmatmul)")
    p.add_argument("--trials", type=positive_int, default=64,
                   help="trials per kernel (default 64)")
    p.add_argument("--time-limit", type=positive_float, metavar="S",
                   help="stop tuning after S seconds")
    p.add_argument("--more", action="store_true",
                   help="tune kernels that are tuned already too (default: skip them)")
    p.add_argument("--device", default="tvm:0", help="the TVM device to tune for")
    p.add_argument("--list", action="store_true", help="list the workloads and exit")
    p.set_defaults(func=tune_command)


def tune_command(args) -> int:
    """Run `hal tune`; the exit code is 0, or 130 when interrupted."""
    from rich.console import Console

    from . import workloads

    console = Console()
    if args.list:
        for name, (_, shape, what) in workloads.WORKLOADS.items():
            console.print(f"{name:18} {'x'.join(map(str, shape)):16} {what}")
        return 0
    specs = [workloads.parse(w) for w in (args.workload or workloads.DEFAULT)]
    summary = tune(specs, args.device, args.trials, args.time_limit, console, args.more)
    return 130 if summary["stopped"] == "interrupted" else 0


def tune(specs, device_name: str, trials: int, time_limit: float | None, console,
         more: bool = False) -> dict:
    """Capture, tune and rebuild the kernels of `specs` (those not tuned yet, unless
    `more`); returns the run's summary."""
    import hal
    from hal import HalError

    from . import tuning, workloads

    device = hal.device(device_name)
    if device.backend.name != "tvm":
        raise HalError(f"hal tune tunes TVM kernels; {device_name} is a "
                       f"{device.backend.name} device (use --device tvm:0)")
    tuning.check_database(device.info)  # before any kernel compiles and warns about it
    compiler = device.compiler
    captured = []
    with compiler.capture() as found:
        for spec in specs:
            workloads.run(spec, device)
            captured.extend((str(spec), w) for w in found[len(captured):])
    unique = {w.key: (label, w) for label, w in captured}
    tuned = [key for key, (_, w) in unique.items() if compiler.current(w).schedule == "tuned"
             or tuning.default_kept(w.func, device.info)]
    if tuned and not more:
        console.print(f"{len(tuned)} kernel(s) are tuned already (or keep a default schedule "
                      "that measured faster) and are skipped; --more tunes them further")
        for key in tuned:
            del unique[key]
    before = {key: _time(compiler, w, device) for key, (_, w) in unique.items()}
    funcs = [w.func for _, w in unique.values()]
    if not funcs:
        return {"trials": 0, "stopped": None, "kernels": []}
    console.print(f"tuning {len(funcs)} kernel(s) of {', '.join(map(str, specs))} for "
                  f"{device.info.key}: {trials} trials each"
                  + (f", at most {time_limit:.0f} s" if time_limit else ""))
    outcome = _tune_with_progress(funcs, device.info, trials, time_limit, console)
    rows = []
    for key, (label, w) in unique.items():
        mod = tuning.lookup(w.func, device.info)
        if mod is None:
            rows.append(_row(label, w, before[key], None, "no valid trial"))
            continue
        compiler.rebuild(w, mod)
        after = _time(compiler, w, device)
        if after > before[key]:  # the default schedule won: keep it
            tuning.keep_default(w.func, device.info)
            compiler.rebuild(w)
            rows.append(_row(label, w, before[key], after, "default kept (faster)"))
        else:
            rows.append(_row(label, w, before[key], after, "tuned"))
    summary = {"when": time.strftime("%Y-%m-%dT%H:%M:%S"), "target": device.info.key,
               "trials_per_kernel": trials, "trials": outcome.trials,
               "seconds": round(outcome.seconds, 1), "stopped": outcome.stopped,
               "kernels": rows}
    log = tuning.database_dir(device.info) / "runs.jsonl"
    with open(log, "a") as f:
        f.write(json.dumps(summary) + "\n")
    _print(console, summary, log)
    return summary


def _tune_with_progress(funcs, info, trials, time_limit, console):
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from . import tuning

    with Progress("[progress.description]{task.description}", BarColumn(),
                  MofNCompleteColumn(), TimeElapsedColumn(), console=console) as bar:
        task = bar.add_task("trials", total=trials * len(funcs))
        return tuning.tune(funcs, info, trials, time_limit,
                           progress=lambda done: bar.update(task, completed=done))


def _time(compiler, workload, device, repeats: int = 5) -> float:
    """Median seconds per call of the kernel this process runs for a workload (calls
    batched to at least 10 ms per sample, inputs zero)."""
    import statistics

    import numpy as np

    compiled = compiler.current(workload)
    arrays = [device.upload(np.zeros(tuple(int(n) for n in buf.shape), str(buf.dtype)))
              for buf in list(workload.func.params)[:-1]]
    arrays.append(device.empty(compiled.shape, compiled.dtype))
    args = [a.tensor for a in arrays]  # the Arrays stay alive: their memory is not recycled
    start = time.perf_counter()
    compiled.function(*args)
    device.synchronize()
    number = max(1, int(0.01 / max(time.perf_counter() - start, 1e-6)))
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(number):
            compiled.function(*args)
        device.synchronize()
        samples.append((time.perf_counter() - start) / number)
    return statistics.median(samples)


def _row(label, workload, before, after, status) -> dict:
    return {"workload": label, "kernel": f"{workload.op}/{workload.kernel}",
            "file": str(workload.path),
            "default_ms": round(before * 1e3, 3),
            "tuned_ms": None if after is None else round(after * 1e3, 3),
            "speedup": None if after is None else round(before / after, 2), "status": status}


def _print(console, summary, log) -> None:
    from rich.table import Table

    table = Table(title=f"hal tune: {summary['trials']} trials in {summary['seconds']} s"
                        + (f" ({summary['stopped']})" if summary["stopped"] else ""))
    for column in ("workload", "kernel", "default ms", "tuned ms", "speedup", "status"):
        table.add_column(column)
    for r in summary["kernels"]:
        table.add_row(r["workload"], r["kernel"], f"{r['default_ms']:.3f}",
                      "-" if r["tuned_ms"] is None else f"{r['tuned_ms']:.3f}",
                      "-" if r["speedup"] is None else f"{r['speedup']:.2f}x", r["status"])
    console.print(table)
    console.print(f"best schedules are in the kernel cache; this run is logged in {log}")
