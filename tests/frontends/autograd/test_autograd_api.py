"""grad, value_and_grad, vjp, jvp, jacobians and hessians: values, nesting and pytrees."""

import numpy as np
import pytest

import hal
from frontends import autograd as ag


def test_grad_value_and_grad_and_aux():
    x = hal.asarray([0.5, -1.0, 2.0])
    loss = lambda x: hal.sum(x * x * x)  # noqa: E731
    np.testing.assert_allclose(ag.grad(loss)(x).numpy(), 3 * x.numpy() ** 2)
    value, g = ag.value_and_grad(loss)(x)
    np.testing.assert_allclose(value.numpy(), np.sum(x.numpy() ** 3))
    np.testing.assert_allclose(g.numpy(), 3 * x.numpy() ** 2)
    g, aux = ag.grad(lambda x: (loss(x), x * 2), has_aux=True)(x)
    np.testing.assert_allclose(aux.numpy(), 2 * x.numpy())


def test_argnums_and_pytrees():
    a, b = hal.asarray([1.0, 2.0]), hal.asarray(3.0)
    ga, gb = ag.grad(lambda a, b: hal.sum(a * b), argnums=(0, 1))(a, b)
    np.testing.assert_allclose(ga.numpy(), [3.0, 3.0])
    np.testing.assert_allclose(gb.numpy(), 3.0)
    params = {"w": hal.asarray([[1.0, 2.0], [3.0, 4.0]]), "b": [hal.asarray([0.5, -0.5])]}
    x = hal.asarray([1.0, -1.0])
    g = ag.grad(lambda p, x: hal.sum(hal.tanh(x @ p["w"] + p["b"][0])))(params, x)
    assert set(g) == {"w", "b"} and isinstance(g["b"], list)
    d = 1 - np.tanh(x.numpy() @ params["w"].numpy() + params["b"][0].numpy()) ** 2
    np.testing.assert_allclose(g["b"][0].numpy(), d)
    np.testing.assert_allclose(g["w"].numpy(), np.outer(x.numpy(), d))


def test_vjp_of_several_outputs_and_jvp_of_pytrees():
    x = hal.asarray([0.3, 0.7])
    (s, c), fn = ag.vjp(lambda x: (hal.sin(x), hal.cos(x)), x)
    (g,) = fn((hal.ones_like(s), hal.full_like(c, 2.0)))
    np.testing.assert_allclose(g.numpy(), np.cos([0.3, 0.7]) - 2 * np.sin([0.3, 0.7]))
    _, t = ag.jvp(lambda p: {"y": p["a"] * p["b"]}, ({"a": x, "b": x + 1},),
                    ({"a": hal.ones_like(x), "b": hal.zeros_like(x)},))
    np.testing.assert_allclose(t["y"].numpy(), x.numpy() + 1)


def test_grad_of_grad_to_order_six():
    x = hal.asarray([0.4])
    d = hal.sin
    for k in range(1, 7):
        d = ag.grad(lambda x, d=d: hal.sum(d(x)))
        expected = [np.cos, lambda v: -np.sin(v), lambda v: -np.cos(v), np.sin][(k - 1) % 4]
        np.testing.assert_allclose(d(x).numpy(), expected(0.4), rtol=1e-14)


def test_no_perturbation_confusion():
    # d/dx [x * d/dy (x + y)] = 1: the inner level must see the outer x as a constant
    x = hal.asarray(1.0)
    inner = lambda x: ag.grad(lambda y: x + y)(x)  # noqa: E731
    assert ag.grad(lambda x: x * inner(x))(x).item() == pytest.approx(1.0)
    # and a closure over the very tensor being differentiated
    y = hal.asarray(3.0)
    assert ag.grad(lambda t: y * t)(y).item() == pytest.approx(3.0)


def test_stop_gradient():
    x = hal.asarray([2.0])
    g = ag.grad(lambda x: hal.sum(x * ag.stop_gradient(x)))(x)
    np.testing.assert_allclose(g.numpy(), [2.0])


def test_jacobians_and_hessian():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 2))
    x = hal.asarray(rng.standard_normal(2))
    f = lambda x: hal.sin(hal.asarray(a) @ x)  # noqa: E731
    expected = np.cos(a @ x.numpy())[:, None] * a
    np.testing.assert_allclose(ag.jacrev(f)(x).numpy(), expected, rtol=1e-14)
    np.testing.assert_allclose(ag.jacfwd(f)(x).numpy(), expected, rtol=1e-14)
    h = ag.hessian(lambda x: hal.sum(hal.exp(x)) * hal.sum(x * x))(x)
    xs = x.numpy()
    e, s = np.exp(xs), np.sum(xs ** 2)
    expected_h = np.diag(e * s + 2 * np.sum(e)) + 2 * (np.outer(e, xs) + np.outer(xs, e))
    np.testing.assert_allclose(h.numpy(), expected_h, rtol=1e-13)
    h_rev = ag.jacrev(ag.jacrev(lambda x: hal.sum(hal.exp(x)) * hal.sum(x * x)))(x)
    np.testing.assert_allclose(h_rev.numpy(), expected_h, rtol=1e-13)


def test_grad_of_a_float32_function_stays_float32():
    x = hal.asarray(np.array([0.1, 0.2], dtype=np.float32))
    g = ag.grad(lambda x: hal.sum(hal.exp(x) * 2.0))(x)
    assert g.dtype == hal.float32


def test_untouched_input_gets_zeros():
    a, b = hal.asarray([1.0]), hal.asarray([2.0, 3.0])
    _, gb = ag.grad(lambda a, b: hal.sum(a * a), argnums=(0, 1))(a, b)
    np.testing.assert_allclose(gb.numpy(), [0.0, 0.0])


def test_where_with_a_condition_from_the_input_is_differentiable():
    x = hal.asarray([-1.0, 2.0])
    g = ag.grad(lambda x: hal.sum(hal.where(x > 0, x * x, -x)))(x)
    np.testing.assert_allclose(g.numpy(), [-1.0, 4.0])
    ag.check_grads(lambda x: hal.where(x > 0, x * x, -x), (x,), order=3)


def test_the_tape_keeps_only_what_rules_read():
    import gc
    import weakref

    refs = []

    def f(x):
        y = x * 2.0  # multiply's rule reads its operands, not y
        z = y + 1.0  # add's rule reads nothing
        dead = hal.sin(z)  # a branch nothing uses
        refs.extend([weakref.ref(y), weakref.ref(dead)])
        return hal.exp(z)  # exp's rule reads its result, not z

    x = hal.asarray(np.ones(4))
    out, fn = ag.vjp(f, x)
    gc.collect()
    assert [r() for r in refs] == [None, None]
    np.testing.assert_allclose(fn(hal.ones_like(out))[0].numpy(), 2 * np.exp(3.0) * np.ones(4))
