"""Jit suite: the same hal code run op by op (eager) and through hal.jit, beside compiled peers.

Each case is a hal workload `<case>[eager]` and `<case>[jit]` (params carry the mode),
run on every backend (a backend without an op the case needs, such as TVM for complex
data and FFTs, is skipped with the reason), and the same algorithm in the peers
`<case>[numpy]` (vectorised numpy), `<case>[jax]` (jax.jit) and `<case>[torch]`
(torch.compile), placed on the device under test where the peer runs there
(`peers.place`: torch and jax on a CUDA GPU too; numpy on the host CPU, which is the
device of the cpu backend and of host-memory devices such as PoCL); elsewhere, or where
a peer does not import, skipped with the reason. A peer's function takes host arrays and
gives a host array back (on a GPU the two copies are in its time). Jitted functions are
built once per (device, dtype), so the timing measures replay, not tracing.

Cases, each checked against its reference before timing:
- `kdv_kt`: 200 ETDRK4 steps of the Kassam-Trefethen KdV problem (N=256, float64; the
  step is jitted, the loop is Python), against the exact 2-soliton in the max norm;
  items are steps, and `full_steps` the steps of the whole solve. On a backend that
  records jitted graphs as device graphs (cuda, opencl), `kdv_kt[jit-uncaptured]` times the same
  step with capture off: captured against replayed.
- `navier_stokes`: 5 IF-RK4 steps of Kolmogorov flow on 256^2, against numpy in complex128.
- `taylor`: f^(k) of sin(x) exp(-x^2) at 10^4 points by Taylor mode, k = 10 and 16,
  against the Hermite closed form (jax: jax.experimental.jet; numpy: the recurrences).
- `transformer_block`: a post-norm block (q/k/v projections, 4-head scaled dot-product
  attention, output projection, residual, layer_norm; linear-gelu(tanh)-linear,
  residual, layer_norm), batch 8, 128 tokens, width 256, float32, against numpy.
- `fft_pipeline`: |ifft(fft(x) * h)| over 64 batched 1024-point complex transforms.
- `chain`: 200 subtractions of 8-element float64 vectors, each value read by the next two
  so that nothing fuses: the cost of replaying one node (items are nodes), beside numpy
  allocating (`[numpy]`) and writing into preallocated buffers (`[numpy-out]`, what the
  cpu kernel does).

Compile time: `kdv_step[jit]` (one ETDRK4 step, on cpu) and `small_fused[jit]`
(exp(2x + y) - sin(y) y over 4096 float32 elements, on tvm) record their first call in a
fresh process, with an empty cache directory and with the disk caches a first process
left (`benchmarks.first_call`), beside the replay the samples time. `jit_cache` (cpu)
checks that calls with the shapes seen before do not trace again (`Jitted.traces`).
The report's "hal.jit" section puts these side by side.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

import hal
from benchmarks.suites import science
from benchmarks.workload import Case, NotMeasuredHere, Workload, only_on, random_array
from frontends.autograd import kth_derivative as kth
from frontends.science import kdv, peers
from frontends.science import navier_stokes as ns

MODES = {"eager": lambda fn: fn, "jit": hal.jit}
UNCAPTURED = "jit-uncaptured"  # hal.jit(capture=False): the replay a device graph replaces
PEER_MODES = {"numpy": "numpy", "jax": "jax.jit", "torch": "torch.compile", "cupy": "cupy"}
PEERS = ("numpy", "jax", "torch")  # every case's; the solvers' cases also run in cupy


@dataclass(frozen=True)
class JitCase:
    """One computation in hal and in the peers, with its inputs and reference.

    `make(device, dtype, compile)` returns the hal function of device tensors, with its
    step (or whole body) passed through `compile` (identity or hal.jit); `dtype` is the
    first input's. `peer(name, dtype, device)` returns the function of host arrays of peer
    `name` placed on the device under test (numpy dtype of the first input), compiled
    once; a case without peers has none.
    """

    name: str
    params: dict
    dtypes: tuple[str, ...]
    build: Callable[[np.dtype], Case]
    reference: Callable[..., np.ndarray]
    make: Callable
    peer: Callable | None = None
    tolerance_scale: float = 1.0
    uncaptured: bool = False  # also `<name>[jit-uncaptured]` where the backend captures

    def workloads(self, peer_names=PEERS) -> list[Workload]:
        """`<name>[eager]`, `<name>[jit]`, `<name>[jit-uncaptured]` if the case asks for
        it, then `<name>[<peer>]` for each peer."""
        out = [self.hal_workload(mode) for mode in MODES]
        if self.uncaptured:
            out.append(self.uncaptured_workload())
        return out + [self.peer_workload(name) for name in peer_names]

    def workload(self, label: str, params: dict, run: Callable) -> Workload:
        """`<name>[<label>]` with these params and run, the case's inputs and reference."""
        return Workload(f"{self.name}[{label}]", params, self.dtypes, self.build, run,
                        self.reference, tolerance_scale=self.tolerance_scale)

    def hal_workload(self, mode: str) -> Workload:
        """The hal function in `mode` ("eager" or "jit"), built once per (device, dtype)."""
        made = functools.cache(lambda device, dtype: self.make(device, dtype, MODES[mode]))

        def run(*tensors: hal.Tensor) -> hal.Tensor:
            return made(tensors[0].device, tensors[0].dtype)(*tensors)

        return self.workload(mode, {**self.params, "mode": mode}, run)

    def uncaptured_workload(self) -> Workload:
        """hal.jit with capture off, on backends that record jitted graphs as device graphs
        (Backend.capture): beside `[jit]`, what the capture saves per call."""
        made = functools.cache(lambda device, dtype: self.make(
            device, dtype, functools.partial(hal.jit, capture=False)))

        def run(*tensors: hal.Tensor) -> hal.Tensor:
            backend = tensors[0].device.backend
            if type(backend).capture is hal.Backend.capture:
                raise NotMeasuredHere(f"{self.name}[{UNCAPTURED}] is measured where the "
                                      "backend captures jitted graphs (Backend.capture); "
                                      f"{backend.name} does not, so [jit] is the same")
            return made(tensors[0].device, tensors[0].dtype)(*tensors)

        return self.workload(UNCAPTURED, {**self.params, "mode": UNCAPTURED}, run)

    def peer_workload(self, name: str) -> Workload:
        """The peer `name` (a key of PEER_MODES) on the host."""
        params = science.peer_params(name, {**self.params, "mode": PEER_MODES[name]})
        run = host_run(lambda device, dtype: self.peer(name, dtype, device), name)
        return replace(self.workload(name, params, run), facts=science.peer_facts(name))


