"""The k-th derivative of sin(x) exp(-x^2) at n points: the autodiff benchmark's problem.

The evaluation points, the closed form (through Hermite polynomials), hal's Taylor mode
(one pass, O(k^2) per op) and nested reverse mode (k nested VJPs), and the same
derivative in jax (`jax.experimental.jet`, jitted) and in torch (nested autograd with
`create_graph=True`, one intra-op thread), each a function of host arrays. The
`autograd` benchmark suite measures them side by side.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

ORDERS = (1, 2, 4, 8, 10, 12, 16)
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


def _hal_function():
    import hal

    return lambda x: hal.sin(x) * hal.exp(-(x * x))


def hal_kth(mode: str, k: int) -> Callable:
    """x (a hal Tensor) -> f^(k)(x) by hal Taylor mode ("taylor") or nested reverse ("reverse")."""
    from frontends.autograd import derivative

    return derivative(_hal_function(), k, mode)


def jax_kth(k: int) -> Callable[[np.ndarray], np.ndarray]:
    """x -> f^(k)(x) by `jax.experimental.jet` in float64, jitted (compiled at the first call
    of each shape)."""
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    from jax.experimental import jet

    def kth(v):
        series = (jnp.ones_like(v),) + (jnp.zeros_like(v),) * (k - 1)
        return jet.jet(lambda u: jnp.sin(u) * jnp.exp(-u * u), (v,), (series,))[1][-1]

    compiled = jax.jit(kth)
    return lambda x: np.asarray(compiled(jnp.asarray(x)).block_until_ready())


def torch_kth(k: int) -> Callable[[np.ndarray], np.ndarray]:
    """x -> f^(k)(x) by k nested torch.autograd.grad calls (create_graph), one intra-op
    thread (10^4 points gain nothing from more; hal and jet use one)."""
    import torch

    torch.set_num_threads(1)

    def kth(x: np.ndarray) -> np.ndarray:
        xt = torch.tensor(x, requires_grad=True)
        y = torch.sin(xt) * torch.exp(-xt * xt)
        for i in range(k):
            (y,) = torch.autograd.grad(y.sum(), xt, create_graph=i < k - 1)
        return y.detach().numpy()

    return kth
