"""Science suite: FFT, KdV, 2-D Navier-Stokes and multigrid beside peers, their memory, and
domain decomposition over MPI ranks.

Every hal workload runs on every backend unless it says otherwise. The same algorithm in
each peer library (numpy, scipy.fft, pyfftw, torch, jax, cupy; the FFTs also in VkFFT
and every vendor's `hal.peers` entry point; `frontends.science.peers`) is a workload named
`<workload>[<peer>]` whose params carry the peer's version. A peer is placed on the device
under test where it runs there (`peers.place`: numpy, scipy, pyfftw on the host CPU, which
the cpu backend and host-memory devices such as PoCL compute on; torch, jax and cupy
calling cuFFT on a CUDA GPU; VkFFT on an OpenCL device); its facts name its build and the
device it computed on. Elsewhere, or where it does not import, it is skipped with the
reason (and how to install it).

- `dispatch_floor[multiply|fft]`: one op on an 8 x 8 array, the fixed cost of a call on
  a backend; the report prices each workload's ops (from its placement) with it and
  calls a workload dispatch-bound when they cost over half its time.
- `fft`, `fft2`: complex transforms, 5 N log2 N FLOPs each (items are transforms): one
  1024-point, 1024 and 4096 batched 1024-point, 2-D 1024^2; beside the peers,
  `[pyfftw_plan]` is one planned FFTW object called per transform (FFTW's own floor).
- `kdv_kt`: `steps` ETDRK4 steps of the Kassam-Trefethen problem (N=256) from u(0) (items
  are steps; `full_steps` those of the whole solve, which the report extrapolates to),
  checked against the exact 2-soliton in the max norm (1e-6 in float64); `kdv_large`
  (N = 4096 and 65536, 20 steps) and `kdv_soft` (the soft collision, N=512, 100 of its
  10,000 steps) on cpu.
- `navier_stokes`: `steps` IF-RK4 steps of Kolmogorov flow, 256^2 and 1024^2 (items are
  steps; FLOPs count the 20 real transforms per step), checked against numpy in complex128.
- `multigrid_v11`: one V(1,1) cycle, N = 256, 512, 1024, checked against the cpu backend;
  its facts hold the convergence factor per cycle (over 8 cycles).
- `memory[kdv|taylor_green|multigrid]` (cpu): KdV 2000 steps, Taylor-Green vortex 256^2
  20 steps (against the exact decay), multigrid N=512 4 cycles, in float64 and float32:
  the error of each and the peak memory of a call in a fresh process (footprint).
- `mpi_jacobi`, `mpi_multigrid`, `mpi_schwarz` on 1 and 2 ranks (cpu): an MPI job of
  `frontends.science.mpi_run --serve` driven through a pipe (`benchmarks.mpi_job`), one
  `run` command a call: 200 Jacobi sweeps on 512^2 (checked bitwise against one process),
  8 V-cycles of distributed multigrid on 512^2 (its factor against one process's), and
  additive-Schwarz PCG on 256^2 (against the exact solution); the facts hold the job's
  figures (the field's sha256, the factor, CG iterations and residual).

The report's "Science" section gives per-step and per-transform figures, the full solves
extrapolated, what bounds each workload, memory and the MPI speedups from these records.
"""

from __future__ import annotations

import functools
import math
from dataclasses import replace

import numpy as np

import hal
from benchmarks.mpi_job import MpiJob
from benchmarks.suites import ops
from benchmarks.workload import Case, Workload, only_on, random_array
from frontends.science import distributed, kdv, multigrid, peers
from frontends.science import navier_stokes as ns

REALS = ("float32", "float64")
KDV_STEPS = 200
NS_VISCOSITY, NS_DT = 1e-3, 1e-3
ON_CPU = ("cpu",)


def peer_facts(name: str):
    """A peer workload's facts: the peer with its build and the device it computed on."""

    def facts(*tensors: hal.Tensor, **options) -> dict[str, str]:
        peer = peers.place(name, tensors[0].device)
        return {"peer": peer.label, "peer_device": peer.device}

    return facts


def peer_params(name: str, params: dict) -> dict:
    """params with the peer's name and installed version (read without importing it)."""
    return {**params, "peer": peers.version_label(name)}