def host_run(make: Callable[[hal.Device, np.dtype], Callable],
             peer: str = "numpy") -> Callable[..., hal.Tensor]:
    """A workload's run that computes with `make(device, dtype)`'s function of host arrays
    (built once per device under test and dtype of the first input) where the library
    `peer` runs on that device (`peers.place`); skipped with the reason elsewhere. A device
    peer's function takes its inputs from the host and gives its output back: the copies
    are in its time."""
    made = functools.cache(make)

    def run(*tensors: hal.Tensor) -> hal.Tensor:
        device = tensors[0].device
        peers.place(peer, device)
        arrays = [t.numpy() for t in tensors]
        return hal.asarray(np.asarray(made(device, arrays[0].dtype)(*arrays)))

    return run


def compiling_peer(name: str, device: hal.Device) -> peers.Peer:
    """Peer `name` on `device` whose `compile` is its compiler: identity (numpy, cupy),
    jax.jit, torch.compile."""
    peer = peers.place(name, device)
    if name == "torch":
        import torch

        return replace(peer, compile=torch.compile)
    return peer


# -- KdV ----------------------------------------------------------------------------------------
def kdv_case(steps: int = science.KDV_STEPS) -> JitCase:
    """`steps` ETDRK4 steps of Kassam-Trefethen from the exact u(0) (the step is compiled)."""
    problem = science.kdv_problem(steps)

    def make(device, dtype, compile):
        solver = kdv.KdVSolver(problem, dtype, device)
        step = compile(lambda v: kdv.etdrk4_step(hal.fft, solver.coeffs, v, problem.n))

        def run(u0: hal.Tensor) -> hal.Tensor:
            v = hal.fft.rfft(u0)
            for _ in range(steps):
                v = step(v)
            return hal.fft.irfft(v, problem.n)

        return run

    def peer(name, dtype, device):
        return kdv.peer_runner(compiling_peer(name, device), problem, dtype, steps)

    # the max-norm error limit is 1e-6 in float64 (the published figure)
    params = {"N": problem.n, "steps": steps, "dt": problem.dt,
              "full_steps": kdv.KASSAM_TREFETHEN.steps}
    return JitCase("kdv_kt", params, ("float64",), science.kdv_build(problem, steps),
                   lambda u0: problem.exact(problem.t_end), make, peer, tolerance_scale=1e4,
                   uncaptured=True)


