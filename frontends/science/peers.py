"""The same algorithms in other array libraries, for side-by-side figures, on the device
under test.

A `Peer` is an array library with numpy.fft's transform names and a GEMM (numpy,
scipy.fft, pyfftw, torch, jax, cupy; pyvkfft has the complex transforms only, pyclblast
the GEMM only): the solvers' step functions (`kdv.etdrk4_step`,
`navier_stokes.if_rk4_step`) run on it unchanged. jax runs in float64
(`jax_enable_x64`), jits the step and drives long runs with `lax.fori_loop`.

A peer declares the device kinds it runs on (`PeerSpec.loaders`): "cpu" (the host CPU),
"cuda" (an NVIDIA GPU: torch, jax, cupy calling cuFFT and cuBLAS), "opencl" (VkFFT
through pyvkfft, CLBlast through pyclblast), or a vendor backend's name. A hal device's
kinds (`device_kinds`) are its backend's name, and "cpu" too where its tensors live in
host memory (the host computes: PoCL, ONNX Runtime's CPU provider, TVM's llvm target).
`place(name, device)` loads the peer on the device under test, or raises (a
hal.UnsupportedOp, so the harness records a skip with the reason) `PeerNotHere` when it
runs on other kinds and `PeerUnavailable` when its library does not import, saying how to
install it.

A vendor registers its own native stack as a peer through the entry point group
`hal.peers`: the entry point names a `PeerSpec` whose loaders are keyed by its backend's
name (see docs/bring-up.md).
"""

from __future__ import annotations

import functools
import operator
import os
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import metadata
from typing import Any

import numpy as np

import hal

ENTRY_POINT_GROUP = "hal.peers"
_FFT_NAMES = ("fft", "ifft", "fft2", "rfft", "irfft", "rfft2", "irfft2")
_THREADS = os.cpu_count() or 1


class PeerUnavailable(hal.UnsupportedOp):
    """A peer library that is not installed or does not import here."""


class PeerNotHere(hal.UnsupportedOp):
    """A peer that does not run on the kind of device under test."""


class PeerMeasuredElsewhere(PeerNotHere):
    """A peer that would compute on the host CPU for a device whose tensors live in host
    memory, where a run measures the host CPU's peers once, under another device
    (`measure_host_peers_under`)."""


_host_peers_under: str | None = None


def measure_host_peers_under(device_name: str | None) -> None:
    """Measure peers that compute on the host CPU only under `device_name` (a run's cpu
    device): elsewhere they raise PeerMeasuredElsewhere, and the run copies that device's
    figure (the same computation on the same CPU). None measures them on every device."""
    global _host_peers_under
    _host_peers_under = device_name


def on_host(device: hal.Device, what: str) -> None:
    """Refuse `what`, a peer computing on the host CPU for `device`, when this process
    measures the host CPU's peers under another device (PeerMeasuredElsewhere)."""
    if _host_peers_under and device.name != _host_peers_under:
        raise PeerMeasuredElsewhere(f"{what} computes on the host CPU, measured under "
                                    f"{_host_peers_under} in this run")


@dataclass
class Peer:
    """An array library placed on one device: its fft namespace, conversions, and how it
    compiles and loops.

    `asarray` takes a host array onto the peer's device and `numpy` brings one back;
    `matmul` is its GEMM (`a @ b`; None for a peer without one).
    `take` (a hal tensor -> the peer's array, sharing memory) and `give` (the peer's
    array, once its work is done -> a hal tensor on a device) keep a device peer's data on
    its device; None goes through host arrays (the host peers).
    """

    name: str
    version: str
    fft: Any
    asarray: Callable[[np.ndarray], Any]
    numpy: Callable[[Any], np.ndarray]
    compile: Callable[[Callable], Callable] = lambda fn: fn
    device: str = "host CPU"
    take: Callable[[hal.Tensor], Any] | None = None
    give: Callable[[Any, hal.Device], hal.Tensor] | None = None
    matmul: Callable[[Any, Any], Any] | None = operator.matmul

    @property
    def label(self) -> str:
        """The name with its version, e.g. 'torch 2.13.0'."""
        return f"{self.name} {self.version}"

    def from_hal(self, tensor: hal.Tensor) -> Any:
        """A hal tensor as this peer's array (on its device, without a copy where it can)."""
        return self.asarray(tensor.numpy()) if self.take is None else self.take(tensor)

    def to_hal(self, array: Any, device: hal.Device) -> hal.Tensor:
        """The peer's finished result as a hal tensor (on `device` for a device peer, on the
        host for a host peer, where it was computed)."""
        return hal.asarray(self.numpy(array)) if self.give is None else self.give(array, device)

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


