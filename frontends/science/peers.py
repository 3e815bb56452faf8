"""The same algorithms in other array libraries, for side-by-side figures.

A `Peer` is an array library with numpy.fft's transform names (numpy, scipy.fft,
pyfftw, torch, jax): the solvers' step functions (`kdv.etdrk4_step`,
`navier_stokes.if_rk4_step`) run on it unchanged. Every peer is optional: `load(name)`
raises `PeerUnavailable` (a hal.UnsupportedOp, so the benchmark harness records a skip
with the reason) when the library does not import. jax runs in float64
(`jax_enable_x64`), jits the step and drives long runs with `lax.fori_loop`.
"""

from __future__ import annotations

import functools
import os
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import hal

NAMES = ("numpy", "scipy", "pyfftw", "torch", "jax")
_DISTRIBUTIONS = {"numpy": "numpy", "scipy": "scipy", "pyfftw": "pyFFTW", "torch": "torch",
                  "jax": "jax"}
_FFT_NAMES = ("fft", "ifft", "fft2", "rfft", "irfft", "rfft2", "irfft2")
_THREADS = os.cpu_count() or 1


class PeerUnavailable(hal.UnsupportedOp):
    """A peer library that is not installed or does not import here."""


@dataclass
class Peer:
    """An array library: its fft namespace, conversions, and how it compiles and loops."""

    name: str
    version: str
    fft: Any
    asarray: Callable[[np.ndarray], Any]
    numpy: Callable[[Any], np.ndarray]
    compile: Callable[[Callable], Callable] = lambda fn: fn

    @property
    def label(self) -> str:
        """The name with its version, e.g. 'torch 2.13.0'."""
        return f"{self.name} {self.version}"

    def looper(self, step: Callable, steps: int) -> Callable:
        """A function applying `step` `steps` times to its argument (a Python loop)."""

        def run(x):
            for _ in range(steps):
                x = step(x)
            return x

        return run


class _JaxPeer(Peer):
    def looper(self, step, steps):
        """`steps` of `step` inside one lax.fori_loop, jitted once."""
        import jax

        return jax.jit(lambda x: jax.lax.fori_loop(0, steps, lambda i, v: step(v), x))


def _namespace(module, **kwargs) -> types.SimpleNamespace:
    return types.SimpleNamespace(**{n: functools.partial(getattr(module, n), **kwargs)
                                    for n in _FFT_NAMES})


def _numpy() -> Peer:
    return Peer("numpy", np.__version__, np.fft, np.asarray, np.asarray)


def _scipy() -> Peer:
    import scipy
    import scipy.fft

    return Peer("scipy.fft", f"{scipy.__version__} ({_THREADS} workers)",
                _namespace(scipy.fft, workers=_THREADS), np.asarray, np.asarray)


def _pyfftw() -> Peer:
    import pyfftw
    import pyfftw.interfaces.cache
    import pyfftw.interfaces.numpy_fft as nf

    # Plans are measured once and cached; one thread, because FFTW's threads collapsed on
    # the shared cores (1024-point fft: 14 ms with 2 threads, 18 us with one).
    pyfftw.interfaces.cache.enable()
    pyfftw.interfaces.cache.set_keepalive_time(300)
    return Peer("pyfftw", f"{pyfftw.__version__} (1 thread, FFTW_MEASURE)",
                _namespace(nf, threads=1, planner_effort="FFTW_MEASURE"), np.asarray, np.asarray)


def _torch() -> Peer:
    import torch

    # torch's spinning intra-op pool collapses when the cores are shared (measured 8 ms
    # vs 1 ms for a 256^2 irfft2 with 2 threads on 2 loaded cores): one thread.
    torch.set_num_threads(1)
    return Peer("torch", f"{torch.__version__} (1 thread)", torch.fft,
                lambda a: torch.from_numpy(np.array(a)), lambda t: t.numpy())


def _jax() -> Peer:
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    return _JaxPeer("jax", jax.__version__, jnp.fft, jnp.asarray,
                    lambda a: np.asarray(a.block_until_ready()), compile=jax.jit)


_LOADERS = {"numpy": _numpy, "scipy": _scipy, "pyfftw": _pyfftw, "torch": _torch,
            "jax": _jax}


@functools.cache
def load(name: str) -> Peer:
    """The peer `name` (one of NAMES); PeerUnavailable with the reason if it cannot load."""
    if name not in _LOADERS:
        raise PeerUnavailable(f"peer {name!r} is unknown; peers: {', '.join(NAMES)}")
    try:
        return _LOADERS[name]()
    except ImportError as exc:
        raise PeerUnavailable(
            f"peer {name} is not importable ({exc}); install it (pip install {name}) to "
            "measure it"
        ) from None


def version_label(name: str) -> str:
    """'name version' from the installed distribution, without importing it (cheap)."""
    from importlib import metadata

    try:
        return f"{name} {metadata.version(_DISTRIBUTIONS.get(name, name))}"
    except metadata.PackageNotFoundError:
        return f"{name} unavailable (not installed)"