def kdv_step_case() -> JitCase:
    """One ETDRK4 step of Kassam-Trefethen from the rfft of the exact u(0) (N=256, float64):
    the subject of the compile-time figure on cpu."""
    problem = kdv.KASSAM_TREFETHEN

    def build(dtype: np.dtype) -> Case:
        n = problem.n
        return Case([np.fft.rfft(problem.exact(0.0))], flops=4 * 2 * 2.5 * n * math.log2(n),
                    items=1)

    def make(device, dtype, compile):
        solver = kdv.KdVSolver(problem, "float64", device)
        return compile(lambda v: kdv.etdrk4_step(hal.fft, solver.coeffs, v, problem.n))

    coefficients = kdv.coefficients(problem)
    return JitCase("kdv_step", {"N": problem.n, "dt": problem.dt}, ("complex128",), build,
                   lambda v: kdv.etdrk4_step(np.fft, coefficients, v, problem.n), make)


# -- Navier-Stokes ------------------------------------------------------------------------------
def ns_case(n: int = 256, steps: int = 5) -> JitCase:
    """`steps` IF-RK4 steps of Kolmogorov flow on n x n (the step is compiled)."""

    def solver(dtype, device=None) -> ns.NavierStokes2D:
        return ns.NavierStokes2D(n, science.NS_DT, science.NS_VISCOSITY,
                                 ns.kolmogorov_forcing(n), dtype, device)

    def real(dtype) -> str:
        return "float32" if np.dtype(dtype) == np.complex64 else "float64"

    def make(device, dtype, compile):
        s = solver(real(dtype), device)
        step = compile(lambda w: ns.if_rk4_step(hal.fft, s.coeffs, w, s.dt, n))
        return functools.partial(_loop, step, steps)

    def peer(name, dtype, device):
        p = compiling_peer(name, device)
        step = solver(real(dtype), "cpu").peer_step(p)
        return lambda w: p.numpy(_loop(step, steps, p.asarray(w)))

    def build(dtype: np.dtype) -> Case:
        state = solver("float64", "cpu").transform(ns.random_vorticity(n)).numpy()
        flops = steps * 20 * 2.5 * n * n * math.log2(n * n)
        return Case([state.astype(np.complex64 if dtype == np.float32 else np.complex128)],
                     flops=flops, items=steps)

    def reference(state: np.ndarray) -> np.ndarray:
        return _loop(solver("float64", "cpu").peer_step(peers.load("numpy")), steps, state)

    params = {"N": n, "steps": steps, "dt": science.NS_DT, "nu": science.NS_VISCOSITY}
    return JitCase("navier_stokes", params, science.REALS, build, reference, make, peer)


def _loop(step: Callable, steps: int, x):
    """step applied `steps` times to x."""
    for _ in range(steps):
        x = step(x)
    return x


# -- Taylor mode --------------------------------------------------------------------------------
def taylor_numpy(x: np.ndarray, k: int) -> np.ndarray:
    """f^(k)(x) for f = sin(x) exp(-x^2) by Taylor mode in numpy.

    A series is the list of its Taylor coefficients (arrays) that may be nonzero: the
    input x + t has two, so products and the exp, sin and cos recurrences skip the zero
    terms, as hal's Taylor mode does; everything is vectorised over the points.
    """

    def product(a, b):
        return [sum(a[i] * b[m - i] for i in range(max(0, m - len(b) + 1), min(m, len(a) - 1) + 1))
                for m in range(min(k + 1, len(a) + len(b) - 1))]

    def integrated(u, z, m):  # coefficient m >= 1 of y where y' = u' z
        return sum(i * u[i] * z[m - i] for i in range(1, min(m, len(u) - 1) + 1)) / m

    u = [x, np.ones_like(x)][: k + 1]
    h = [-t for t in product(u, u)]
    e, s, c = [np.exp(h[0])], [np.sin(x)], [np.cos(x)]
    for m in range(1, k + 1):  # exp: e' = h' e; sin: s' = u' c; cos: c' = -u' s
        e.append(integrated(h, e, m))
        s.append(integrated(u, c, m))
        c.append(-integrated(u, s, m))
    return product(s, e)[k] * math.factorial(k)


