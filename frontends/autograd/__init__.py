"""Automatic differentiation over the hal op set: reverse, forward and Taylor mode.

Built on hal's op observer (`hal.observe`) only, so it runs on every backend. Each
op of the set that has a derivative has a VJP rule (`vjp_rules`, `vjp_composites`) and
a series rule (`series_rules`: its JVP at order 1, its Taylor propagation above), all
written in hal ops: derivatives nest to any order.

    from frontends import autograd as ag
    ag.grad(lambda x: hal.sum(hal.sin(x) ** 2))(x)         # reverse mode
    ag.jvp(f, (x,), (v,))                                   # forward mode
    ag.derivatives(f, x, order=10)                          # Taylor mode: f, f', ..., f^(10)
    ag.check_grads(f, (x,), order=2)                        # against finite differences

`kth_derivative` holds the benchmark problem, f^(k) of sin(x) exp(-x^2), in hal's Taylor
and nested reverse modes, jax.experimental.jet and torch nested autograd; the `autograd`
suite measures them side by side (`hal bench --suite autograd`).

Complex numbers follow JAX's convention. A tangent t of z maps to f'(z) t for
holomorphic f (`jvp`, `jet`). Cotangents pair with tangents through Re(sum(ct * t)),
with no conjugate, so a VJP passes ct * f'(z), and `grad` of a real-valued f of
complex z is df/dx - i df/dy: the conjugate of the steepest-ascent direction, so
gradient descent steps along conj(grad). PyTorch returns the conjugate of this.

Composites differentiate through their decomposition when the backend decomposes them
and through their own rule when it runs a fused kernel; the two agree to rounding.
Differentiating through an op without a derivative (a comparison, a cast to integer or
bool, quantization) raises a HalError naming the op; `stop_gradient` marks a constant.
"""

from .check import check_grads, check_jvp, check_vjp
from .derivative import derivative
from .forward import hessian, jacfwd, jvp
from .reverse import elementwise_grad, grad, jacrev, value_and_grad, vjp
from .taylor import derivatives, jet
from .trace import stop_gradient

__all__ = [
    "check_grads",
    "check_jvp",
    "check_vjp",
    "derivative",
    "derivatives",
    "elementwise_grad",
    "grad",
    "hessian",
    "jacfwd",
    "jacrev",
    "jet",
    "jvp",
    "stop_gradient",
    "value_and_grad",
    "vjp",
]