# -- FFT ------------------------------------------------------------------------------
def fft_peer(kind: str, shape: tuple[int, ...], name: str) -> Workload:
    """ops.fft's transform computed by a peer library placed on the device under test
    (`peers.place`; jitted once for jax): a device peer takes hal's tensor and gives its
    result through DLPack (no copy through the host inside the time)."""
    base = ops.fft(kind, shape)

    @functools.cache
    def transform(device: hal.Device):
        peer = peers.place(name, device)
        fn = getattr(peer.fft, kind, None)
        if fn is None:
            raise peers.PeerUnavailable(f"peer {name} has no {kind}")
        return peer.compile(fn)

    def run(x: hal.Tensor) -> hal.Tensor:
        peer = peers.place(name, x.device)
        return peer.to_hal(transform(x.device)(peer.from_hal(x)), x.device)

    return Workload(f"{kind}[{name}]", peer_params(name, base.params), base.dtypes, base.build,
                    run, base.reference, tolerance_scale=base.tolerance_scale,
                    facts=peer_facts(name))


def fft_plan_peer(kind: str, shape: tuple[int, ...]) -> Workload:
    """ops.fft's transform by one FFTW plan made beforehand per dtype (pyfftw.FFTW,
    FFTW_MEASURE, 1 thread) and called on the input: FFTW's own cost per call, without the
    lookups of pyfftw.interfaces (`fft[pyfftw]`). Its result is the plan's output array."""
    base = ops.fft(kind, shape)
    axes = (-1,) if kind == "fft" else (-2, -1)

    @functools.cache
    def plan(dtype: np.dtype):
        try:
            import pyfftw
        except ImportError as exc:
            raise peers.PeerUnavailable(f"peer pyfftw is not importable ({exc})") from None
        return pyfftw.FFTW(np.zeros(shape, dtype), np.zeros(shape, dtype), axes=axes,
                           flags=("FFTW_MEASURE",), threads=1)

    def run(x: hal.Tensor) -> hal.Tensor:
        peers.place("pyfftw", x.device)  # FFTW runs on the host CPU
        return hal.asarray(plan(x.dtype)(x.numpy()))

    params = {**base.params, "peer": f"{peers.version_label('pyfftw')} (one FFTW plan)"}
    return Workload(f"{kind}[pyfftw_plan]", params, base.dtypes, base.build, run,
                    base.reference, tolerance_scale=base.tolerance_scale,
                    facts=peer_facts("pyfftw"))


# -- the floor ------------------------------------------------------------------------
def floor_workload(op: str) -> Workload:
    """One multiply (float64) or fft (complex128) of an 8 x 8 array: a call's fixed cost."""
    dtype, run, reference = {"multiply": ("float64", lambda x: x * x, lambda x: x * x),
                             "fft": ("complex128", hal.fft.fft, np.fft.fft)}[op]
    return Workload(f"dispatch_floor[{op}]", {"shape": "8x8"}, (dtype,),
                    lambda d: Case([random_array((8, 8), d, 0)], items=1), run, reference,
                    tolerance_scale=10.0)


# -- KdV ------------------------------------------------------------------------------
def kdv_problem(steps: int, base: kdv.KdVProblem = kdv.KASSAM_TREFETHEN) -> kdv.KdVProblem:
    """A KdV problem (Kassam and Trefethen's by default) run for `steps` of its steps."""
    return base.with_horizon(steps * base.dt, f"{base.name}-{steps}-steps")


def kdv_build(problem: kdv.KdVProblem, steps: int):
    """The case builder of a KdV solve of `steps` steps (per dtype)."""
    def build(dtype: np.dtype) -> Case:
        n = problem.n
        flops = steps * 4 * 2 * 2.5 * n * math.log2(n)  # 4 rfft/irfft pairs per step
        return Case([problem.exact(0.0).astype(dtype)], flops=flops, items=steps)

    return build


def kdv_workloads(steps: int = KDV_STEPS, name: str | None = None,
                  base: kdv.KdVProblem = kdv.KASSAM_TREFETHEN, label: str = "kdv_kt",
                  dtypes: tuple[str, ...] = ("float64", "float32")) -> list[Workload]:
    """`steps` steps of a KdV problem (Kassam-Trefethen by default), in hal (or in peer
    `name`); `full_steps` in the params are the whole solve's."""
    problem = kdv_problem(steps, base)
    params = {"N": problem.n, "steps": steps, "dt": problem.dt, "full_steps": base.steps}
    if name is not None:
        label, params = f"{label}[{name}]", peer_params(name, params)
    out = []
    # max-norm error limits: 1e-6 in float64 (the published figure), 1e-3 in float32
    for dtype, scale in (("float64", 1e4), ("float32", 10.0)):
        if dtype not in dtypes:
            continue

        @functools.cache
        def solver(device, dtype=dtype):
            return kdv.KdVSolver(problem, dtype, device)

        @functools.cache
        def runner(device, dtype=dtype):
            return kdv.peer_runner(peers.place(name, device), problem, dtype, steps)

        def run(u0: hal.Tensor, solver=solver, runner=runner) -> hal.Tensor:
            if name is None:
                return solver(u0.device).run(steps, u0)
            return hal.asarray(runner(u0.device)(u0.numpy()))

        out.append(
            Workload(
                label,
                params,
                (dtype,),
                kdv_build(problem, steps),
                run,
                lambda u0: problem.exact(problem.t_end),
                tolerance_scale=scale,
                facts=None if name is None else peer_facts(name),
            )
        )
    return out