def taylor_case(k: int, n: int = kth.POINTS) -> JitCase:
    """f^(k) of sin(x) exp(-x^2) at n points by hal Taylor mode (the whole pass compiled)."""

    def build(dtype: np.dtype) -> Case:
        return Case([kth.points(n, dtype)], items=n)

    def make(device, dtype, compile):
        return compile(kth.hal_kth("taylor", k))

    def peer(name, dtype, device):
        if name == "numpy":
            return lambda x: taylor_numpy(x, k)
        peers.place(name, device)  # not installed: skipped with that reason
        if name == "jax":
            return kth.jax_kth(k)
        raise hal.UnsupportedOp(
            f"taylor k={k} in {name}: torch has no Taylor mode and torch.compile does not "
            "compile nested autograd (double backward); the autograd suite measures torch's "
            "eager nested autograd")

    return JitCase("taylor", {"order": k, "n": n, "function": "sin*exp(-x^2)"},
                   ("float64", "float32"), build,
                   lambda x: kth.hermite_derivative(np.asarray(x, np.float64), k),
                   make, peer, tolerance_scale=10.0)


# -- transformer block --------------------------------------------------------------------------
WEIGHTS = ("wq", "wk", "wv", "wo", "w1", "b1", "w2", "b2", "g1", "c1", "g2", "c2")


