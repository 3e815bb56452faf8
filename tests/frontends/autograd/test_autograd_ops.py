"""Every differentiable op of the set: VJP and JVP against finite differences, per backend."""

import math

import numpy as np
import pytest

import hal
from frontends import autograd as ag
from hal import ops

C = hal.collectives


def _case(rng, device, dtype):
    """name -> (function, arguments, op that must run): one entry per differentiable op."""
    def t(a, d=dtype):
        return hal.asarray(np.asarray(a).astype(d), device=device)

    cdtype = hal.complex128 if dtype == hal.float64 else hal.complex64
    x = t(rng.standard_normal((3, 4)))
    y = t(rng.standard_normal(4))
    pos = t(rng.uniform(0.5, 2.0, (3, 4)))
    posb = t(rng.uniform(0.5, 2.0, 4))
    away = t(rng.uniform(0.3, 2.0, (3, 4)) * rng.choice([-1, 1], (3, 4)))
    unit = t(rng.uniform(-0.8, 0.8, (3, 4)))
    z = (t(rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4)), cdtype)
         if device.supports_dtype(cdtype) else None)  # None: the device has no complex
    sq = t(rng.standard_normal((4, 4)))
    q, k, v = (t(rng.standard_normal((2, 3, 4))) for _ in range(3))
    cond = hal.asarray(rng.standard_normal((3, 4)) > 0, device=device)
    w, b = t(rng.standard_normal((4, 5))), t(rng.standard_normal(5))
    img = t(rng.standard_normal((2, 4, 5, 4)))
    cw, cb = t(rng.standard_normal((6, 2, 3, 2))), t(rng.standard_normal(6))
    seq = t(rng.standard_normal((2, 5, 3)))  # channels last
    angles = [t(rng.standard_normal((3, 2))) for _ in range(2)]  # (sequence, head size / 2)
    per_channel = [t(rng.uniform(0.5, 2.0, 4)) for _ in range(2)] + [y, y * 2]
    return {
        "negative": (hal.negative, (x,)),
        "abs": (hal.abs, (away,)),
        "abs-complex": (hal.abs, (z,), "abs"),
        "exp": (hal.exp, (x,)),
        "log": (hal.log, (pos,)),
        "sqrt": (hal.sqrt, (pos,)),
        "sin": (hal.sin, (x,)),
        "cos": (hal.cos, (x,)),
        "tanh": (hal.tanh, (x,)),
        "erf": (hal.erf, (x,)),
        **{n: (getattr(hal, n), (unit,)) for n in ("asin", "acos", "atanh", "atan", "tan",
                                                   "sinh", "cosh", "asinh", "expm1")},
        "acosh": (hal.acosh, (pos + 1,)),
        **{n: (getattr(hal, n), (pos,)) for n in ("log1p", "log2", "log10")},
        "hypot": (hal.hypot, (x, posb)),
        "logaddexp": (hal.logaddexp, (x, y)),
        "copysign": (hal.copysign, (away, y)),
        "add": (hal.add, (x, y)),
        "subtract": (hal.subtract, (x, y)),
        "multiply": (hal.multiply, (x, y)),
        "divide": (hal.divide, (x, posb)),
        "power": (hal.power, (pos, y)),
        "power-int": (lambda a: a ** 3, (x,), "power"),
        "power-real": (lambda a: a ** 2.5, (pos,), "power"),
        "maximum": (hal.maximum, (x, y + 0.01)),
        "minimum": (hal.minimum, (x, y + 0.01)),
        "where": (lambda a, c: hal.where(cond, a, c), (x, y)),
        "astype": (lambda a: hal.astype(a, cdtype) * (1 + 2j), (x,)),
        "sum": (lambda a: hal.sum(a, axis=1), (x,)),
        "max": (lambda a: hal.max(a, axis=0), (x,)),
        "min": (lambda a: hal.min(a, axis=1, keepdims=True), (x,)),
        "reshape": (lambda a: hal.reshape(a, (2, 6)), (x,)),
        "permute_dims": (lambda a: hal.permute_dims(a, (1, 0)), (x,)),
        "broadcast_to": (lambda a: hal.broadcast_to(a, (2, 3, 4)), (y,)),
        "slice": (lambda a: a[::2, 3:0:-2], (x,)),
        "concat": (lambda a, c: hal.concat([a, hal.reshape(c, (1, 4))], axis=0), (x, y)),
        "take": (lambda a: hal.take(a, t([[0, 2], [-1, 2]], np.int64), axis=1), (x,)),
        "dynamic_update_slice": (  # the second start (5) is clamped to 2
            lambda a, c: hal.dynamic_update_slice(a, c, t(np.array([1, 5]), np.int64)),
            (x, hal.reshape(y, (2, 2)))),
        "dynamic_update_slice-operand": (
            lambda a: hal.dynamic_update_slice(a, hal.zeros((1, 4), dtype=a.dtype,
                                                            device=a.device), [-1, 0]),
            (x,), "dynamic_update_slice"),
        "pad": (lambda a: hal.pad(a, ((1, 2), (0, 1)), value=3.0), (x,)),
        "pad-edge": (lambda a: hal.pad(a, ((2, 1), (1, 3)), mode="edge"), (x,), "pad"),
        "pad-wrap": (lambda a: hal.pad(a, ((2, 1), (1, 3)), mode="wrap"), (x,), "pad"),
        "matmul": (hal.matmul, (x, sq)),
        "matmul-batched": (hal.matmul, (q, hal.reshape(sq, (4, 4))), "matmul"),
        "matmul-vector": (hal.matmul, (y, sq), "matmul"),
        "matmul-dot": (hal.matmul, (y, y + 1), "matmul"),
        "real": (hal.real, (z,)),
        "imag": (hal.imag, (z,)),
        "conj": (hal.conj, (z,)),
        "complex": (hal.complex, (x, y)),
        "fftn": (lambda a: hal.fft.fft2(a, norm="ortho"), (z,)),
        "ifftn": (lambda a: hal.fft.ifft(a), (z,)),
        "rfftn": (lambda a: hal.fft.rfft2(a), (x,)),
        "irfftn": (lambda a: hal.fft.irfft(a, n=6), (z,)),
        "irfftn-odd": (lambda a: hal.fft.irfft2(a, s=(3, 7), norm="forward"), (z,), "irfftn"),
        "mean": (lambda a: hal.mean(a, axis=0), (x,)),
        "var": (lambda a: hal.var(a, axis=1, correction=1), (x,)),
        "softmax": (lambda a: hal.nn.softmax(a, axis=0), (x,)),
        "log_softmax": (hal.nn.log_softmax, (x,)),
        "layer_norm": (hal.nn.layer_norm, (x, y, y * 2)),
        "gelu": (hal.nn.gelu, (x,)),
        "gelu-tanh": (lambda a: hal.nn.gelu(a, approximate="tanh"), (x,), "gelu"),
        "silu": (hal.nn.silu, (x,)),
        "sigmoid": (hal.nn.sigmoid, (x,)),
        "relu": (hal.nn.relu, (away,)),
        "linear": (lambda a, c, d: hal.nn.linear(a, c, d, activation="gelu_tanh"), (x, w, b)),
        "linear-silu": (lambda a, c: hal.nn.linear(a, c, activation="silu"), (x, w), "linear"),
        "scaled_dot_product_attention": (
            lambda a, c, d: hal.nn.scaled_dot_product_attention(a, c, d, causal=True),
            (q, k, v)),
        "roll": (lambda a: hal.nn.roll(a, (1, -2), axis=(0, 1)), (x,)),
        "conv": (lambda a, c, d: hal.nn.conv(a, c, d, stride=(2, 1), padding=((1, 0), (2, 1)),
                                             dilation=(1, 2), groups=2), (img, cw, cb)),
        "conv-1d-last": (lambda a, c: hal.nn.conv(a, c, padding=1, layout="channels_last"),
                         (seq, t(rng.standard_normal((2, 3, 3)))), "conv"),
        "conv_transpose": (lambda a, c, d: hal.nn.conv_transpose(
            a, c, d, stride=(2, 1), padding=((1, 0), (0, 1)), output_padding=(1, 0),
            dilation=(1, 2), groups=2), (img, hal.reshape(cw, (4, 3, 3, 2)), cb)),
        "max_pool": (lambda a: hal.nn.max_pool(a, (2, 3), stride=(2, 1),
                                               padding=((1, 1), (0, 1))), (img,)),
        "avg_pool": (lambda a: hal.nn.avg_pool(a, 2, stride=1, padding=1), (img,)),
        "avg_pool-last": (lambda a: hal.nn.avg_pool(a, 2, padding=1, count_include_pad=True,
                                                    layout="channels_last"), (seq,), "avg_pool"),
        "batch_norm": (hal.nn.batch_norm, (img, *per_channel)),
        "rms_norm": (hal.nn.rms_norm, (x, y)),
        "rope": (hal.nn.rope, (q, *angles)),
        "rope-interleaved": (lambda a, c, s: hal.nn.rope(a, c, s, interleaved=True),
                             (q, *angles), "rope"),
        # collectives over the one-rank group; tests/frontends/parallel runs real ranks
        "all_reduce": (lambda a: C.all_reduce(a, group="self"), (x,)),
        "all_gather": (lambda a: C.all_gather(a, group="self", axis=1), (x,)),
        "reduce_scatter": (lambda a: C.reduce_scatter(a, group="self", axis=0), (x,)),
        "all_to_all": (lambda a: C.all_to_all(a, group="self", split_axis=0, concat_axis=1),
                       (x,)),
        "copy_to_group": (lambda a: C.copy_to_group(a, group="self"), (x,)),
        "split_to_group": (lambda a: C.split_to_group(a, group="self", axis=1), (x,)),
        "gather_to_group": (lambda a: C.gather_to_group(a, group="self", axis=1), (x,)),
    }


