"""Bad input: ops without a derivative, bad orders, non-scalar grads, mismatched tangents."""

import numpy as np
import pytest

import hal
from frontends import autograd as ag

x = hal.asarray([0.5, 1.5])


@pytest.mark.parametrize(("fn", "op"), [
    (lambda x: hal.astype(hal.astype(x, hal.int32), hal.float64), "astype"),
    (lambda x: hal.astype(hal.greater(x, 1.0), hal.float64) * x, "greater"),
    (lambda x: hal.astype(hal.sum(hal.astype(hal.less(x, 1.0), hal.int64)), hal.float64),
     "less"),
    (lambda x: hal.dequantize_linear(hal.quantize_linear(hal.astype(x, hal.float32), 0.1, 0),
                                     0.1, 0), "quantize_linear"),
])
def test_differentiating_through_an_op_without_derivative_names_it(fn, op):
    for run in (lambda: ag.grad(lambda x: hal.sum(fn(x)))(x),
                lambda: ag.jvp(fn, (x,), (hal.ones_like(x),)),
                lambda: ag.derivatives(fn, x, 3)):
        with pytest.raises(hal.HalError, match=rf"through {op}\(.*no derivative"):
            run()


def test_a_comparison_used_only_as_a_condition_is_fine():
    assert ag.grad(lambda x: hal.sum(hal.where(hal.greater(x, 1.0), x, 0)))(x).tolist() == [0, 1]


def test_grad_needs_a_real_scalar():
    with pytest.raises(hal.HalError, match=r"shape \(2,\).*scalar"):
        ag.grad(hal.sin)(x)
    with pytest.raises(hal.HalError, match="real floating"):
        ag.grad(lambda z: hal.sum(z))(hal.asarray([1j]))


def test_integer_inputs_and_non_tensors_are_refused():
    with pytest.raises(hal.HalError, match=r"int64.*floating"):
        ag.grad(lambda n: hal.sum(n))(hal.asarray([1, 2]))
    with pytest.raises(hal.HalError, match="not a hal Tensor"):
        ag.grad(lambda v: v)(1.0)


def test_bad_orders():
    for bad in (-1, 1.5, None):
        with pytest.raises(hal.HalError, match="non-negative integer"):
            ag.derivatives(hal.sin, x, bad)
        with pytest.raises(hal.HalError, match="non-negative integer"):
            ag.check_grads(hal.sin, (x,), order=bad)
    with pytest.raises(hal.HalError, match="at least 1"):
        ag.check_grads(hal.sin, (x,), order=0)
    with pytest.raises(hal.HalError, match="mode"):
        ag.derivative(hal.sin, 2, mode="sideways")


def test_mismatched_tangents_and_cotangents():
    with pytest.raises(hal.HalError, match="does not match primal"):
        ag.jvp(hal.sin, (x,), (hal.asarray([1.0]),))
    _, fn = ag.vjp(hal.sin, x)
    with pytest.raises(hal.HalError, match="does not match output"):
        fn(hal.asarray(np.ones(2, dtype=np.float32)))
    with pytest.raises(hal.HalError, match="same number of terms"):
        ag.jet(lambda a, b: a * b, (x, x), ([x], [x, x]))