def block_hal(x, wq, wk, wv, wo, w1, b1, w2, b2, g1, c1, g2, c2, heads: int = 4):
    """Post-norm transformer block in hal ops (x: batch, tokens, width)."""
    b, t, d = x.shape

    def split(w):
        return hal.permute_dims(hal.reshape(x @ w, (b, t, heads, d // heads)), (0, 2, 1, 3))

    a = hal.nn.scaled_dot_product_attention(split(wq), split(wk), split(wv))
    a = hal.reshape(hal.permute_dims(a, (0, 2, 1, 3)), (b, t, d))
    h = hal.nn.layer_norm(x + a @ wo, g1, c1)
    mlp = hal.nn.linear(hal.nn.linear(h, w1, b1, activation="gelu_tanh"), w2, b2)
    return hal.nn.layer_norm(h + mlp, g2, c2)


def block_numpy(xp, x, wq, wk, wv, wo, w1, b1, w2, b2, g1, c1, g2, c2, heads: int = 4):
    """The same block written with a numpy-like namespace `xp` (numpy or jax.numpy)."""
    b, t, d = x.shape

    def split(w):
        return xp.transpose(xp.reshape(x @ w, (b, t, heads, d // heads)), (0, 2, 1, 3))

    def layer_norm(y, g, c):
        mean = xp.mean(y, axis=-1, keepdims=True)
        var = xp.mean((y - mean) ** 2, axis=-1, keepdims=True)
        return (y - mean) / xp.sqrt(var + 1e-5) * g + c

    def gelu_tanh(y):
        return 0.5 * y * (1 + xp.tanh(math.sqrt(2 / math.pi) * (y + 0.044715 * y**3)))

    q, k, v = split(wq), split(wk), split(wv)
    scores = q @ xp.swapaxes(k, -1, -2) * (1 / math.sqrt(d // heads))
    p = xp.exp(scores - xp.max(scores, axis=-1, keepdims=True))
    a = (p / xp.sum(p, axis=-1, keepdims=True)) @ v
    a = xp.reshape(xp.transpose(a, (0, 2, 1, 3)), (b, t, d))
    h = layer_norm(x + a @ wo, g1, c1)
    return layer_norm(h + gelu_tanh(h @ w1 + b1) @ w2 + b2, g2, c2)


def block_torch(x, wq, wk, wv, wo, w1, b1, w2, b2, g1, c1, g2, c2, heads: int = 4):
    """The same block with torch.nn.functional."""
    import torch.nn.functional as F

    b, t, d = x.shape

    def split(w):
        return (x @ w).reshape(b, t, heads, d // heads).transpose(1, 2)

    a = F.scaled_dot_product_attention(split(wq), split(wk), split(wv))
    h = F.layer_norm(x + a.transpose(1, 2).reshape(b, t, d) @ wo, (d,), g1, c1, eps=1e-5)
    mlp = F.gelu(h @ w1 + b1, approximate="tanh") @ w2 + b2
    return F.layer_norm(h + mlp, (d,), g2, c2, eps=1e-5)


def _weight(name: str, shape: tuple, seed: int) -> np.ndarray:
    """Matrices scaled by 1/sqrt(fan-in), biases near 0, layer-norm gains near 1 (float64)."""
    values = random_array(shape, np.float64, seed)
    if name.startswith("w"):
        return values / math.sqrt(shape[0])
    return 0.1 * values + (1.0 if name.startswith("g") else 0.0)


def transformer_case(batch: int = 8, tokens: int = 128, width: int = 256,
                     heads: int = 4) -> JitCase:
    """One post-norm transformer block (MLP hidden width 4 x width) in float32."""
    hidden = 4 * width
    shapes = {"wq": (width, width), "wk": (width, width), "wv": (width, width),
              "wo": (width, width), "w1": (width, hidden), "b1": (hidden,),
              "w2": (hidden, width), "b2": (width,), "g1": (width,), "c1": (width,),
              "g2": (width,), "c2": (width,)}

    def build(dtype: np.dtype) -> Case:
        x = random_array((batch, tokens, width), dtype, 0)
        weights = [_weight(name, shapes[name], seed) for seed, name in enumerate(WEIGHTS, 1)]
        matmul_flops = 2 * batch * tokens * (4 * width * width + 2 * width * hidden)
        attention_flops = 4 * batch * tokens * tokens * width
        return Case([x, *[w.astype(dtype) for w in weights]],
                    flops=matmul_flops + attention_flops, items=batch * tokens)

    def make(device, dtype, compile):
        return compile(functools.partial(block_hal, heads=heads))

    def peer(name, dtype, device):
        p = compiling_peer(name, device)
        if name == "torch":
            fn = p.compile(functools.partial(block_torch, heads=heads))
        elif name == "jax":
            import jax.numpy as jnp

            fn = p.compile(functools.partial(block_numpy, jnp, heads=heads))
        else:
            fn = functools.partial(block_numpy, np, heads=heads)
        return lambda *arrays: p.numpy(fn(*[p.asarray(a) for a in arrays]))

    params = {"batch": batch, "tokens": tokens, "width": width, "heads": heads}
    return JitCase("transformer_block", params, ("float32",), build,
                   functools.partial(block_numpy, np, heads=heads), make, peer,
                   tolerance_scale=10.0)


# -- FFT pipeline -------------------------------------------------------------------------------
def fft_pipeline(fft, x, h):
    """|ifft(fft(x) * h)| along the last axis, with an fft namespace (hal.fft, numpy.fft, ...)."""
    return abs(fft.ifft(fft.fft(x) * h))


def fft_case(batch: int = 64, n: int = 1024) -> JitCase:
    """The pipeline over `batch` complex `n`-point signals and one complex filter."""

    def build(dtype: np.dtype) -> Case:
        flops = 2 * 5.0 * n * math.log2(n) * batch
        return Case([random_array((batch, n), dtype, 0), random_array((n,), dtype, 1)],
                    flops=flops, items=batch)

    def make(device, dtype, compile):
        return compile(functools.partial(fft_pipeline, hal.fft))

    def peer(name, dtype, device):
        p = compiling_peer(name, device)
        fn = p.compile(functools.partial(fft_pipeline, p.fft))
        return lambda x, h: p.numpy(fn(p.asarray(x), p.asarray(h)))

    return JitCase("fft_pipeline", {"batch": batch, "N": n}, ("complex64", "complex128"),
                   build, functools.partial(fft_pipeline, np.fft), make, peer,
                   tolerance_scale=10.0)


# -- replay cost per node ------------------------------------------------------------------------
def chain(a, b, ops: int):
    """`ops` subtractions x[i+2] = x[i+1] - x[i]: each value is read by the next two."""
    for _ in range(ops):
        a, b = b, b - a
    return b


def chain_into_buffers(ops: int, size: int) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """`chain` in numpy writing each result into one of three buffers allocated once."""
    buffers = [np.empty(size) for _ in range(3)]

    def run(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        for i in range(ops):
            a, b = b, np.subtract(b, a, out=buffers[i % 3])
        return b

    return run


def chain_case(ops: int = 200, size: int = 8) -> JitCase:
    """A chain of `ops` tiny subtractions (nothing fuses: every node runs on its own)."""

    def build(dtype: np.dtype) -> Case:
        return Case([np.linspace(0.0, 1.0, size, dtype=dtype),
                     np.linspace(1.0, 2.0, size, dtype=dtype)], items=ops)

    def make(device, dtype, compile):
        return compile(lambda a, b: chain(a, b, ops))

    return JitCase("chain", {"ops": ops, "elements": size}, ("float64",), build,
                   lambda a, b: chain(a, b, ops), make,
                   lambda name, dtype, device: lambda a, b: chain(a, b, ops))


def chain_workloads(case: JitCase) -> list[Workload]:
    """The chain eager and jitted, in numpy allocating, and in numpy into buffers."""
    params = science.peer_params("numpy", {**case.params, "mode": "numpy into out="})
    into = case.workload("numpy-out", params, host_run(
        lambda device, dtype: chain_into_buffers(case.params["ops"], case.params["elements"])))
    return [*case.workloads(("numpy",)), into]


# -- compile time and the cache -------------------------------------------------------------------
def small_fused_case(n: int = 4096) -> JitCase:
    """exp(2x + y) - sin(y) y over n float32 elements: one fused group, the subject of the
    compile-time figure on tvm."""

    def build(dtype: np.dtype) -> Case:
        return Case([np.linspace(-1.0, 1.0, n, dtype=dtype),
                     np.linspace(0.0, 2.0, n, dtype=dtype)], items=n)

    def make(device, dtype, compile):
        return compile(lambda x, y: hal.exp(x * 2.0 + y) - hal.sin(y) * y)

    return JitCase("small_fused", {"n": n}, ("float32",), build,
                   lambda x, y: np.exp(x * 2.0 + y) - np.sin(y) * y, make,
                   tolerance_scale=10.0)


COMPILE_SUBJECTS = {"kdv_step": ("cpu",), "small_fused": ("tvm",)}


def compile_workloads() -> list[Workload]:
    """The compile-time subjects jitted, each on its backend, first call timed apart."""
    subjects = {"kdv_step": kdv_step_case(), "small_fused": small_fused_case()}
    why = ("the compile-time figure is taken for the KdV step on cpu (numba fuses its "
           "chains) and for a small fused graph on tvm (TVM builds it)")
    return [only_on(replace(case.hal_workload("jit"), first_call=True),
                    COMPILE_SUBJECTS[name], why) for name, case in subjects.items()]


CACHE_SHAPES = (1000, 1000, 1000, 2000, 1000)


def traces_after_each_call(small: hal.Tensor, large: hal.Tensor) -> list[int]:
    """`Jitted.traces` of a new jitted function after each call with CACHE_SHAPES."""
    jitted = hal.jit(lambda x: hal.exp(x) * 2.0 + x)
    inputs = {small.shape[0]: small, large.shape[0]: large}
    counts = []
    for n in CACHE_SHAPES:
        jitted(inputs[n])
        counts.append(jitted.traces)
    return counts


def cache_workload() -> Workload:
    """Calls with the shapes seen before reuse their trace: the counts after each call are
    checked against [1, 1, 1, 2, 2]; the call sequence is the time."""

    def run(small: hal.Tensor, large: hal.Tensor) -> hal.Tensor:
        return hal.asarray(np.array(traces_after_each_call(small, large), np.float64),
                           device=small.device)

    def facts(small: hal.Tensor, large: hal.Tensor) -> dict[str, float | str]:
        return {"shapes": " ".join(f"({n},)" for n in CACHE_SHAPES),
                "traces_after_each_call": " ".join(map(str, traces_after_each_call(small,
                                                                                    large)))}

    expected = np.array([1.0, 1.0, 1.0, 2.0, 2.0])
    workload = Workload("jit_cache", {"shapes": " ".join(map(str, CACHE_SHAPES))},
                        ("float64",),
                        lambda dtype: Case([np.ones(min(CACHE_SHAPES), dtype),
                                            np.ones(max(CACHE_SHAPES), dtype)]),
                        run, lambda small, large: expected, facts=facts)
    return only_on(workload, ("cpu",), "a property of hal.jit, the same on every backend")


def cases() -> list[JitCase]:
    """Every case at the suite's sizes (the chain apart: it has its own peers)."""
    return [kdv_case(), ns_case(), taylor_case(10), taylor_case(16), transformer_case(),
            fft_case()]


def workloads() -> list[Workload]:
    """Each case eager and jitted on the device, then in each peer on the host; the chain;
    the compile-time subjects and the trace cache."""
    return ([w for case in cases() for w in case.workloads()] + chain_workloads(chain_case())
            + compile_workloads() + [cache_workload()])
