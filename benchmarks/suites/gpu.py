"""GPU suite: the op-suite measurements at sizes that fill a data-centre GPU.

GEMM 8192^3 in float32, bfloat16 and float16; complex64 FFTs (a batch of 4096 x 1024
points, and 2-D 1024 x 1024); elementwise bandwidth over 2^27 elements (add in float32,
float16 and bfloat16, as % of the measured bandwidth peak); and each fused composite
(softmax, layer_norm, linear + gelu, attention) beside the same computation written as
separate hal ops (`*_unfused`), so a backend's fusion shows as a speedup, with softmax and
layer_norm also in torch on the device (`[torch]`). Then the tensor-core rows
(`tensor_cores`): int8 GEMMs beside torch._int_mm and BERT-base in FP32, INT8, FP16 and
BF16. `reports.gpu_figures` prints the figures table of a run.
Run it on one device: `hal bench --suite gpu --backend cuda`.

Beside them the same GEMMs and FFTs in the device's own libraries, placed on it
(`frontends.science.peers`): cuBLAS and cuFFT through cupy, torch and jax on an NVIDIA
GPU, CLBlast and VkFFT on OpenCL, every vendor's `hal.peers` entry point on its chip;
each row names the library, its version and the device.

Every GEMM, FFT and bandwidth row gets its % of the device's measured peak without the
`peak` suite: the GEMMs are the FLOP/s peaks of their dtypes (a complex FFT is held
against its real part's, float32), and `add` the bandwidth peak of a device with memory
of its own (on host memory, the host's measured bandwidth: `benchmarks.peaks`). The run
record names the cupy the device ran (`libraries`).
"""

from __future__ import annotations

import dataclasses
import functools
import math

import hal
from benchmarks.suites import science, tensor_cores
from benchmarks.suites.ops import (
    attention,
    elementwise,
    fft,
    gemm,
    layer_norm,
    linear_gelu,
    softmax,
)
from benchmarks.workload import NotMeasuredHere, Workload
from frontends.science import peers

F32 = ("float32",)


def _softmax_unfused(x, axis=-1):
    """softmax as four ops: max, subtract and exp, sum, divide."""
    e = hal.exp(x - hal.max(x, axis=axis, keepdims=True))
    return e / hal.sum(e, axis=axis, keepdims=True)


def _layer_norm_unfused(x, w, b, eps=1e-5):
    """layer_norm as separate ops: mean, centre, variance, scale, weight, bias."""
    c = x - hal.sum(x, axis=-1, keepdims=True) * (1 / x.shape[-1])
    var = hal.sum(c * c, axis=-1, keepdims=True) * (1 / x.shape[-1])
    return c / hal.sqrt(var + eps) * w + b


def _linear_unfused(x, w, b, activation="gelu"):
    """matmul, bias add, then exact gelu as elementwise ops."""
    y = x @ w + b
    return 0.5 * y * (1 + hal.erf(y * (1 / math.sqrt(2))))


def _attention_unfused(q, k, v, causal=False):
    """Two matmuls around an unfused softmax (no causal mask: the suite's case has none)."""
    scores = (q @ hal.matrix_transpose(k)) * (1 / math.sqrt(q.shape[-1]))
    return _softmax_unfused(scores) @ v


def _unfused(workload, run):
    """The same workload (inputs, reference, work) computed by `run` from separate ops."""
    return dataclasses.replace(workload, name=f"{workload.name}_unfused", run=run)


def _torch_softmax(x, axis=-1):
    import torch

    return torch.softmax(x, dim=axis)


def _torch_layer_norm(x, w, b, eps=1e-5):
    import torch

    return torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, eps)


GEMM_DTYPES = ("float32", "bfloat16", "float16")
ELEMENTWISE_DTYPES = ("float32", "float16", "bfloat16")
# The peers' GEMMs: hal's bfloat16 tensors do not cross DLPack as bfloat16 (cupy and
# CLBlast have no such type), so the peers are timed in float32 and float16.
PEER_GEMM_DTYPES = ("float32", "float16")
GEMM_SIZE = 8192
FFTS = (("fft", (4096, 1024)), ("fft2", (1024, 1024)))


def gemm_peer(dtype: str, name: str, size: int = GEMM_SIZE) -> Workload:
    """The suite's GEMM in peer `name` placed on the device under test (cuBLAS through cupy,
    torch or jax; CLBlast), its data kept there; skipped where the peer would run on the
    host CPU (a call of this size takes seconds there)."""
    base = gemm(size, size, size, dtypes=(dtype,))

    @functools.cache
    def matmul(device: hal.Device):
        peer = peers.place(name, device)
        if peer.matmul is None:
            raise peers.PeerUnavailable(f"peer {name} has no GEMM")
        return peer.compile(peer.matmul)

    def run(a: hal.Tensor, b: hal.Tensor) -> hal.Tensor:
        peer = peers.place(name, a.device)
        if peer.device == "host CPU":
            raise NotMeasuredHere(f"the gpu suite times its GEMM peers on the device itself; "
                                  f"{name} would run on the host CPU here (seconds a call)")
        return peer.to_hal(matmul(a.device)(peer.from_hal(a), peer.from_hal(b)), a.device)

    return dataclasses.replace(base, name=f"gemm[{name}]",
                               params=science.peer_params(name, base.params), run=run,
                               facts=science.peer_facts(name))


def peer_workloads() -> list[Workload]:
    """The GEMMs and FFTs in every device peer (`peers.gemm_names`, `peers.fft_names`)."""
    out = [gemm_peer(dtype, name) for name in peers.gemm_names() for dtype in PEER_GEMM_DTYPES]
    return out + [dataclasses.replace(science.fft_peer(kind, shape, name), dtypes=("complex64",))
                  for name in peers.fft_names() for kind, shape in FFTS]


def workloads() -> list:
    """GEMM, FFT, bandwidth and fused-vs-unfused composites at GPU sizes, then the peers."""
    fused = [
        softmax(8192, 4096, F32),
        layer_norm(8192, 4096, F32),
        linear_gelu(4096, 4096, 4096, F32),
        attention(32, 1024, 64, dtypes=F32),
    ]
    runs = (_softmax_unfused, _layer_norm_unfused, _linear_unfused, _attention_unfused)
    return [
        *(gemm(GEMM_SIZE, GEMM_SIZE, GEMM_SIZE, dtypes=(d,), peak="gflops")
          for d in GEMM_DTYPES),
        *(fft(kind, shape, ("complex64",)) for kind, shape in FFTS),
        dataclasses.replace(elementwise("add", 1 << 27, ELEMENTWISE_DTYPES), peak="gbps"),
        elementwise("exp", 1 << 27, F32),
        *fused,
        *(_unfused(w, run) for w, run in zip(fused, runs)),
        tensor_cores.torch_peer(fused[0], _torch_softmax),
        tensor_cores.torch_peer(fused[1], _torch_layer_norm),
        *peer_workloads(),
        *tensor_cores.workloads(),
    ]