@dataclass(frozen=True)
class PeerSpec:
    """A peer library: how to load it on each device kind it runs on (kind -> a function
    of the hal device giving the Peer), the distribution its version is read from, and
    how to install it."""

    name: str
    distribution: str | tuple[str, ...]
    loaders: Mapping[str, Callable[[hal.Device], Peer]]
    install: str

    @property
    def kinds(self) -> tuple[str, ...]:
        """The device kinds it runs on."""
        return tuple(self.loaders)


def _namespace(module, **kwargs) -> types.SimpleNamespace:
    return types.SimpleNamespace(**{n: functools.partial(getattr(module, n), **kwargs)
                                    for n in _FFT_NAMES})


def _numpy(device: hal.Device) -> Peer:
    return Peer("numpy", np.__version__, np.fft, np.asarray, np.asarray)


def _scipy(device: hal.Device) -> Peer:
    import scipy
    import scipy.fft

    return Peer("scipy.fft", f"{scipy.__version__} ({_THREADS} workers)",
                _namespace(scipy.fft, workers=_THREADS), np.asarray, np.asarray)


def _pyfftw(device: hal.Device) -> Peer:
    import pyfftw
    import pyfftw.interfaces.cache
    import pyfftw.interfaces.numpy_fft as nf

    # Plans are measured once and cached; one thread, because FFTW's threads collapsed on
    # the shared cores (1024-point fft: 14 ms with 2 threads, 18 us with one).
    pyfftw.interfaces.cache.enable()
    pyfftw.interfaces.cache.set_keepalive_time(300)
    return Peer("pyfftw", f"{pyfftw.__version__} (1 thread, FFTW_MEASURE)",
                _namespace(nf, threads=1, planner_effort="FFTW_MEASURE"), np.asarray, np.asarray)


def _torch(device: hal.Device) -> Peer:
    import torch

    # torch's spinning intra-op pool collapses when the cores are shared (measured 8 ms
    # vs 1 ms for a 256^2 irfft2 with 2 threads on 2 loaded cores): one thread.
    torch.set_num_threads(1)
    return Peer("torch", f"{torch.__version__} (1 thread)", torch.fft,
                lambda a: torch.from_numpy(np.array(a)), lambda t: t.numpy())


def _torch_cuda(device: hal.Device) -> Peer:
    import torch

    if not torch.cuda.is_available():
        raise PeerUnavailable(f"torch {torch.__version__} sees no CUDA GPU (a CPU-only build?); "
                              "install a CUDA build: pip install torch --index-url "
                              "https://download.pytorch.org/whl/cu126")
    gpu = torch.device("cuda", device.index)

    def give(t, target: hal.Device) -> hal.Tensor:
        torch.cuda.synchronize(gpu)
        return hal.from_dlpack(t, device=target)

    return Peer("torch", f"{torch.__version__} (CUDA {torch.version.cuda}, cuFFT)", torch.fft,
                lambda a: torch.as_tensor(np.asarray(a), device=gpu), lambda t: t.cpu().numpy(),
                device=f"{device.name} ({torch.cuda.get_device_name(gpu)})",
                take=torch.from_dlpack, give=give)


def _jax(device: hal.Device) -> Peer:
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    cpu = jax.devices("cpu")[0]  # where a GPU build of jax defaults to its GPU
    return _JaxPeer("jax", jax.__version__, jnp.fft, lambda a: jax.device_put(np.asarray(a), cpu),
                    lambda a: np.asarray(a.block_until_ready()), compile=jax.jit)


def _jax_gpu(device: hal.Device) -> Peer:
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    gpus = [d for d in jax.devices() if d.platform == "gpu"]
    if len(gpus) <= device.index:
        raise PeerUnavailable(f"jax {jax.__version__} sees {len(gpus)} GPUs (backend "
                              f"{jax.default_backend()}); install its CUDA build: "
                              'pip install "jax[cuda12]"')
    gpu = gpus[device.index]
    return _JaxPeer("jax", f"{jax.__version__} ({gpu.platform})", jnp.fft,
                    lambda a: jax.device_put(np.asarray(a), gpu),
                    lambda a: np.asarray(a.block_until_ready()), compile=jax.jit,
                    device=f"{device.name} ({gpu.device_kind})", take=jnp.from_dlpack,
                    give=lambda a, target: hal.from_dlpack(a.block_until_ready(), device=target))


