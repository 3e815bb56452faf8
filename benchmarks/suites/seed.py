"""Seed suite: the published claims (`benchmarks.claims`), each measured beside its peer.

Every workload carries `claim` and `role` in its params (the report's "Claims vs
measured" section pairs them); most are the other suites' workloads at the claim's size:

- `bert_int8`: MiniLM (the int8 suite) FP32 and INT8 at batch 32 through hal.jit, and
  ONNX Runtime's FP32 and quantize_dynamic INT8 as the peer; the cosine to the FP32
  reference is the accuracy check.
- `pde_3rd_order`: the full Kassam-Trefethen KdV solve (39,322 ETDRK4 steps; the jit
  suite's case) by hal.jit against jax.jit, torch.compile, cupy and numpy. The solve is
  dispatch-bound: a call is ~18 s on opencl here (450 us a step against 70 on cpu), and
  a measurement is a dozen calls, so hal's side runs on the cpu backend and on cuda,
  where the jitted step replays as one CUDA graph (39 us a step on an H200: 1.5 s a
  call); the jit suite measures 200 steps everywhere.
- `complex_fft`: a 1024 x 1024 complex64 fft2; `parallel_fft`: 1024 batched 1024-point
  complex64 ffts (per transform), against numpy, scipy.fft, pyfftw, torch, jax, cupy
  (cuFFT), pyvkfft (VkFFT) and every vendor's `hal.peers` entry point.

Every peer is placed on the device under test where it runs there (`frontends.science.
peers.place`, `benchmarks.ort_peer`): `hal bench --suite seed --backend cuda:0` times
torch, jax and cupy on the GPU and ORT's CUDA provider, `--backend cpu` (or a device on
host memory such as PoCL) the host libraries; a row not measured says why.
- `parallel_code` and `utilisation`: the parallel suite's LM steps on 2 MPI ranks; the
  tensor-parallel step records the code lines that differ from the single-device training
  script with annotations and with Megatron's split written by hand; naive data parallel
  (one all_reduce per gradient) is the baseline of the better layouts.
- `days_175b`: not measurable on one machine; skipped with the planner's projection.
- `pde_memory`: 5 IF-RK4 steps of 2-D Navier-Stokes 1024^2 in hal (eager and hal.jit) and
  the peers, each with the peak resident memory of a call in a fresh process.

A peer that is not installed is skipped with the reason and how to install it
(`pip install -e ".[seed-peers]"` brings jax and pyfftw; torch, cupy and pyvkfft are left
to the user).
"""

from __future__ import annotations

import dataclasses

import numpy as np

import hal
from benchmarks.suites import int8, jit, ops, parallel, science
from benchmarks.workload import Case, NotMeasuredHere, Workload, only_on
from frontends.parallel import planner
from frontends.parallel.training_scripts import annotation_lines
from frontends.science import kdv, peers

KDV_FULL_STEPS = round(kdv.KASSAM_TREFETHEN.t_end / kdv.KASSAM_TREFETHEN.dt)
KDV_BACKENDS = ("cpu", "cuda")
PDE_PEERS = ("numpy", "jax", "torch", "cupy")
PROJECTION_GPUS = 1024


def tagged(workload: Workload, claim: str, role: str, **changes) -> Workload:
    """`workload` with the claim and its role in the params (other fields changed too)."""
    return dataclasses.replace(workload, params={**workload.params, "claim": claim,
                                                 "role": role}, **changes)


def bert_int8() -> list[Workload]:
    """MiniLM FP32/INT8 at batch 32 in hal, and ONNX Runtime's as the peer."""
    roles = {"minilm[fp32]": "baseline", "minilm[int8]": "candidate",
             "minilm[ort-fp32]": "peer baseline", "minilm[ort-int8]": "peer candidate"}
    return [tagged(w, "bert_int8", roles[w.name]) for w in int8.workloads()
            if w.params.get("batch") == int8.LARGE_BATCH]


