"""Complex inputs: JAX's convention for gradients, holomorphic JVPs, FFT pipelines."""

import numpy as np

import hal
from frontends import autograd as ag


def test_grad_of_a_real_function_is_df_dx_minus_i_df_dy():
    z = np.array([1 + 2j, -0.5 + 0.25j])
    f = lambda z: hal.sum(hal.abs(z) ** 2 + hal.real(z) * hal.imag(z) * 3)  # noqa: E731
    g = ag.grad(f)(hal.asarray(z)).numpy()
    x, y = z.real, z.imag
    df_dx, df_dy = 2 * x + 3 * y, 2 * y + 3 * x
    np.testing.assert_allclose(g, df_dx - 1j * df_dy)


def test_jvp_of_a_holomorphic_function_is_f_prime_times_t():
    z = np.array([0.3 + 0.4j, -1.0 + 0.1j])
    t = np.array([1.0 - 1j, 0.5j])
    f = lambda z: hal.exp(z) * hal.sin(z) / (2 + z)  # noqa: E731
    _, out = ag.jvp(f, (hal.asarray(z),), (hal.asarray(t),))

    def fprime(z):
        e = np.exp(z)
        return (e * (np.sin(z) + np.cos(z)) * (2 + z) - e * np.sin(z)) / (2 + z) ** 2

    np.testing.assert_allclose(out.numpy(), fprime(z) * t, rtol=1e-13)
    # the VJP passes ct * f'(z), no conjugate
    _, fn = ag.vjp(f, hal.asarray(z))
    (g,) = fn(hal.asarray(np.ones(2, dtype=complex)))
    np.testing.assert_allclose(g.numpy(), fprime(z), rtol=1e-13)


def test_taylor_mode_on_complex_input():
    z = hal.asarray(np.array([0.3 + 0.4j]))
    ds = ag.derivatives(hal.exp, z, 4)
    for d in ds:
        np.testing.assert_allclose(d.numpy(), np.exp(0.3 + 0.4j))


def test_spectral_derivative_pipeline_checks_to_second_order():
    x = hal.asarray(np.linspace(0, 1, 8))
    k = hal.asarray(np.fft.rfftfreq(8) * 2j * np.pi)

    def f(u):
        return hal.fft.irfft(hal.fft.rfft(u * u) * k, n=8) + hal.sum(hal.abs(hal.fft.fft(u)))

    ag.check_grads(f, (x,), order=2)
