"""Science suite: FFT, KdV (Kassam-Trefethen), 2-D Navier-Stokes and multigrid, beside peers.

Every hal workload runs on every backend. The same algorithm in each peer library
(numpy, scipy.fft, pyfftw, torch, jax; `frontends.science.peers`) is a workload named
`<workload>[<peer>]` whose params carry the peer's version; peers compute on the host,
so they are measured under the cpu backend and skipped elsewhere, and a peer that does
not import is skipped with the reason.

FFT work is 5 N log2 N FLOPs per complex transform. A KdV call is `steps` ETDRK4 steps
of the Kassam-Trefethen problem from u(0) (items = steps; the full 39,322-step solve is
`python -m frontends.science.bench`), checked against the exact 2-soliton in the max
norm (1e-6 in float64). A Navier-Stokes call is `steps` IF-RK4 steps of Kolmogorov flow
(items = steps; FLOPs count the 20 real transforms per step), checked against numpy in
complex128. A multigrid call is one V(1,1) cycle, checked against the cpu backend.
"""

from __future__ import annotations

import functools
import math

import numpy as np

import hal
from benchmarks.suites import ops
from benchmarks.workload import Case, Workload, random_array
from frontends.science import kdv, multigrid, peers
from frontends.science import navier_stokes as ns

REALS = ("float32", "float64")
KDV_STEPS = 200
NS_VISCOSITY, NS_DT = 1e-3, 1e-3


def on_host(device) -> None:
    """Peers compute on the host: measure them once, under the cpu backend."""
    if device.backend.name != "cpu":
        raise hal.UnsupportedOp(
            f"peers run on the host; they are measured under the cpu backend, not {device.name}"
        )


def peer_params(name: str, params: dict) -> dict:
    """params with the peer's name and installed version (read without importing it)."""
    return {**params, "peer": peers.version_label(name)}


# -- FFT ------------------------------------------------------------------------------
def fft_peer(kind: str, shape: tuple[int, ...], name: str) -> Workload:
    """ops.fft's transform computed by a peer library (jitted once for jax)."""
    base = ops.fft(kind, shape)
    transform = functools.cache(lambda: peers.load(name).compile(getattr(peers.load(name).fft,
                                                                         kind)))

    def run(x: hal.Tensor) -> hal.Tensor:
        on_host(x.device)
        peer = peers.load(name)
        return hal.asarray(peer.numpy(transform()(peer.asarray(x.numpy()))))

    params = peer_params(name, base.params)
    return Workload(
        f"{kind}[{name}]",
        params,
        base.dtypes,
        base.build,
        run,
        base.reference,
        tolerance_scale=base.tolerance_scale,
    )


# -- KdV ------------------------------------------------------------------------------
def kdv_problem(steps: int) -> kdv.KdVProblem:
    """Kassam and Trefethen's KdV problem run for `steps` steps."""
    kt = kdv.KASSAM_TREFETHEN
    return kt.with_horizon(steps * kt.dt, f"{kt.name}-{steps}-steps")


def kdv_build(problem: kdv.KdVProblem, steps: int):
    """The case builder of a KdV solve of `steps` steps (per dtype)."""
    def build(dtype: np.dtype) -> Case:
        n = problem.n
        flops = steps * 4 * 2 * 2.5 * n * math.log2(n)  # 4 rfft/irfft pairs per step
        return Case([problem.exact(0.0).astype(dtype)], flops=flops, items=steps)

    return build


def kdv_workloads(steps: int = KDV_STEPS, name: str | None = None) -> list[Workload]:
    """The Kassam-Trefethen problem for `steps` steps, in hal (or in peer `name`)."""
    problem = kdv_problem(steps)
    params = {"N": problem.n, "steps": steps, "dt": problem.dt}
    label = "kdv_kt" if name is None else f"kdv_kt[{name}]"
    if name is not None:
        params = peer_params(name, params)
    out = []
    # max-norm error limits: 1e-6 in float64 (the published figure), 1e-3 in float32
    for dtype, scale in (("float64", 1e4), ("float32", 10.0)):

        @functools.cache
        def solver(device, dtype=dtype):
            return kdv.KdVSolver(problem, dtype, device)

        @functools.cache
        def runner(dtype=dtype):
            return kdv.peer_runner(peers.load(name), problem, dtype, steps)

        def run(u0: hal.Tensor, solver=solver, runner=runner) -> hal.Tensor:
            if name is None:
                return solver(u0.device).run(steps, u0)
            on_host(u0.device)
            return hal.asarray(runner()(u0.numpy()))

        out.append(
            Workload(
                label,
                params,
                (dtype,),
                kdv_build(problem, steps),
                run,
                lambda u0: problem.exact(problem.t_end),
                tolerance_scale=scale,
            )
        )
    return out