def pde_3rd_order() -> list[Workload]:
    """The full KdV solve: hal.jit on cpu and cuda (and, where the backend captures, the
    same without capture: no side of the claim), and the compiling peers."""
    hal_jit, uncaptured, *peer_workloads = jit.kdv_case(KDV_FULL_STEPS).workloads(PDE_PEERS)[1:]
    why = (f"the full solve is {KDV_FULL_STEPS} dispatch-bound steps, a dozen calls take "
           "minutes where each step launches its kernels one by one (cuda replays the step "
           "as one CUDA graph); the jit suite times 200 steps on every backend")
    out = [tagged(only_on(hal_jit, KDV_BACKENDS, why), "pde_3rd_order", "candidate"),
           tagged(only_on(uncaptured, KDV_BACKENDS, why), "pde_3rd_order", "uncaptured")]
    return out + [tagged(w, "pde_3rd_order", "baseline") for w in peer_workloads]


def fft_claim(claim: str, kind: str, shape: tuple[int, ...]) -> list[Workload]:
    """A complex64 FFT in hal on every backend, and in every FFT peer."""
    c64 = ("complex64",)
    out = [tagged(ops.fft(kind, shape, dtypes=c64), claim, "candidate")]
    return out + [tagged(science.fft_peer(kind, shape, name), claim, "baseline", dtypes=c64)
                  for name in peers.fft_names()]


def parallel_training() -> list[Workload]:
    """The LM steps: 1 rank, the naive and better layouts; tp=2 records the script lines."""
    roles = {"1 rank": "single", "dp=2 buckets off": "baseline"}
    out = []
    for w in parallel.workloads():
        if w.name != "lm_step":
            continue
        layout = w.params["layout"]
        out.append(tagged(w, "utilisation", roles.get(layout, "candidate")))
        if layout == "tp=2":
            lines = annotation_lines()
            out.append(tagged(w, "parallel_code", "candidate",
                              quality=lambda _out, _expected, lines=lines: dict(lines)))
    return out


def projection_175b() -> str:
    """The planner's projection for GPT-3 175B on PROJECTION_GPUS A100s, as one sentence."""
    cluster = planner.DGX_A100.with_gpus(PROJECTION_GPUS)
    naive = planner.naive(planner.GPT3_175B, cluster)
    best = planner.best(planner.GPT3_175B, cluster)[0]
    return (f"the planner's projection (not a measurement) for {planner.GPT3_175B.name} on "
            f"{PROJECTION_GPUS} {cluster.name} GPUs at an assumed MFU of {cluster.mfu:.2f}: "
            f"naive data parallel {naive['days']:.1f} days -> dp {best['dp']} x tp "
            f"{best['tp']}, ZeRO-{best['zero']} {best['days']:.1f} days "
            f"({naive['days'] / best['days']:.2f}x); `python -m frontends.parallel.planner`")


def days_175b() -> list[Workload]:
    """Training a 175B model: skipped with the reason and the projection."""

    def run(x: hal.Tensor) -> hal.Tensor:
        raise NotMeasuredHere(f"training a 175B-parameter model takes weeks on about a "
                              f"thousand GPUs, not one machine; {projection_175b()}")

    params = {"model": planner.GPT3_175B.name, "tokens": "300B"}
    return [tagged(Workload("gpt3_175b_training", params, ("float32",),
                            lambda dtype: Case([np.zeros(1, np.float32)]), run, lambda x: x),
                   "days_175b", "candidate")]


def pde_memory() -> list[Workload]:
    """Navier-Stokes 1024^2, 5 steps, float64: hal eager and jit, the peers; peak memory."""
    eager, hal_jit, *peer_workloads = jit.ns_case(1024, 5).workloads(PDE_PEERS)
    f64 = ("float64",)
    out = [tagged(w, "pde_memory", "candidate", dtypes=f64, footprint=True)
           for w in (eager, hal_jit)]
    return out + [tagged(w, "pde_memory", "baseline", dtypes=f64, footprint=True)
                  for w in peer_workloads]


def workloads() -> list[Workload]:
    """Every claim's workloads (see the module docstring)."""
    return (bert_int8() + pde_3rd_order() + fft_claim("complex_fft", "fft2", (1024, 1024))
            + fft_claim("parallel_fft", "fft", (1024, 1024)) + parallel_training()
            + days_175b() + pde_memory())
