"""The science figures side by side: hal on each backend beside every installed peer.

    python -m frontends.science.bench                    # everything (minutes on 2 cores)
    python -m frontends.science.bench --only kdv fft     # some sections
    python -m frontends.science.bench --json out.json    # also write the rows as JSON

Sections: `kdv` (the full 39,322-step Kassam-Trefethen solve; backends too slow for it
are timed over `--kdv-steps` steps and extrapolated, and say so), `ns` (Navier-Stokes
ms/step, Kolmogorov flow 256^2 and 1024^2), `fft` (us/transform and GFLOP/s at
5 N log2 N), `mg` (V(1,1) time and factor), `memory` (float32 vs float64 error and
tracemalloc peak of the cpu backend), `mpi` (1 vs 2 ranks under mpiexec). Each time is
the median of `--repeat` calls after a warm-up. The `bound` column compares a step's
time with its hal op count times the cost of dispatching one tiny op: "dispatch" when
dispatch is more than half of the time, else "arithmetic".
"""

from __future__ import annotations

import argparse
import collections
import functools
import json
import math
import os
import statistics
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

import hal

from . import kdv, multigrid, peers
from . import navier_stokes as ns

SECTIONS = ("kdv", "ns", "fft", "mg", "memory", "mpi")
_TABLES = ("floor", *SECTIONS)


def _median_time(fn, repeat: int) -> float:
    fn()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def _sync(device):
    return lambda out: (device.synchronize(), out)[1]


@functools.cache
def _floor(backend: str, op: str = "multiply", dtype: str = "float64") -> float:
    """Seconds one call of a tiny op costs on a backend (dispatch and launch, no work)."""
    device = hal.device(backend)
    x = hal.asarray(np.ones((8, 8), dtype=dtype), device=device)
    fn = {"multiply": lambda: x * x, "fft": lambda: hal.fft.fft(x),
          "fft2": lambda: hal.fft.fft2(x)}[op]
    return _median_time(lambda: [fn() for _ in range(50)] and device.synchronize(), 5) / 50


_FFT_OPS = ("fftn", "ifftn", "rfftn", "irfftn")


def _ops_in(fn) -> collections.Counter:
    """How many times each op ran during fn()."""
    with hal.placement() as where:
        fn()
    return collections.Counter(op for op, *_ in where.records)


def _bound(seconds: float, ops: collections.Counter, backend: str) -> str:
    """'dispatch' when the ops' fixed costs (each op priced at a tiny op of its family on
    this backend) are over half the time, else 'arithmetic'."""
    ffts = sum(n for op, n in ops.items() if op in _FFT_OPS)
    fixed = ffts * _floor(backend, "fft", "complex128") + (sum(ops.values()) - ffts) * _floor(
        backend)
    return "dispatch" if fixed > 0.5 * seconds else "arithmetic"


def _backends() -> list[str]:
    return [b for b in ("cpu", "opencl") if b in hal.available_backends()]


def _peers() -> list:
    out = []
    for name in peers.NAMES:
        try:
            out.append(peers.load(name))
        except peers.PeerUnavailable as exc:
            print(f"# {name}: skipped ({exc})", file=sys.stderr)
    return out