def _cupy(device: hal.Device) -> Peer:
    import cupy
    import cupy.fft

    gpu = cupy.cuda.Device(device.index)

    def asarray(a):
        with gpu:
            return cupy.asarray(np.asarray(a))

    def give(a, target: hal.Device) -> hal.Tensor:
        cupy.cuda.get_current_stream().synchronize()
        return hal.from_dlpack(a, device=target)

    cuda = cupy.cuda.runtime.runtimeGetVersion()
    return Peer("cupy", f"{cupy.__version__} (CUDA {cuda // 1000}.{cuda % 1000 // 10}, "
                "cuFFT, cuBLAS)", cupy.fft, asarray, cupy.asnumpy,
                device=f"{device.name} ({_cuda_name(cupy, device.index)})",
                take=cupy.from_dlpack, give=give)


def _cuda_name(cupy, index: int) -> str:
    """The name of CUDA device `index`, as the driver gives it."""
    return cupy.cuda.runtime.getDeviceProperties(index)["name"].decode()


def _vkfft(device: hal.Device) -> Peer:
    import pyopencl.array as cla
    import pyvkfft
    from pyvkfft.opencl import VkFFTApp

    queue = device.queue  # hal's OpenCL device: its in-order profiling queue

    @functools.cache
    def app(shape: tuple[int, ...], dtype: np.dtype, ndim: int) -> VkFFTApp:
        # norm=1: the inverse divides by the size, as numpy's does
        return VkFFTApp(shape, dtype, queue, ndim=ndim, inplace=False, norm=1)

    def transform(ndim: int, inverse: bool):
        def run(x):
            out = cla.empty_like(x)
            plan = app(x.shape, x.dtype, ndim)
            (plan.ifft if inverse else plan.fft)(x, out)
            return out

        return run

    fft = types.SimpleNamespace(fft=transform(1, False), ifft=transform(1, True),
                                fft2=transform(2, False), ifft2=transform(2, True))
    return Peer("pyvkfft", f"{pyvkfft.__version__} (VkFFT, OpenCL)", fft,
                lambda a: cla.to_device(queue, np.ascontiguousarray(a)), lambda a: a.get(),
                device=f"{device.name} ({queue.device.name.strip()})",
                take=lambda t: t.native, give=_opencl_give, matmul=None)


def _opencl_give(a, target: hal.Device) -> hal.Tensor:
    """A pyopencl array, once its queue has finished, as a hal tensor on `target`."""
    a.queue.finish()
    return hal.Tensor.wrap(a, target)


def _clblast(device: hal.Device) -> Peer:
    import pyclblast
    import pyopencl.array as cla

    queue = device.queue  # hal's OpenCL device: its in-order profiling queue

    def matmul(a, b):
        c = cla.empty(queue, (a.shape[0], b.shape[1]), a.dtype)
        pyclblast.gemm(queue, a.shape[0], b.shape[1], a.shape[1], a, b, c,
                       a_ld=a.shape[1], b_ld=b.shape[1], c_ld=b.shape[1])
        return c

    return Peer("pyclblast", f"{_installed('pyclblast')} (CLBlast, OpenCL)", None,
                lambda a: cla.to_device(queue, np.ascontiguousarray(a)), lambda a: a.get(),
                device=f"{device.name} ({queue.device.name.strip()})",
                take=lambda t: t.native, give=_opencl_give, matmul=matmul)


def _installed(distribution: str) -> str:
    """A distribution's installed version (for libraries without __version__)."""
    return metadata.version(distribution)