LARGE_N = (4096, 65536)
LARGE_N_STEPS = 20
SOFT_STEPS = 100


def kdv_more_workloads(name: str | None = None) -> list[Workload]:
    """KdV at large N (20 steps) and the soft collision (100 steps), float64, hal on cpu
    (elsewhere a call takes seconds) or in peer `name`."""
    out = [w for n in LARGE_N for w in kdv_workloads(
        LARGE_N_STEPS, name, kdv.large_n(n, LARGE_N_STEPS), "kdv_large", ("float64",))]
    if name is None:
        out += kdv_workloads(SOFT_STEPS, None, kdv.SOFT_COLLISION, "kdv_soft", ("float64",))
        why = "a call takes seconds where each step dispatches its kernels one by one"
        out = [only_on(w, ON_CPU, why) for w in out]
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
        lambda device, dtype: _ns_solver(n, dtype, "cpu").peer_step(peers.place(name, device))
    )

    def run(state: hal.Tensor) -> hal.Tensor:
        real = "float32" if state.dtype == hal.complex64 else "float64"
        if name is None:
            return solvers(state.device, real).run(state, steps)
        peer = peers.place(name, state.device)
        step = steppers(state.device, real)
        x = peer.from_hal(state)
        for _ in range(steps):
            x = step(x)
        return peer.to_hal(x, state.device)

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
    facts = None if name is None else peer_facts(name)
    return Workload(label, params, REALS, build, run, reference, facts=facts)


# -- multigrid ------------------------------------------------------------------------
def multigrid_workload(n: int) -> Workload:
    """One V(1,1) cycle for -lap u = f on an n-interval grid from a random guess; facts: the
    convergence factor per cycle over 8 cycles."""
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

    def facts(u: hal.Tensor, f: hal.Tensor) -> dict[str, float | str]:
        return {"factor": multigrid.convergence_factor(levels(u.device, u.dtype), 8)[0]}

    return Workload("multigrid_v11", {"N": n}, REALS, build, run, reference, tolerance_scale=10.0,
                    facts=facts)


# -- memory ---------------------------------------------------------------------------
MEMORY_WHY = "the memory figures are those of the cpu backend"


def memory_workloads() -> list[Workload]:
    """KdV 2000 steps, Taylor-Green 256^2 20 steps, multigrid N=512 4 cycles (cpu): the
    error of float32 and float64, and the footprint of a call."""
    kdv_2000 = [replace(w, name="memory[kdv]", footprint=True) for w in kdv_workloads(2000)]
    return [only_on(w, ON_CPU, MEMORY_WHY)
            for w in [*kdv_2000, taylor_green_workload(), multigrid_memory_workload()]]


def taylor_green_workload(n: int = 256, nu: float = 1e-2, steps: int = 20) -> Workload:
    """`steps` IF-RK4 steps of the decaying Taylor-Green vortex, against the exact one."""
    solvers = functools.cache(lambda device, dtype: ns.NavierStokes2D(n, NS_DT, nu,
                                                                      dtype=dtype, device=device))

    def build(dtype: np.dtype) -> Case:
        state = solvers(hal.device("cpu"), "float64").transform(ns.taylor_green(n, nu, 0.0))
        return Case([state.numpy().astype(np.complex64 if dtype == np.float32
                                          else np.complex128)], items=steps)

    def run(state: hal.Tensor) -> hal.Tensor:
        s = solvers(state.device, "float32" if state.dtype == hal.complex64 else "float64")
        return s.vorticity(s.run(state, steps))

    return Workload("memory[taylor_green]", {"N": n, "nu": nu, "dt": NS_DT, "steps": steps},
                    REALS, build, run, lambda state: ns.taylor_green(n, nu, steps * NS_DT),
                    tolerance_scale=10.0, footprint=True)


def multigrid_memory_workload(n: int = 512, cycles: int = 4) -> Workload:
    """`cycles` V(1,1) cycles from the seeded guess (`convergence_factor`), against the cpu
    backend in float64; facts: the factor."""
    levels = functools.cache(lambda device, dtype: multigrid.Level.serial(n, dtype, device))

    def run(x: hal.Tensor) -> hal.Tensor:
        return multigrid.convergence_factor(levels(x.device, x.dtype), cycles)[1]

    def reference(x: np.ndarray) -> np.ndarray:
        return multigrid.convergence_factor(levels(hal.device("cpu"), hal.float64),
                                            cycles)[1].numpy()

    def facts(x: hal.Tensor) -> dict[str, float | str]:
        return {"factor": multigrid.convergence_factor(levels(x.device, x.dtype), cycles)[0]}

    return Workload("memory[multigrid]", {"N": n, "cycles": cycles}, REALS,
                    lambda dtype: Case([np.zeros(1, dtype)], items=cycles), run, reference,
                    tolerance_scale=10.0, footprint=True, facts=facts)