def kdv_rows(args) -> list[dict]:
    """Kassam-Trefethen solve time and error per backend and peer; large-N per step."""
    rows = []
    p = kdv.KASSAM_TREFETHEN
    exact = p.exact(p.t_end)
    for backend in _backends():
        for dtype in ("float64", "float32"):
            solver = kdv.KdVSolver(p, dtype, backend)
            short = solver.problem.steps if backend == "cpu" else args.kdv_steps
            solver.run(5)
            hal.device(backend).synchronize()
            start = time.perf_counter()
            u = solver.run(short)
            u.numpy()
            seconds = (time.perf_counter() - start) * p.steps / short
            ops = _ops_in(lambda s=solver: s.run(2)) - _ops_in(lambda s=solver: s.run(1))
            row = {"section": "kdv", "case": "kassam-trefethen N=256", "impl": f"hal {backend}",
                   "dtype": dtype, "steps": p.steps, "seconds": seconds,
                   "us_per_step": 1e6 * seconds / p.steps, "ops_per_step": ops.total(),
                   "bound": _bound(seconds / p.steps, ops, backend)}
            if short == p.steps:
                row["max_error"] = kdv.relative_error(u, exact)
                row["l2_error"] = kdv.relative_error(u, exact, "l2")
            else:
                row["note"] = f"extrapolated from {short} steps"
            rows.append(row)
            print(row, file=sys.stderr)
    for peer in _peers():
        run = kdv.peer_runner(peer, p)
        u0 = p.exact(0.0)
        kdv.peer_runner(peer, p, steps=5)(u0)
        start = time.perf_counter()
        u = run(u0)  # jax: includes the one compile of the loop
        seconds = time.perf_counter() - start
        rows.append({"section": "kdv", "case": "kassam-trefethen N=256", "impl": peer.label,
                     "dtype": "float64", "steps": p.steps, "seconds": seconds,
                     "us_per_step": 1e6 * seconds / p.steps,
                     "max_error": kdv.relative_error(u, exact),
                     "l2_error": kdv.relative_error(u, exact, "l2")})
        print(rows[-1], file=sys.stderr)
    for n in (4096, 65536):
        big = kdv.large_n(n, steps=20)
        solver = kdv.KdVSolver(big)
        t = _median_time(lambda s=solver: s.run().numpy(), args.repeat)
        ops = _ops_in(lambda s=solver: s.run(2)) - _ops_in(lambda s=solver: s.run(1))
        rows.append({"section": "kdv", "case": f"large-N N={n}", "impl": "hal cpu",
                     "dtype": "float64", "us_per_step": 1e6 * t / big.steps,
                     "ops_per_step": ops.total(), "bound": _bound(t / big.steps, ops, "cpu")})
        numpy = kdv.peer_runner(peers.load("numpy"), big)
        t = _median_time(lambda r=numpy, b=big: r(b.exact(0.0)), args.repeat)
        rows.append({"section": "kdv", "case": f"large-N N={n}", "impl": peers.load("numpy").label,
                     "dtype": "float64", "us_per_step": 1e6 * t / big.steps})
    soft = kdv.SOFT_COLLISION
    start = time.perf_counter()
    _, err = kdv.solve(soft)
    rows.append({"section": "kdv", "case": f"soft-collision N={soft.n}", "impl": "hal cpu",
                 "dtype": "float64", "steps": soft.steps,
                 "seconds": time.perf_counter() - start, "max_error": err})
    return rows


def ns_rows(args) -> list[dict]:
    """Navier-Stokes ms per IF-RK4 step, Kolmogorov flow, per backend and peer."""
    rows = []
    for n in args.ns_sizes:
        w0 = ns.random_vorticity(n)
        for backend in _backends():
            for dtype in ("float64", "float32"):
                s = ns.NavierStokes2D(n, 1e-3, 1e-3, ns.kolmogorov_forcing(n), dtype, backend,
                                      check_every=10**9)
                state, sync = s.transform(w0), _sync(s.device)

                def step(s=s, st=state):
                    return ns.if_rk4_step(hal.fft, s.coeffs, st, s.dt, s.n)

                t = _median_time(lambda step=step, y=sync: y(step()), args.repeat)
                ops = _ops_in(step)
                rows.append({"section": "ns", "case": f"kolmogorov {n}^2", "impl": f"hal {backend}",
                             "dtype": dtype, "ms_per_step": 1e3 * t,
                             "ops_per_step": ops.total(), "bound": _bound(t, ops, backend)})
                print(rows[-1], file=sys.stderr)
        for peer in _peers():
            for dtype in ("float64", "float32"):
                s = ns.NavierStokes2D(n, 1e-3, 1e-3, ns.kolmogorov_forcing(n), dtype, "cpu")
                step, x = s.peer_step(peer), peer.asarray(s.transform(w0).numpy())
                t = _median_time(lambda st=step, x=x, pr=peer: pr.numpy(st(x)), args.repeat)
                rows.append({"section": "ns", "case": f"kolmogorov {n}^2", "impl": peer.label,
                             "dtype": dtype, "ms_per_step": 1e3 * t})
                print(rows[-1], file=sys.stderr)
    return rows