# -- Navier-Stokes --------------------------------------------------------------------
def _ns_solver(n: int, dtype, device=None) -> ns.NavierStokes2D:
    return ns.NavierStokes2D(
        n, NS_DT, NS_VISCOSITY, ns.kolmogorov_forcing(n), dtype, device, check_every=10**9
    )


def ns_workload(n: int, steps: int, name: str | None = None) -> Workload:
    """`steps` IF-RK4 steps of Kolmogorov flow on n x n, in hal (or in peer `name`)."""

    def build(dtype: np.dtype) -> Case:
        state = _ns_solver(n, "float64", "cpu").transform(ns.random_vorticity(n))
        host = state.numpy().astype(np.complex64 if dtype == np.float32 else np.complex128)
        flops = steps * 20 * 2.5 * n * n * math.log2(n * n)
        return Case([host], flops=flops, items=steps)

    solvers = functools.cache(lambda device, dtype: _ns_solver(n, dtype, device))
    steppers = functools.cache(
        lambda dtype: peers.load(name).compile(
            _ns_solver(n, dtype, "cpu").peer_step(peers.load(name))
        )
    )

    def run(state: hal.Tensor) -> hal.Tensor:
        real = "float32" if state.dtype == hal.complex64 else "float64"
        if name is None:
            return solvers(state.device, real).run(state, steps)
        on_host(state.device)
        peer = peers.load(name)
        step = steppers(real)
        x = peer.asarray(state.numpy())
        for _ in range(steps):
            x = step(x)
        return hal.asarray(peer.numpy(x))

    def reference(state: np.ndarray) -> np.ndarray:
        solver, numpy = _ns_solver(n, "float64", "cpu"), peers.load("numpy")
        step, x = solver.peer_step(numpy), state.astype(np.complex128)
        for _ in range(steps):
            x = step(x)
        return x

    params = {"N": n, "steps": steps, "dt": NS_DT, "nu": NS_VISCOSITY}
    label = "navier_stokes" if name is None else f"navier_stokes[{name}]"
    if name is not None:
        params = peer_params(name, params)
    return Workload(label, params, REALS, build, run, reference)


# -- multigrid ------------------------------------------------------------------------
def multigrid_workload(n: int) -> Workload:
    """One V(1,1) cycle for -lap u = f on an n-interval grid from a random guess."""
    levels = functools.cache(lambda device, dtype: multigrid.Level.serial(n, dtype, device))

    def build(dtype: np.dtype) -> Case:
        u = random_array((n, n - 1), dtype, 0)
        u[0] = 0
        f = random_array((n, n - 1), dtype, 1)
        f[0] = 0
        return Case([u, f], items=1, bytes=2 * u.nbytes)

    def run(u: hal.Tensor, f: hal.Tensor) -> hal.Tensor:
        return multigrid.v_cycle(levels(u.device, u.dtype), u, f)

    def reference(u: np.ndarray, f: np.ndarray) -> np.ndarray:
        level = levels(hal.device("cpu"), hal.float64)
        return multigrid.v_cycle(level, hal.asarray(u), hal.asarray(f)).numpy()

    return Workload("multigrid_v11", {"N": n}, REALS, build, run, reference, tolerance_scale=10.0)


FFT_CASES = (("fft", (1024,)), ("fft", (4096, 1024)), ("fft2", (1024, 1024)))


def workloads() -> list[Workload]:
    """FFT, KdV, Navier-Stokes 256^2 and 1024^2, multigrid; hal then every peer."""
    out: list[Workload] = [ops.fft(kind, shape) for kind, shape in FFT_CASES]
    out += kdv_workloads()
    out += [ns_workload(256, 5), ns_workload(1024, 1)]
    out += [multigrid_workload(256), multigrid_workload(1024)]
    for name in peers.NAMES:
        out += [fft_peer(kind, shape, name) for kind, shape in FFT_CASES]
        out += kdv_workloads(name=name)
        out += [ns_workload(256, 5, name)]
    return out