BUILTIN = (
    PeerSpec("numpy", "numpy", {"cpu": _numpy}, "pip install numpy"),
    PeerSpec("scipy", "scipy", {"cpu": _scipy}, "pip install scipy"),
    PeerSpec("pyfftw", "pyFFTW", {"cpu": _pyfftw}, 'pip install -e ".[seed-peers]"'),
    PeerSpec("torch", "torch", {"cpu": _torch, "cuda": _torch_cuda},
             "pip install torch (on a GPU, a CUDA build)"),
    PeerSpec("jax", "jax", {"cpu": _jax, "cuda": _jax_gpu},
             'pip install -e ".[seed-peers]" (GPUs: pip install "jax[cuda12]")'),
    PeerSpec("cupy", ("cupy-cuda12x", "cupy-cuda13x", "cupy-cuda11x", "cupy"),
             {"cuda": _cupy}, "pip install cupy-cuda12x"),
    PeerSpec("pyvkfft", "pyvkfft", {"opencl": _vkfft},
             'pip install -e ".[vkfft]" (it builds against the OpenCL headers: apt install '
             "opencl-headers ocl-icd-opencl-dev)"),
    PeerSpec("pyclblast", "pyclblast", {"opencl": _clblast},
             'pip install -e ".[clblast]" (it builds against CLBlast: apt install '
             "libclblast-dev)"),
)
# The peers with arrays and arithmetic (the solvers run on them); pyvkfft only transforms.
NAMES = ("numpy", "scipy", "pyfftw", "torch", "jax", "cupy")


@functools.cache
def registered() -> dict[str, PeerSpec]:
    """Every peer: the built-in ones and those of the `hal.peers` entry points, by name (a
    broken entry point is left out with a warning naming it)."""
    specs = {s.name: s for s in BUILTIN}
    for entry in metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            spec = entry.load()
        except Exception as exc:  # a vendor's broken package must not stop the others
            import warnings

            warnings.warn(f"peer entry point {entry.name} ({entry.value}) does not load: "
                          f"{type(exc).__name__}: {exc}", stacklevel=2)
            continue
        specs[spec.name] = spec
    return specs


def vendor_names() -> tuple[str, ...]:
    """The peers registered through the `hal.peers` entry points."""
    return tuple(n for n in registered() if n not in {s.name for s in BUILTIN})


def fft_names() -> tuple[str, ...]:
    """The peers of the FFT rows: the array libraries, VkFFT and every vendor's peer."""
    return (*NAMES, "pyvkfft", *vendor_names())


def gemm_names() -> tuple[str, ...]:
    """The peers of the GEMM rows of device-sized suites: the GPU libraries (cuBLAS through
    cupy, torch, jax), CLBlast and every vendor's peer."""
    return ("cupy", "torch", "jax", "pyclblast", *vendor_names())


def spec(name: str) -> PeerSpec:
    """The registered peer `name`; PeerUnavailable naming the known ones."""
    specs = registered()
    if name not in specs:
        raise PeerUnavailable(f"peer {name!r} is unknown; peers: {', '.join(specs)}")
    return specs[name]


def device_kinds(device: hal.Device) -> tuple[str, ...]:
    """The kinds of device a hal device is, for placing peers: its backend's name, and
    "cpu" where its tensors live in host memory (the host CPU computes)."""
    backend = device.backend.name
    on_host = device.capabilities.memory == "host"
    return (backend, "cpu") if on_host and backend != "cpu" else (backend,)


def place(name: str, device: hal.Device) -> Peer:
    """The peer `name` loaded on `device` (on the first of the device's kinds it runs on);
    PeerNotHere when it runs on none of them, PeerUnavailable when it does not import."""
    peer_spec = spec(name)
    kinds = device_kinds(device)
    kind = next((k for k in kinds if k in peer_spec.loaders), None)
    if kind is None:
        raise PeerNotHere(f"peer {name} runs on {' and '.join(peer_spec.kinds)} devices; "
                          f"{device.name} is {' and '.join(kinds)}")
    if kind == "cpu":
        on_host(device, f"peer {name}")
    return _loaded(name, kind, device)


@functools.cache
def _loaded(name: str, kind: str, device: hal.Device) -> Peer:
    peer_spec = spec(name)
    try:
        return peer_spec.loaders[kind](device)
    except ImportError as exc:
        raise PeerUnavailable(f"peer {name} is not importable ({exc}); to measure it: "
                              f"{peer_spec.install}") from None


def load(name: str) -> Peer:
    """The peer `name` on the host CPU; PeerUnavailable with the reason if it cannot load
    (PeerNotHere for a peer that does not run on a CPU)."""
    return place(name, hal.device("cpu"))


def version_label(name: str) -> str:
    """'name version' from the installed distribution, without importing it (cheap)."""
    try:
        distributions = spec(name).distribution
    except PeerUnavailable:
        distributions = name
    for distribution in (distributions,) if isinstance(distributions, str) else distributions:
        try:
            return f"{name} {metadata.version(distribution)}"
        except metadata.PackageNotFoundError:
            continue
    return f"{name} unavailable (not installed)"