FFT_CASES = (("fft", (1024,)), ("fft", (4096, 1024)), ("fft2", (1024, 1024)))


def fft_rows(args) -> list[dict]:
    """FFT microseconds per transform and GFLOP/s (5 N log2 N) per backend and peer."""
    rows = []
    for kind, shape in FFT_CASES:
        points = shape[-1] if kind == "fft" else shape[-2] * shape[-1]
        transforms = math.prod(shape) // points
        flops = 5 * points * math.log2(points) * transforms
        case = f"{kind} {'x'.join(map(str, shape))}"
        for dtype in ("complex64", "complex128"):
            rng = np.random.default_rng(0)
            x = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
            impls = []
            for backend in _backends():
                t, fn, sync = hal.asarray(x, device=backend), getattr(hal.fft, kind), \
                    _sync(hal.device(backend))
                impls.append((backend, lambda t=t, fn=fn, y=sync: y(fn(t))))
            for peer in _peers():
                fn, px = getattr(peer.fft, kind), peer.asarray(x)
                if peer.name == "jax":
                    fn = peer.compile(fn)
                impls.append((peer.label, lambda fn=fn, px=px, pr=peer: pr.numpy(fn(px))))
            for label, fn in impls:
                t = _median_time(fn, args.repeat)
                hal_backend = label in _backends()
                fixed = _floor(label, kind, dtype) if hal_backend else 0.0
                bound = ("dispatch" if fixed > 0.5 * t else "arithmetic") if hal_backend else ""
                rows.append({"section": "fft", "case": case,
                             "impl": f"hal {label}" if hal_backend else label, "dtype": dtype,
                             "us_per_transform": 1e6 * t / transforms, "gflops": flops / t / 1e9,
                             "bound": bound})
                print(rows[-1], file=sys.stderr)
    return rows


def mg_rows(args) -> list[dict]:
    """Multigrid V(1,1) time per cycle and convergence factor per size and backend."""
    rows = []
    for backend in _backends():
        for n in args.mg_sizes if backend == "cpu" else args.mg_sizes[:1]:
            level = multigrid.Level.serial(n, device=backend)
            factor, u = multigrid.convergence_factor(level, cycles=8)
            f, sync = hal.zeros_like(u), _sync(level.device)

            def cycle(lv=level, u=u, f=f, y=sync):
                return y(multigrid.v_cycle(lv, u, f))

            per = _median_time(cycle, args.repeat)
            ops = _ops_in(cycle)
            rows.append({"section": "mg", "case": f"V(1,1) N={n}", "impl": f"hal {backend}",
                         "dtype": "float64", "ms_per_cycle": 1e3 * per, "factor": factor,
                         "ops_per_cycle": ops.total(), "bound": _bound(per, ops, backend)})
            print(rows[-1], file=sys.stderr)
    return rows


