"""Taylor mode: high-order derivatives against closed forms and against the nested modes."""


import numpy as np
import pytest

import hal
from frontends import autograd as ag
from frontends.autograd.kth_derivative import hermite_derivative


def f(x):
    """sin(x) exp(-x^2): the issue's test function."""
    return hal.sin(x) * hal.exp(-(x * x))


@pytest.mark.parametrize(("dtype", "tol"), [(hal.float64, 1e-12), (hal.float32, 1e-5)])
def test_sixteen_derivatives_match_the_hermite_closed_form(device, dtype, tol):
    if not device.supports_dtype(dtype):
        pytest.skip(f"{device.name} has no {dtype.name}")
    x = np.linspace(-3, 3, 301)
    ds = ag.derivatives(f, hal.asarray(x.astype(dtype), device=device), 16)
    assert all(d.dtype == dtype for d in ds)
    for k in range(1, 17):
        exact = hermite_derivative(x.astype(dtype).astype(np.float64), k)
        err = np.max(np.abs(ds[k].numpy() - exact)) / np.max(np.abs(exact))
        assert err <= tol, f"k={k}: relative error {err:.3g} > {tol}"


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_taylor_nested_reverse_and_forward_over_forward_agree(k):
    x = hal.asarray(np.linspace(-2, 2, 9))
    g = lambda x: hal.tanh(x) * hal.log(1 + x * x) + hal.sqrt(2 + hal.cos(x)) / (3 + x)  # noqa: E731
    taylor = ag.derivative(g, k, "taylor")(x).numpy()
    rev = ag.derivative(g, k, "reverse")(x).numpy()
    fwd = ag.derivative(g, k, "forward")(x).numpy()
    np.testing.assert_allclose(rev, taylor, rtol=1e-11, atol=1e-11)
    np.testing.assert_allclose(fwd, taylor, rtol=1e-11, atol=1e-11)


def _nested_reverse(fn, k):
    return ag.derivative(fn, k, "reverse")


@pytest.mark.parametrize(("name", "fn", "lo", "hi"), [
    ("divide", lambda x: 1 / (2 + x), -1, 1),
    ("exp", hal.exp, -1, 1),
    ("log", hal.log, 0.5, 2),
    ("sqrt", hal.sqrt, 0.5, 2),
    ("sin", hal.sin, -2, 2),
    ("cos", hal.cos, -2, 2),
    ("tanh", hal.tanh, -2, 2),
    ("erf", hal.erf, -2, 2),
    ("power", lambda x: x ** 2.5, 0.5, 2),
    ("power-int", lambda x: x ** 5, -1, 1),
    ("power-negative", lambda x: x ** -2, 0.5, 2),
    ("power-both", lambda x: x ** (1 + x), 0.5, 2),
    ("gelu", hal.nn.gelu, -2, 2),
    ("gelu-tanh", lambda x: hal.nn.gelu(x, approximate="tanh"), -2, 2),
    ("sigmoid", hal.nn.sigmoid, -2, 2),
    ("abs", hal.abs, 0.5, 2),
])
def test_each_recurrence_matches_nested_reverse_to_order_five(name, fn, lo, hi):
    x = hal.asarray(np.linspace(lo, hi, 7))
    ds = ag.derivatives(fn, x, 5)
    for k in range(1, 6):
        np.testing.assert_allclose(ds[k].numpy(), _nested_reverse(fn, k)(x).numpy(),
                                   rtol=1e-10, atol=1e-10, err_msg=f"{name} k={k}")


def test_jet_takes_a_curve_and_composes():
    # x(t) = x + v t + w t^2 / 2: the derivatives of f(x(t)) by Faa di Bruno
    x, v, w = (hal.asarray(a) for a in ([0.3, -0.7], [1.0, 0.5], [0.2, -1.0]))
    y0, (y1, y2) = ag.jet(hal.exp, (x,), ([v, w],))
    e = np.exp(x.numpy())
    np.testing.assert_allclose(y1.numpy(), e * v.numpy())
    np.testing.assert_allclose(y2.numpy(), e * (v.numpy() ** 2 + w.numpy()))
    np.testing.assert_allclose(y0.numpy(), e)


def test_taylor_through_fused_and_linear_ops():
    rng = np.random.default_rng(0)
    w = hal.asarray(rng.standard_normal((4, 4)))

    def net(x):
        h = hal.nn.layer_norm(hal.nn.linear(hal.reshape(x, (2, 4)), w, activation="gelu"))
        return hal.sum(hal.nn.softmax(h) * hal.fft.irfft(hal.fft.rfft(h), n=4), axis=1)

    x = hal.asarray(rng.standard_normal(8))
    v = hal.asarray(rng.standard_normal(8))
    ds = ag.derivatives(net, x, 3, direction=v)
    d = lambda fn: lambda y: ag.jvp(fn, (y,), (v,))[1]  # noqa: E731
    nested = d(d(d(net)))(x)
    np.testing.assert_allclose(ds[3].numpy(), nested.numpy(), rtol=1e-9, atol=1e-9)


def test_order_zero_is_the_value_and_bad_orders_are_refused():
    x = hal.asarray([0.5])
    (value,) = ag.derivatives(hal.sin, x, 0)
    np.testing.assert_allclose(value.numpy(), np.sin(0.5))
    for bad in (-1, 2.0, True, "3"):
        with pytest.raises(hal.HalError, match="non-negative integer"):
            ag.derivatives(hal.sin, x, bad)
        with pytest.raises(hal.HalError, match="non-negative integer"):
            ag.derivative(hal.sin, bad)


def test_modes_nest_in_any_order_and_taylor_goes_beyond_sixteen():
    xs = np.linspace(-1, 1, 5)
    x = hal.asarray(xs)
    exact4 = hermite_derivative(xs, 4)
    reverse_over_taylor = ag.elementwise_grad(lambda y: ag.derivatives(f, y, 3)[3])(x)
    taylor_over_reverse = ag.derivatives(ag.elementwise_grad(f), x, 3)[3]
    taylor_over_taylor = ag.derivatives(lambda y: ag.derivatives(f, y, 2)[2], x, 2)[2]
    for got in (reverse_over_taylor, taylor_over_reverse, taylor_over_taylor):
        np.testing.assert_allclose(got.numpy(), exact4, rtol=1e-12, atol=1e-12)
    d32 = ag.derivatives(f, x, 32)[32].numpy()
    exact32 = hermite_derivative(xs, 32)
    assert np.max(np.abs(d32 - exact32)) / np.max(np.abs(exact32)) < 1e-12
