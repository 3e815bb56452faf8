"""Benchmark: the k-th derivative of sin(x) exp(-x^2) at n points, four ways side by side.

hal Taylor mode (one pass) and hal nested reverse mode (k nested VJPs), beside
`jax.experimental.jet` (jitted; compile time reported apart) and torch nested autograd
(`create_graph=True`, one intra-op thread), all in float64 and checked against the
Hermite closed form.

`workloads()` gives the hal cases in the harness's terms (name, params, dtypes, build,
run, reference); `measure()` runs every framework side by side and `table()` formats
the result. Each framework is measured in its own child process, twice: once for time
(median of repeated calls after a warm-up) and once for peak memory, read as the rise of
the resident set's high-water mark (VmHWM, reset through /proc/self/clear_refs) over the
resident size before the call, with MALLOC_MMAP_THRESHOLD_=16384 so freed arrays go back
to the OS and the resident set follows live memory. For hal, tracemalloc's peak (numpy
reports its buffers to it) is recorded as well. A configuration whose predicted time or
memory (extrapolated from the previous order) exceeds the budget is skipped and says so.

    python -m frontends.autograd.kth_derivative    # the table for k = 1 ... 16 at 10^4 points
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import re
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

ORDERS = (1, 2, 4, 8, 10, 12, 16)
FRAMEWORKS = ("hal-taylor", "hal-reverse", "jax-jet", "torch-nested")
POINTS = 10_000


def hermite_derivative(x: np.ndarray, k: int) -> np.ndarray:
    """f^(k)(x) for f = sin(x) exp(-x^2): e^(-1/4) Im[(-1)^k H_k(z) e^(-z^2)], z = x - i/2."""
    z = x - 0.5j
    h_prev, h = np.ones_like(z), 2 * z
    if k == 0:
        h = h_prev
    for n in range(1, k):
        h_prev, h = h, 2 * z * h - 2 * n * h_prev
    return math.exp(-0.25) * np.imag((-1) ** k * h * np.exp(-z * z))


def points(n: int = POINTS, dtype=np.float64) -> np.ndarray:
    """The n evaluation points, evenly spaced on [-3, 3]."""
    return np.linspace(-3.0, 3.0, n).astype(dtype)


# -- the hal cases, for the harness ------------------------------------------------------
@dataclass(frozen=True)
class Case:
    """One hal workload: build(dtype) -> host inputs, run(tensor) -> f^(k), reference(array)."""

    name: str
    params: dict
    dtypes: tuple[str, ...]
    build: Callable[[np.dtype], list[np.ndarray]]
    run: Callable
    reference: Callable[[np.ndarray], np.ndarray]
    items: int = field(default=POINTS)


def _hal_function():
    import hal

    return lambda x: hal.sin(x) * hal.exp(-(x * x))


_HAL_MODES = {"hal-taylor": "taylor", "hal-reverse": "reverse"}


def hal_kth(mode: str, k: int) -> Callable:
    """x (a hal Tensor) -> f^(k)(x) by hal Taylor mode ("taylor") or nested reverse ("reverse")."""
    from frontends.autograd import derivative

    return derivative(_hal_function(), k, mode)


def workloads(orders=ORDERS, n: int = POINTS, modes=("taylor", "reverse")) -> list[Case]:
    """The hal cases: one per (mode, order), float64 and float32, n points."""
    cases = []
    for mode in modes:
        for k in orders:
            cases.append(Case(
                name=f"autograd-{mode}", params={"order": k, "n": n, "function": "sin*exp(-x^2)"},
                dtypes=("float64", "float32"), build=lambda d, n=n: [points(n, d)],
                run=hal_kth(mode, k),
                reference=lambda x, k=k: hermite_derivative(np.asarray(x, np.float64), k),
                items=n,
            ))
    return cases


# -- one framework in this process ------------------------------------------------------
def _prepare(framework: str, k: int, x: np.ndarray) -> tuple[Callable, dict]:
    """(zero-argument call returning f^(k) on the host, extra facts) for one framework."""
    if framework.startswith("hal-"):
        import hal

        t = hal.asarray(x)
        fn = hal_kth(_HAL_MODES[framework], k)
        return (lambda: fn(t).numpy()), {}
    if framework == "jax-jet":
        import jax

        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp
        from jax.experimental import jet

        def kth(v):
            series = (jnp.ones_like(v),) + (jnp.zeros_like(v),) * (k - 1)
            return jet.jet(lambda u: jnp.sin(u) * jnp.exp(-u * u), (v,), (series,))[1][-1]

        xj = jnp.asarray(x)
        start = time.perf_counter()
        compiled = jax.jit(kth).lower(xj).compile()
        extra = {"compile_s": time.perf_counter() - start}
        stats = compiled.memory_analysis()
        if stats is not None:
            extra["xla_bytes"] = int(stats.temp_size_in_bytes + stats.output_size_in_bytes
                                     + stats.argument_size_in_bytes)
        return (lambda: np.asarray(compiled(xj).block_until_ready())), extra
    if framework == "torch-nested":
        import torch

        torch.set_num_threads(1)  # 10^4 points gain nothing from threads; hal and jet use one
        xt = torch.tensor(x, requires_grad=True)

        def kth():
            y = torch.sin(xt) * torch.exp(-xt * xt)
            for i in range(k):
                (y,) = torch.autograd.grad(y.sum(), xt, create_graph=i < k - 1)
            return y.detach().numpy()

        return kth, {"threads": torch.get_num_threads()}
    raise ValueError(f"bench: unknown framework {framework!r}; one of {', '.join(FRAMEWORKS)}")


def _status() -> dict[str, int]:
    text = open("/proc/self/status").read()
    return {key: int(re.search(rf"{key}:\s+(\d+)", text).group(1)) * 1024
            for key in ("VmHWM", "VmRSS")}


def _time(call: Callable, min_total: float = 0.3, max_repeats: int = 50) -> list[float]:
    call()  # warm-up
    samples: list[float] = []
    while len(samples) < 3 or (sum(samples) < min_total and len(samples) < max_repeats):
        start = time.perf_counter()
        call()
        samples.append(time.perf_counter() - start)
        if samples[-1] > 5:
            break
    return samples


def _memory(framework: str, call: Callable) -> dict:
    call()  # warm-up: lazy imports, caches
    gc.collect()
    out = {}
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset the high-water mark to the current resident size
    before = _status()["VmRSS"]
    call()
    out["peak_rss_bytes"] = _status()["VmHWM"] - before
    if framework.startswith("hal-"):
        gc.collect()
        tracemalloc.start()
        call()
        out["peak_tracemalloc_bytes"] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return out


def run_worker(framework: str, orders, n: int, what: str, budget_s: float,
               budget_bytes: float) -> None:
    """Measure one framework over the orders here, printing one JSON record per order."""
    x = points(n)
    last: dict | None = None
    for k in orders:
        record = {"framework": framework, "order": k, "n": n, "what": what}
        skip = _predicted_over_budget(last, k, budget_s, budget_bytes)
        if skip:
            record["skipped"] = skip
        else:
            try:
                call, extra = _prepare(framework, k, x)
                record.update(extra)
                if what == "time":
                    samples = _time(call)
                    record["samples_s"] = samples
                    record["median_s"] = float(np.median(samples))
                    record["min_s"] = float(np.min(samples))
                    record["load_avg_1m"] = os.getloadavg()[0]
                    value = call()
                    exact = hermite_derivative(x, k)
                    record["rel_error"] = float(np.max(np.abs(value - exact))
                                                / np.max(np.abs(exact)))
                else:
                    record.update(_memory(framework, call))
                last = record
            except Exception as e:  # a framework's failure is a result, not a crash
                record["error"] = f"{type(e).__name__}: {e}"
        print(json.dumps(record), flush=True)


def _predicted_over_budget(last, k, budget_s, budget_bytes) -> str | None:
    """Why order k is skipped, by extrapolating the last order measured (2.2x per order)."""
    if last is None or "error" in last:
        return None
    growth = 2.2 ** (k - last["order"])
    if "median_s" in last and last["median_s"] * growth * 4 > budget_s:
        return f"predicted {last['median_s'] * growth:.3g} s per call (over the time budget)"
    if "peak_rss_bytes" in last and last["peak_rss_bytes"] * growth > budget_bytes:
        return (f"predicted {last['peak_rss_bytes'] * growth / 1e9:.3g} GB peak memory "
                "(over the memory budget)")
    return None


# -- all frameworks side by side ----------------------------------------------------------
def _available(framework: str) -> str | None:
    module = {"jax-jet": "jax", "torch-nested": "torch"}.get(framework)
    if module is None:
        return None
    import importlib.util

    if importlib.util.find_spec(module) is None:
        return f"{module} is not installed (pip install -e '.[peers]')"
    return None


def measure(frameworks=FRAMEWORKS, orders=ORDERS, n: int = POINTS, *, budget_s: float = 60.0,
            budget_bytes: float = 4e9, memory: bool = True) -> list[dict]:
    """Time (and peak memory) of every framework at every order, one child process each.

    Returns one record per (framework, order): median_s, samples_s, rel_error against
    the closed form, peak_rss_bytes, peak_tracemalloc_bytes (hal), or skipped/error.
    """
    records: dict[tuple[str, int], dict] = {}
    for framework in frameworks:
        why = _available(framework)
        if why:
            for k in orders:
                records[framework, k] = {"framework": framework, "order": k, "n": n,
                                         "skipped": why}
            continue
        for what in ("time", "memory") if memory else ("time",):
            env = dict(os.environ)
            if what == "memory":
                env["MALLOC_MMAP_THRESHOLD_"] = "16384"
            cmd = [sys.executable, "-m", "frontends.autograd.kth_derivative", "--worker", framework,
                   "--what", what, "--n", str(n), "--budget-s", str(budget_s),
                   "--budget-bytes", str(budget_bytes),
                   "--orders", ",".join(map(str, orders))]
            done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
            lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
            for line in lines:
                r = json.loads(line)
                merged = records.setdefault((framework, r["order"]), {})
                merged.update({key: v for key, v in r.items() if key != "what"})
            if done.returncode != 0:
                for k in orders:
                    records.setdefault((framework, k), {"framework": framework, "order": k})
                    records[framework, k].setdefault(
                        "error", f"{what} worker exited {done.returncode}: "
                        f"{done.stderr.strip().splitlines()[-1:]}")
    order = {f: i for i, f in enumerate(frameworks)}
    return [records[key] for key in sorted(records, key=lambda p: (p[1], order[p[0]]))]


def table(records: list[dict]) -> str:
    """Markdown tables: median (and min) time with the error against the closed form, then memory.

    Peak memory is tracemalloc's for hal and the resident high-water mark's rise for
    every framework (rss); see the module docstring.
    """
    frameworks = list(dict.fromkeys(r["framework"] for r in records))
    orders = sorted({r["order"] for r in records})
    by = {(r["framework"], r["order"]): r for r in records}
    head = "| k | " + " | ".join(frameworks) + " |"
    rule = "|" + "---|" * (len(frameworks) + 1)

    def cell(r, what):
        if "median_s" not in r:
            return ("skipped: " + r["skipped"]) if "skipped" in r else r.get("error", "-")
        if what == "time":
            return (f"{r['median_s'] * 1e3:.3g} ms (min {r['min_s'] * 1e3:.3g}, "
                    f"err {r['rel_error']:.0e})")
        parts = []
        if "peak_tracemalloc_bytes" in r:
            parts.append(f"{r['peak_tracemalloc_bytes'] / 1e6:.3g} MB traced")
        if "peak_rss_bytes" in r:
            parts.append(f"{r['peak_rss_bytes'] / 1e6:.3g} MB rss")
        if "xla_bytes" in r:
            parts.append(f"{r['xla_bytes'] / 1e6:.3g} MB xla")
        return ", ".join(parts) or "-"

    loads = [r["load_avg_1m"] for r in records if "load_avg_1m" in r]
    out = [f"Machine load (1-minute average) while timing: {min(loads):.2f} to {max(loads):.2f} "
           f"on {os.cpu_count()} cores.", ""] if loads else []
    for what in ("time", "memory"):
        out += [f"{'Time per call' if what == 'time' else 'Peak memory per call'}:", "",
                head, rule]
        out += [f"| {k} | " + " | ".join(cell(by.get((f, k), {}), what) for f in frameworks)
                + " |" for k in orders]
        out.append("")
    return "\n".join(out)


def main(argv=None) -> None:
    """Print the side-by-side table (or, with --worker, measure one framework)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--worker", choices=FRAMEWORKS)
    p.add_argument("--what", choices=("time", "memory"), default="time")
    p.add_argument("--frameworks", default=",".join(FRAMEWORKS))
    p.add_argument("--orders", default=",".join(map(str, ORDERS)))
    p.add_argument("--n", type=int, default=POINTS)
    p.add_argument("--budget-s", type=float, default=60.0)
    p.add_argument("--budget-bytes", type=float, default=4e9)
    p.add_argument("--json", help="also write the records to this file")
    args = p.parse_args(argv)
    orders = [int(k) for k in args.orders.split(",")]
    if args.worker:
        run_worker(args.worker, orders, args.n, args.what, args.budget_s, args.budget_bytes)
        return
    records = measure(args.frameworks.split(","), orders, args.n, budget_s=args.budget_s,
                      budget_bytes=args.budget_bytes)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(records, f, indent=1)
    print(table(records))


if __name__ == "__main__":
    main()