def _cases():
    names = list(_case(np.random.default_rng(0), hal.device("cpu"), hal.float64))
    return names


def test_every_differentiable_op_has_a_case():
    covered = {entry[2] if len(entry) > 2 else name for name, entry in
               _case(np.random.default_rng(0), hal.device("cpu"), hal.float64).items()}
    wanted = {s.name for s in ops.specs() if s.differentiable}
    assert wanted - covered == set()
    from frontends.autograd import series_rules, vjp_rules

    assert wanted - set(vjp_rules.RULES) == set()
    assert wanted - set(series_rules.RULES) == set()


@pytest.mark.parametrize("name", _cases())
def test_vjp_and_jvp_match_finite_differences(device, name):
    dtype = hal.float64 if device.supports_dtype(hal.float64) else hal.float32
    entry = _case(np.random.default_rng(7), device, dtype)[name]
    fn, args = entry[0], entry[1]
    op = entry[2] if len(entry) > 2 else name
    if op in device.capabilities.unsupported:
        pytest.skip(f"{device.name} does not support {op}: {device.capabilities.unsupported[op]}")
    if any(a is None or not device.supports_dtype(a.dtype) for a in args):
        pytest.skip(f"{device.name} lacks a dtype of this case (complex)")
    with hal.placement() as where:
        try:
            fn(*args)
        except hal.UnsupportedDType as e:  # e.g. a cast to complex on a device without it
            pytest.skip(str(e))
    assert op in {r[0] for r in where.records}, f"case {name} does not run op {op}"
    # nesting is backend-independent: second order on cpu, first order (the rules' ops
    # on the device) elsewhere, which keeps a cold run's kernel builds few
    order = 2 if dtype == hal.float64 and device is hal.device("cpu") else 1
    ag.check_grads(fn, args, order=order)


def test_check_grads_catches_a_wrong_rule(monkeypatch):
    from frontends.autograd import vjp_rules

    monkeypatch.setitem(vjp_rules.RULES, "sin", lambda ct, args, *_: (ct * 2,))
    x = hal.asarray([0.3, 1.2])
    with pytest.raises(AssertionError, match="dot-product"):
        ag.check_grads(hal.sin, (x,), modes="rev")
    ag.check_grads(hal.sin, (x,), modes="fwd")
    assert math.isclose(ag.grad(lambda a: hal.sum(hal.sin(a)))(x).numpy()[0], 2.0)