# -- MPI ------------------------------------------------------------------------------
MPI_CASES = {"jacobi": {"n": 512, "iterations": 200}, "multigrid": {"n": 512, "cycles": 8},
             "schwarz": {"n": 256}}
MPI_RANKS = (1, 2)
_jobs: dict[tuple, MpiJob] = {}


def mpi_job(case: str, ranks: int) -> MpiJob:
    """The running `mpi_run --serve` job of a case on `ranks` ranks; starting one ends the
    one before (idle ranks would share the cores with the next measurement)."""
    key = (case, ranks)
    if key not in _jobs:
        for job in _jobs.values():
            job.close()
        _jobs.clear()
        args = [case, "--serve", *(f"--{k}={v}" for k, v in MPI_CASES[case].items())]
        _jobs[key] = MpiJob("frontends.science.mpi_run", args, ranks, "science suite")
    return _jobs[key]


def _mpi_reference(case: str):
    """The same case in one process on the cpu backend: the field's sum (jacobi), the
    factor (multigrid), no error (schwarz: its tolerance is the discretisation error)."""
    size = MPI_CASES[case]

    def reference(_x) -> np.ndarray:
        level = multigrid.Level.serial(size["n"])
        if case == "jacobi":
            f = distributed.poisson_rhs(level)
            u = distributed.jacobi(level, hal.zeros_like(f), f, size["iterations"])
            return np.array([u.numpy().sum()])
        if case == "multigrid":
            return np.array([multigrid.convergence_factor(level, size["cycles"])[0]])
        return np.zeros(1)

    return reference


MPI_FIGURE = {"jacobi": "sum", "multigrid": "factor", "schwarz": "max_error"}
# jacobi is bitwise identical; the factor agrees to 1e-6; the O(h^2) error stays below 5e-4
MPI_TOLERANCE = {"jacobi": 1.0, "multigrid": 1e4, "schwarz": 5e6}


def mpi_workload(case: str, ranks: int) -> Workload:
    """One run of an MPI case on `ranks` ranks, timed from outside the job."""

    def run(x: hal.Tensor) -> hal.Tensor:
        answer = mpi_job(case, ranks).request("run")
        return hal.asarray(np.array([answer[MPI_FIGURE[case]]]), device=x.device)

    def facts(x: hal.Tensor) -> dict[str, float | str]:
        answer = mpi_job(case, ranks).request("run")
        return {k: v for k, v in answer.items() if k not in ("case", "ranks", "n", "dtype")}

    size = MPI_CASES[case]
    items = size.get("iterations") or size.get("cycles") or 1
    workload = Workload(f"mpi_{case}", {"ranks": ranks, **size}, ("float64",),
                        lambda dtype: Case([np.zeros(1)], items=items), run,
                        _mpi_reference(case), tolerance_scale=MPI_TOLERANCE[case], facts=facts)
    return only_on(workload, ON_CPU, "the MPI ranks compute on the host")


FFT_CASES = (("fft", (1024,)), ("fft", (1024, 1024)), ("fft", (4096, 1024)), ("fft2", (1024, 1024)))


def workloads() -> list[Workload]:
    """The floor, FFT, KdV, Navier-Stokes 256^2 and 1024^2, multigrid, memory and MPI in
    hal, then every peer."""
    out: list[Workload] = [floor_workload(op) for op in ("multiply", "fft")]
    out += [ops.fft(kind, shape) for kind, shape in FFT_CASES]
    out += kdv_workloads() + kdv_more_workloads()
    out += [ns_workload(256, 5), ns_workload(1024, 1)]
    out += [multigrid_workload(n) for n in (256, 512, 1024)]
    out += memory_workloads()
    out += [mpi_workload(case, ranks) for case in MPI_CASES for ranks in MPI_RANKS]
    out += [fft_plan_peer(kind, shape) for kind, shape in FFT_CASES]
    out += [fft_peer(kind, shape, name) for name in peers.fft_names()
            for kind, shape in FFT_CASES]
    for name in peers.NAMES:
        out += kdv_workloads(name=name)
        out += [ns_workload(256, 5, name), ns_workload(1024, 1, name)]
    return out + kdv_more_workloads("numpy")