def memory_rows(args) -> list[dict]:
    """float32 beside float64: error against the exact solution and tracemalloc peak (cpu)."""
    rows = []
    p = kdv.KASSAM_TREFETHEN.with_horizon(2000 * kdv.KASSAM_TREFETHEN.dt)
    n, nu = 256, 1e-2
    for dtype in ("float64", "float32"):
        solver = kdv.KdVSolver(p, dtype)
        tracemalloc.start()
        u = solver.run()
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        rows.append({"section": "memory", "case": "kdv KT 2000 steps", "dtype": dtype,
                     "max_error": kdv.relative_error(u, p.exact(p.t_end)), "peak_mb": peak / 2**20})
        s = ns.NavierStokes2D(n, 1e-3, nu, dtype=dtype)
        tracemalloc.start()
        w = s.run(s.transform(ns.taylor_green(n, nu, 0.0)), 20)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        exact = ns.taylor_green(n, nu, 0.02)
        err = np.max(np.abs(s.vorticity(w).numpy() - exact)) / np.max(np.abs(exact))
        rows.append({"section": "memory", "case": f"taylor-green {n}^2 20 steps", "dtype": dtype,
                     "max_error": float(err), "peak_mb": peak / 2**20})
        level = multigrid.Level.serial(512, dtype)
        tracemalloc.start()
        factor, _ = multigrid.convergence_factor(level, cycles=4)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        rows.append({"section": "memory", "case": "multigrid N=512 4 cycles", "dtype": dtype,
                     "factor": factor, "peak_mb": peak / 2**20})
    return rows


def mpi_rows(args) -> list[dict]:
    """1 vs 2 ranks under mpiexec: Jacobi, distributed multigrid, Schwarz-PCG."""
    rows = []
    mpiexec = Path(sys.executable).parent / "mpiexec"
    env = {**os.environ, "MPIR_CVAR_CH4_PROGRESS_THROTTLE": "1", "OMP_NUM_THREADS": "1"}
    cases = (("jacobi", "--n", "512", "--iterations", "200"), ("multigrid", "--n", "512"),
             ("schwarz", "--n", "256"))
    for case in cases:
        for ranks in (1, 2):
            cmd = [str(mpiexec), "-n", str(ranks), sys.executable, "-m",
                   "frontends.science.mpi_run", *case]
            out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600,
                                 cwd=Path(__file__).resolve().parents[2])
            result = json.loads(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 \
                else {"error": out.stderr.strip()[-300:]}
            rows.append({"section": "mpi", "impl": "hal cpu", **result})
            print(rows[-1], file=sys.stderr)
    return rows


_RUNNERS = {"kdv": kdv_rows, "ns": ns_rows, "fft": fft_rows, "mg": mg_rows,
            "memory": memory_rows, "mpi": mpi_rows}


def table(rows: list[dict]) -> str:
    """Rows as a markdown table per section (columns: every key that appears)."""
    out = []
    for section in _TABLES:
        part = [r for r in rows if r["section"] == section]
        if not part:
            continue
        keys = [k for k in dict.fromkeys(k for r in part for k in r) if k != "section"]
        out.append(f"\n### {section}\n\n| " + " | ".join(keys) + " |\n|"
                   + "---|" * len(keys))
        for r in part:
            cells = [f"{v:.4g}" if isinstance(v, float) else str(v) for v in
                     (r.get(k, "") for k in keys)]
            out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    """Run the chosen sections and print the tables."""
    parser = argparse.ArgumentParser(prog="python -m frontends.science.bench")
    parser.add_argument("--only", nargs="+", choices=SECTIONS, default=list(SECTIONS))
    parser.add_argument("--repeat", type=int, default=5, help="timed calls per figure")
    parser.add_argument("--kdv-steps", type=int, default=300,
                        help="steps timed on backends too slow for the full KdV solve")
    parser.add_argument("--ns-sizes", type=int, nargs="+", default=[256, 1024])
    parser.add_argument("--mg-sizes", type=int, nargs="+", default=[256, 512, 1024])
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args(argv)
    rows = [{"section": "floor", "impl": f"hal {b}", "tiny_multiply_us": 1e6 * _floor(b),
             "tiny_fft_us": 1e6 * _floor(b, "fft", "complex128")} for b in _backends()]
    for section in args.only:
        rows += _RUNNERS[section](args)
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1, default=str), encoding="utf-8")


if __name__ == "__main__":
    main()
