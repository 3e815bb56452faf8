"""Autograd suite: the k-th derivative of sin(x) exp(-x^2) at 10^4 points, four ways.

hal Taylor mode (all derivatives in one pass, O(k^2) per op) for k = 1 ... 16 and hal
nested reverse mode (k nested VJPs, cost doubling per order) for k <= 8, on each backend
in float64 and float32; beside them on the host CPU (under the cpu backend and devices on
host memory, float64)
`jax.experimental.jet` (jitted: the warm-up compiles it) for every k and torch nested
autograd (`create_graph=True`, one thread) for k <= 8; a peer that does not import is
skipped with the reason. Every output is checked against the Hermite closed form; items
are points per call. Each call's peak memory is measured in a fresh process (the
resident high-water mark above the inputs, `benchmarks.footprint`), so hal, XLA and
torch buffers count alike. The report's "Autograd" section puts time and memory per
order side by side (`frontends.autograd.kth_derivative` holds the problem).
"""

from __future__ import annotations

import functools

import numpy as np

import hal
from benchmarks.suites import science
from benchmarks.suites.jit import host_run
from benchmarks.workload import Case, Workload
from frontends.autograd import kth_derivative as kth
from frontends.science import peers

REVERSE_ORDERS = (1, 2, 4, 8)  # nested reverse at k = 10 takes seconds and 300 MB per call
PEERS = {"jax-jet": ("jax", kth.ORDERS, kth.jax_kth),
         "torch-nested": ("torch", REVERSE_ORDERS, kth.torch_kth)}


def _build(n: int):
    def build(dtype: np.dtype) -> Case:
        return Case([kth.points(n, dtype)], items=n)

    return build


def _reference(k: int):
    return lambda x: kth.hermite_derivative(np.asarray(x, np.float64), k)


def _params(k: int, n: int) -> dict:
    return {"order": k, "n": n, "function": "sin*exp(-x^2)"}


def hal_workload(mode: str, k: int, n: int = kth.POINTS) -> Workload:
    """f^(k) by hal in `mode` ("taylor" or "reverse") on the device, float64 and float32."""
    made = functools.cache(lambda: kth.hal_kth(mode, k))

    def run(x: hal.Tensor) -> hal.Tensor:
        return made()(x)

    # float32 at k = 16 keeps about 1e-5 of relative accuracy
    return Workload(f"autograd-{mode}", _params(k, n), ("float64", "float32"), _build(n), run,
                    _reference(k), tolerance_scale=10.0, footprint=True)


def peer_workload(name: str, k: int, n: int = kth.POINTS) -> Workload:
    """f^(k) by the peer `name` (a key of PEERS) on the host, float64; skipped with the
    reason where its library does not import."""
    library, _, make = PEERS[name]

    def function(device, dtype: np.dtype):
        if "cpu" not in peers.device_kinds(device):
            raise peers.PeerNotHere(f"autograd-{name} is written for the host CPU; "
                                    f"{device.name} is not on it")
        return make(k)

    return Workload(f"autograd-{name}", science.peer_params(library, _params(k, n)),
                    ("float64",), _build(n), host_run(function, library), _reference(k),
                    tolerance_scale=10.0, footprint=True)


def workloads() -> list[Workload]:
    """Taylor mode for every order, nested reverse mode for the orders it can afford, then
    the peers."""
    out = [hal_workload("taylor", k) for k in kth.ORDERS]
    out += [hal_workload("reverse", k) for k in REVERSE_ORDERS]
    return out + [peer_workload(name, k) for name, (_, orders, _) in PEERS.items()
                  for k in orders]
