"""hal.jit figures side by side: `python -m benchmarks.jit_figures [--json FILE]`.

(a) The full Kassam-Trefethen KdV solve (N=256, 39,322 ETDRK4 steps, float64) on the
    cpu backend: hal.jit (the step jitted, a Python loop), jax.jit (the step in a
    lax.fori_loop, as `frontends.science.peers`), vectorised numpy, and hal eager
    (extrapolated from fewer steps, and labelled so), each with its max-norm error
    against the exact 2-soliton; ratios hal.jit/jax.jit and hal.jit/numpy.
(b) The same step on opencl: jit against eager per step over a few hundred steps.
(c) Taylor mode, f^(10) of sin(x) exp(-x^2) at 10^4 points: hal eager, hal.jit,
    jax.experimental.jet (jitted; its compile time apart), numpy recurrences.
(d) Replay cost per node: a chain of tiny (8-element) subtractions, each value read by
    the next two nodes so that nothing fuses, jitted: call time / nodes, beside hal eager
    and numpy per op (allocating, and writing into a preallocated `out=`, the cpu kernel).
(e) Compile time: the first call (trace, compile, checked run) in a process with an
    empty cache directory against a second process that loads the backends' disk caches
    (each a subprocess), for the KdV step on cpu and a small fused graph on tvm; and the
    cache: calls with the same shapes do not retrace (`Jitted.traces`).

Times are medians of `--repeats` samples after a warm-up call; the 1/5/15-minute load
averages are recorded around every figure (the machine may be shared). A figure that
cannot be measured here (a backend or peer missing) says why.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

import numpy as np

import hal
from benchmarks.figures import finish, measured
from benchmarks.suites.jit import taylor_numpy
from frontends.autograd import bench
from frontends.science import kdv, peers

PROBLEM = kdv.KASSAM_TREFETHEN


# -- measuring ----------------------------------------------------------------------------------
def _clock(call: Callable, inner: int) -> float:
    start = time.perf_counter()
    for _ in range(inner):
        call()
    return (time.perf_counter() - start) / inner


def median_time(call: Callable, repeats: int, min_sample: float = 0.0) -> tuple[dict, object]:
    """(timing, the warm-up call's result): the median seconds per call over `repeats`
    samples after one warm-up call (timed apart: `first_call_s`); a sample repeats the
    call until it lasts at least `min_sample` seconds (for short calls)."""
    start = time.perf_counter()
    value = call()
    first = time.perf_counter() - start
    inner = 1
    if min_sample:
        inner = max(1, math.ceil(min_sample / max(_clock(call, 1), 1e-9)))
    samples = [_clock(call, inner) for _ in range(repeats)]
    timing = {"median_s": float(np.median(samples)), "samples_s": samples,
              "calls_per_sample": inner, "first_call_s": first}
    return timing, value


def _skipped(exc: Exception) -> dict:
    return {"skipped": f"{type(exc).__name__}: {exc}"}


# -- (a) and (b): KdV ---------------------------------------------------------------------------
def hal_kdv(device, steps: int, jit: bool) -> tuple[Callable, Callable]:
    """(run: u0 -> u after `steps` steps, the step) in hal on `device`, float64."""
    solver = kdv.KdVSolver(PROBLEM, "float64", device)

    def step(v):
        return kdv.etdrk4_step(hal.fft, solver.coeffs, v, PROBLEM.n)

    step = hal.jit(step) if jit else step
    u0 = hal.asarray(PROBLEM.exact(0.0), device=solver.device)

    def run():
        v = hal.fft.rfft(u0)
        for _ in range(steps):
            v = step(v)
        u = hal.fft.irfft(v, PROBLEM.n)
        solver.device.synchronize()
        return u

    return run, step


def kdv_error(u, steps: int) -> float:
    """Relative max-norm error of u against the exact 2-soliton after `steps` steps."""
    return kdv.relative_error(u, PROBLEM.exact(steps * PROBLEM.dt))


def figure_a(repeats: int, eager_steps: int) -> dict:
    """The full KdV solve on cpu: hal.jit, jax.jit, numpy, hal eager (extrapolated)."""
    steps = PROBLEM.steps
    rows: dict[str, dict] = {}
    run, step = hal_kdv("cpu", steps, jit=True)
    timed, u = median_time(run, repeats)
    rows["hal.jit"] = {**timed, "error": kdv_error(u, steps), "traces": step.traces}
    u0 = PROBLEM.exact(0.0)
    for name in ("jax", "numpy"):
        try:
            peer = peers.load(name)
        except peers.PeerUnavailable as e:
            rows[name] = _skipped(e)
            continue
        runner = kdv.peer_runner(peer, PROBLEM, "float64")
        timed, u = median_time(lambda runner=runner: runner(u0), repeats)
        rows[name] = {**timed, "label": peer.label, "error": kdv_error(u, steps)}
    run, _ = hal_kdv("cpu", eager_steps, jit=False)
    timed, u = median_time(run, repeats)
    rows["hal eager"] = {"median_s": timed["median_s"] * steps / eager_steps,
                         "measured": {**timed, "steps": eager_steps},
                         "extrapolated_from_steps": eager_steps,
                         "error_at_measured_steps": kdv_error(u, eager_steps)}
    ratios = {}
    for peer in ("jax", "numpy"):
        if "median_s" in rows[peer]:
            ratios[f"hal.jit/{peer}"] = rows["hal.jit"]["median_s"] / rows[peer]["median_s"]
    return {"steps": steps, "N": PROBLEM.n, "dtype": "float64", "device": "cpu",
            "rows": rows, "time_ratios": ratios}


def figure_b(repeats: int, steps: int) -> dict:
    """The KdV step on opencl, jit against eager, per step."""
    try:
        device = hal.device("opencl")
    except hal.HalError as e:
        return _skipped(e)
    rows = {}
    for mode, jit in (("eager", False), ("jit", True)):
        try:
            run, step = hal_kdv(device, steps, jit)
            timed, u = median_time(run, repeats)
        except hal.HalError as e:
            rows[mode] = _skipped(e)
            continue
        rows[mode] = {**timed, "per_step_s": timed["median_s"] / steps,
                      "error": kdv_error(u, steps)}
        if jit:
            rows[mode]["how_nodes_run"] = dict(step.compiled(_state(device)).counts())
    out = {"device": device.name, "steps": steps, "rows": rows}
    if all("per_step_s" in r for r in rows.values()):
        out["eager/jit"] = rows["eager"]["per_step_s"] / rows["jit"]["per_step_s"]
    return out


def _state(device) -> hal.Tensor:
    return hal.fft.rfft(hal.asarray(PROBLEM.exact(0.0), device=device))


# -- (c) Taylor mode ----------------------------------------------------------------------------
def figure_c(repeats: int, order: int = 10, n: int = bench.POINTS) -> dict:
    """f^(k) at n points: hal eager, hal.jit, jax jet (jitted), numpy recurrences."""
    x_host = bench.points(n)
    exact = bench.hermite_derivative(x_host, order)

    def error(value) -> float:
        return float(np.max(np.abs(np.asarray(value) - exact)) / np.max(np.abs(exact)))

    x = hal.asarray(x_host)
    eager = bench.hal_kth("taylor", order)
    jitted = hal.jit(eager)
    calls = {"hal eager": lambda: eager(x).numpy(), "hal.jit": lambda: jitted(x).numpy(),
             "numpy": lambda: taylor_numpy(x_host, order)}
    rows = {}
    for name, call in calls.items():
        timed, value = median_time(call, repeats, 0.2)
        rows[name] = {**timed, "error": error(value)}
    rows["hal.jit"]["how_nodes_run"] = dict(jitted.compiled(x).counts())
    try:
        peers.load("jax")
        rows["jax jet"] = _jet(order, x_host, repeats, error)
    except peers.PeerUnavailable as e:
        rows["jax jet"] = _skipped(e)
    out = {"order": order, "n": n, "dtype": "float64", "device": "cpu", "rows": rows}
    if "median_s" in rows["jax jet"]:
        out["hal.jit/jax jet"] = rows["hal.jit"]["median_s"] / rows["jax jet"]["median_s"]
    return out


def _jet(order: int, x_host: np.ndarray, repeats: int, error: Callable) -> dict:
    import jax
    import jax.numpy as jnp
    from jax.experimental import jet

    def kth(v):
        series = (jnp.ones_like(v),) + (jnp.zeros_like(v),) * (order - 1)
        return jet.jet(lambda u: jnp.sin(u) * jnp.exp(-u * u), (v,), (series,))[1][-1]

    xj = jnp.asarray(x_host)
    start = time.perf_counter()
    compiled = jax.jit(kth).lower(xj).compile()
    compile_s = time.perf_counter() - start

    timed, value = median_time(lambda: np.asarray(compiled(xj).block_until_ready()), repeats,
                               0.2)
    return {**timed, "compile_s": compile_s, "error": error(value),
            "label": f"jax {jax.__version__}"}


# -- (d) replay cost per node -------------------------------------------------------------------
def chain(a, b, ops: int):
    """`ops` subtractions x[i+2] = x[i+1] - x[i]: each value is read by the next two."""
    for _ in range(ops):
        a, b = b, b - a
    return b


def figure_d(repeats: int, ops: int = 200, size: int = 8) -> dict:
    """Per-node replay time of a jitted chain of tiny ops on each backend, beside numpy."""
    a_host, b_host = np.linspace(0.0, 1.0, size), np.linspace(1.0, 2.0, size)
    out = {"ops": ops, "elements": size, "dtype": "float64", "rows": {}}
    for name in ("cpu", "opencl", "tvm"):
        try:
            device = hal.device(name)
            a, b = hal.asarray(a_host, device=device), hal.asarray(b_host, device=device)
            jitted = hal.jit(lambda a, b: chain(a, b, ops))
            executable = jitted.compiled(a, b)
            nodes = len(executable.graph.nodes)

            def replay(jitted=jitted, a=a, b=b, device=device):
                jitted(a, b)
                device.synchronize()

            def eager(a=a, b=b, device=device):
                chain(a, b, ops)
                device.synchronize()

            jit_s = median_time(replay, repeats, 0.2)[0]["median_s"]
            eager_s = median_time(eager, repeats, 0.2)[0]["median_s"]
        except hal.HalError as e:
            out["rows"][name] = _skipped(e)
            continue
        out["rows"][name] = {"nodes": nodes, "how_nodes_run": dict(executable.counts()),
                             "jit_call_s": jit_s, "jit_per_node_s": jit_s / nodes,
                             "eager_per_op_s": eager_s / ops}
    buffers = [np.empty(size) for _ in range(3)]

    def numpy_out():
        x, y = a_host, b_host
        for i in range(ops):
            z = np.subtract(y, x, out=buffers[i % 3])
            x, y = y, z

    out["numpy_per_op_s"] = median_time(lambda: chain(a_host, b_host, ops), repeats,
                                        0.2)[0]["median_s"] / ops
    out["numpy_out_per_op_s"] = median_time(numpy_out, repeats, 0.2)[0]["median_s"] / ops
    return out


# -- (e) compile time and the cache -------------------------------------------------------------
def _compile_subject(which: str) -> tuple[Callable, list]:
    """(function, arguments) whose compile time (e) measures."""
    if which == "kdv-cpu":
        solver = kdv.KdVSolver(PROBLEM, "float64", "cpu")
        return (lambda v: kdv.etdrk4_step(hal.fft, solver.coeffs, v, PROBLEM.n)), \
            [_state(solver.device)]
    device = hal.device("tvm")
    x = hal.asarray(np.linspace(-1.0, 1.0, 4096).astype(np.float32), device=device)
    y = hal.asarray(np.linspace(0.0, 2.0, 4096).astype(np.float32), device=device)
    return (lambda x, y: hal.exp(x * 2.0 + y) - hal.sin(y) * y), [x, y]


def compile_worker(which: str) -> dict:
    """In this process: trace, compile, first (checked) run, replay; printed as JSON."""
    fn, args = _compile_subject(which)
    device = args[0].device
    jitted = hal.jit(fn)
    times = {}
    numba_before = "numba" in sys.modules
    start = time.perf_counter()
    jitted.graph(*args)
    times["trace_s"] = time.perf_counter() - start
    start = time.perf_counter()
    executable = jitted.compiled(*args)
    times["compile_s"] = time.perf_counter() - start
    times["numba_imported_by_compile"] = not numba_before and "numba" in sys.modules
    start = time.perf_counter()
    jitted(*args)
    device.synchronize()
    times["first_run_s"] = time.perf_counter() - start
    times["first_call_s"] = times["trace_s"] + times["compile_s"] + times["first_run_s"]

    def replay():
        jitted(*args)
        device.synchronize()

    times["replay_s"] = median_time(replay, 5, 0.1)[0]["median_s"]
    return {**times, "how_nodes_run": dict(executable.counts()), "traces": jitted.traces}


def _run_worker(which: str, cache_dir: str) -> dict:
    env = {**os.environ, "HAL_CACHE_DIR": cache_dir}
    cmd = [sys.executable, "-m", "benchmarks.jit_figures", "--compile-worker", which]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = done.stderr.strip().splitlines()[-1:] or ["no output"]
        return {"skipped": f"worker exited {done.returncode}: {tail[0]}"}
    return json.loads(lines[-1])


def cache_reuse() -> dict:
    """Jitted.traces after calls with the same shape, a new shape, then the first again."""
    jitted = hal.jit(lambda x: hal.exp(x) * 2.0 + x)
    small, large = hal.asarray(np.ones(1000)), hal.asarray(np.ones(2000))
    counts = []
    for x in (small, small, small, large, small):
        jitted(x)
        counts.append(jitted.traces)
    return {"calls": ["(1000,)", "(1000,)", "(1000,)", "(2000,)", "(1000,)"],
            "traces_after_each": counts}


def figure_e() -> dict:
    """Cold (empty cache directory) and warm (second process) compile, each a subprocess."""
    out = {}
    for which in ("kdv-cpu", "small-fused-tvm"):
        cache_dir = tempfile.mkdtemp(prefix="hal-jit-figures-")
        try:
            out[which] = {"cold_process": _run_worker(which, cache_dir),
                          "warm_process": _run_worker(which, cache_dir)}
        finally:
            shutil.rmtree(cache_dir, ignore_errors=True)
    out["cache_reuse"] = cache_reuse()
    return out


# -- text ---------------------------------------------------------------------------------------
def _t(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.3g} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds * 1e6:.3g} us"


def _load(figure: dict) -> str:
    before, after = figure["load"]["before"], figure["load"]["after"]
    return f"load {', '.join(map(str, before))} -> {', '.join(map(str, after))}"


def _row(name: str, r: dict, extra: str = "") -> str:
    if "skipped" in r:
        return f"  {name:<44} skipped: {r['skipped']}"
    return f"  {name:<44} {_t(r['median_s']):>9}{extra}"


def text(results: dict) -> str:
    """The figures as plain text."""
    f = results["figures"]
    lines = [f"Machine: {os.cpu_count()} cores; load average (1, 5, 15 min) per figure below; "
             f"medians of {results['repeats']} samples after a warm-up call.", ""]
    if "a" in f:
        a = f["a"]
        lines.append(f"(a) KdV Kassam-Trefethen, N={a['N']}, {a['steps']:,} ETDRK4 steps, "
                     f"float64, cpu  [{_load(a)}]")
        for name, r in a["rows"].items():
            if name == "hal eager":
                lines.append(_row(f"hal eager (extrapolated from {r['extrapolated_from_steps']:,}"
                                  " steps)", r, f"   error {r['error_at_measured_steps']:.2g} "
                                  f"after {r['extrapolated_from_steps']:,} steps"))
                continue
            label = {"hal.jit": "hal.jit (step jitted, Python loop)",
                     "jax": "jax.jit + lax.fori_loop",
                     "numpy": "numpy (vectorised, numpy.fft)"}[name]
            extra = f"   error {r['error']:.2g}" if "error" in r else ""
            if name in ("hal.jit", "jax") and "first_call_s" in r:
                extra += f"   first call {_t(r['first_call_s'])} (compile + one solve)"
            lines.append(_row(label, r, extra))
        lines += [f"  time ratio {k} = {v:.2f} (< 1: hal.jit faster)"
                  for k, v in a["time_ratios"].items()] + [""]
    if "b" in f:
        b = f["b"]
        if "skipped" in b:
            lines += [f"(b) KdV on opencl: skipped: {b['skipped']}", ""]
        else:
            lines.append(f"(b) KdV step on {b['device']}, {b['steps']} steps per sample, float64"
                         f"  [{_load(b)}]")
            for mode, r in b["rows"].items():
                extra = f" per step   error {r['error']:.2g}" if "error" in r else ""
                lines.append(_row(mode, {**r, "median_s": r.get("per_step_s", 0)}, extra))
            if "eager/jit" in b:
                lines.append(f"  eager/jit per step = {b['eager/jit']:.2f}")
            lines.append("")
    if "c" in f:
        c = f["c"]
        lines.append(f"(c) Taylor mode f^({c['order']}) of sin(x)exp(-x^2), {c['n']:,} points, "
                     f"float64, cpu  [{_load(c)}]")
        for name, r in c["rows"].items():
            extra = f"   error {r['error']:.2g}" if "error" in r else ""
            if "compile_s" in r:
                extra += f"   (compile {_t(r['compile_s'])}, apart)"
            lines.append(_row(name, r, extra))
        if "hal.jit/jax jet" in c:
            lines.append(f"  time ratio hal.jit/jax jet = {c['hal.jit/jax jet']:.2f} "
                         "(< 1: hal.jit faster)")
        lines.append("")
    if "d" in f:
        d = f["d"]
        lines.append(f"(d) Replay cost per node: a chain of {d['ops']} subtractions of "
                     f"{d['elements']}-element float64 vectors (nothing fuses)  [{_load(d)}]")
        for name, r in d["rows"].items():
            if "skipped" in r:
                lines.append(f"  {name}: skipped: {r['skipped']}")
                continue
            lines.append(f"  {name:<7} hal.jit {_t(r['jit_per_node_s'])} per node "
                         f"({r['nodes']} nodes, {_t(r['jit_call_s'])} per call); "
                         f"hal eager {_t(r['eager_per_op_s'])} per op")
        lines.append(f"  numpy   {_t(d['numpy_per_op_s'])} per op (allocating), "
                     f"{_t(d['numpy_out_per_op_s'])} per op into out= (the cpu kernel)")
        lines.append("")
    if "e" in f:
        e = f["e"]
        lines.append(f"(e) Compile time (first call = trace + compile + checked first run)  "
                     f"[{_load(e)}]")
        for which in ("kdv-cpu", "small-fused-tvm"):
            for proc in ("cold_process", "warm_process"):
                r = e[which][proc]
                what = (f"{which}, {proc.replace('_', ' ')}"
                        + (" (empty cache dir)" if proc == "cold_process" else
                           " (disk caches)"))
                if "skipped" in r:
                    lines.append(f"  {what}: skipped: {r['skipped']}")
                    continue
                lines.append(f"  {what:<48} first call {_t(r['first_call_s'])} (trace "
                             f"{_t(r['trace_s'])}, compile {_t(r['compile_s'])}, run "
                             f"{_t(r['first_run_s'])}); replay {_t(r['replay_s'])}"
                             + ("; compile includes importing numba"
                                if r.get("numba_imported_by_compile") else ""))
        reuse = e["cache_reuse"]
        lines.append(f"  cache: shapes {', '.join(reuse['calls'])} -> Jitted.traces "
                     f"{reuse['traces_after_each']}")
    return "\n".join(lines)


FIGURES = "abcde"


def main(argv=None) -> None:
    """Measure the figures and print them (and write them as JSON with --json)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", help="also write the results to this file")
    p.add_argument("--figures", default=FIGURES, help="which figures, e.g. 'ace'")
    p.add_argument("--repeats", type=int, default=3, help="timed samples per row")
    p.add_argument("--eager-steps", type=int, default=2000,
                   help="(a) steps hal eager runs before extrapolating to the full solve")
    p.add_argument("--opencl-steps", type=int, default=200, help="(b) steps per sample")
    p.add_argument("--compile-worker", choices=("kdv-cpu", "small-fused-tvm"),
                   help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.compile_worker:
        print(json.dumps(compile_worker(args.compile_worker)))
        return
    run = {"a": lambda: figure_a(args.repeats, args.eager_steps),
           "b": lambda: figure_b(args.repeats, args.opencl_steps),
           "c": lambda: figure_c(args.repeats), "d": lambda: figure_d(args.repeats),
           "e": figure_e}
    results = {"repeats": args.repeats, "cores": os.cpu_count(), "figures": {}}
    for key in FIGURES:
        if key in args.figures:
            results["figures"][key] = measured(run[key])
    finish(results, args.json, text)


if __name__ == "__main__":
    main()
