"""frontends.optim against numpy implementations of the same formulas; a tiny model learns."""

from __future__ import annotations

import numpy as np
import pytest

import hal
from frontends import autograd as ag
from frontends import nn, optim

CONFIG = {"optimizer": "AdamW", "learning_rate": 5e-2, "weight_decay": 0.01,
          "lr_scheduler": {"type": "LinearDecay", "warmup_steps": 1, "total_steps": 4},
          "grad_clip": 1.0}


@pytest.fixture
def problem():
    """Three steps' parameters and gradients: numpy and hal, float64."""
    rng = np.random.default_rng(3)
    params = {"w": rng.standard_normal((3, 2)), "b": rng.standard_normal(2)}
    grads = [{k: rng.standard_normal(v.shape) for k, v in params.items()} for _ in range(3)]
    return params, grads


def run(optimizer, params, grads):
    tensors = {k: hal.asarray(v) for k, v in params.items()}
    for g in grads:
        tensors = optimizer.step(tensors, {k: hal.asarray(v) for k, v in g.items()})
    return {k: v.numpy() for k, v in tensors.items()}


def hf_linear_schedule(peak, warmup, total):
    """HF get_linear_schedule_with_warmup's multiplier times the peak learning rate."""
    def lr(step):
        if step < warmup:
            return peak * step / max(1, warmup)
        return peak * max(0.0, (total - step) / max(1, total - warmup))
    return lr


def test_sgd_with_momentum_and_decay_matches_numpy(problem):
    params, grads = problem
    p, buf = {k: v.copy() for k, v in params.items()}, {}
    for g in grads:
        for k in p:
            d = g[k] + 0.1 * p[k]
            buf[k] = d if k not in buf else 0.9 * buf[k] + d
            p[k] = p[k] - 0.05 * buf[k]
    got = run(optim.SGD(0.05, momentum=0.9, weight_decay=0.1), params, grads)
    for k in p:
        np.testing.assert_allclose(got[k], p[k], rtol=1e-12)


def test_adamw_with_schedule_and_clipping_matches_numpy(problem):
    params, grads = problem
    b1, b2, eps, wd = 0.9, 0.999, 1e-8, 0.01
    lr_of = hf_linear_schedule(5e-2, 1, 4)
    p = {k: v.copy() for k, v in params.items()}
    m = {k: 0 * v for k, v in p.items()}
    v = {k: 0 * x for k, x in p.items()}
    for t, g in enumerate(grads, start=1):
        norm = np.sqrt(sum((x ** 2).sum() for x in g.values()))
        g = {k: x * min(1.0, 1.0 / (norm + 1e-6)) for k, x in g.items()}
        lr = lr_of(t - 1)
        for k in p:
            p[k] = p[k] * (1 - lr * wd)
            m[k] = b1 * m[k] + (1 - b1) * g[k]
            v[k] = b2 * v[k] + (1 - b2) * g[k] ** 2
            p[k] = p[k] - lr * (m[k] / (1 - b1 ** t)) / (np.sqrt(v[k] / (1 - b2 ** t)) + eps)
    opt = optim.from_config(CONFIG)
    got = run(opt, params, grads)
    for k in p:
        np.testing.assert_allclose(got[k], p[k], rtol=1e-12)
    assert opt.steps == 3 and float(opt.last_grad_norm) == pytest.approx(norm)


def test_linear_decay_is_hf_linear_schedule_with_warmup():
    ours, theirs = optim.LinearDecay(1e-3, 300, 10), hf_linear_schedule(1e-3, 10, 300)
    for step in (0, 1, 5, 10, 11, 150, 299, 300, 400):
        assert ours(step) == pytest.approx(theirs(step), abs=1e-15)
    to_floor = optim.LinearDecay(1.0, 10, end_lr=0.1)
    assert [to_floor(s) for s in (0, 5, 10, 20)] == pytest.approx([1.0, 0.55, 0.1, 0.1])
    with pytest.raises(hal.HalError, match="warmup_steps"):
        optim.LinearDecay(1.0, 10, warmup_steps=11)


def test_clip_grad_norm_matches_numpy(problem):
    _, grads = problem
    g = grads[0]
    norm = np.sqrt(sum((x ** 2).sum() for x in g.values()))
    clipped, total = optim.clip_grad_norm({k: hal.asarray(v) for k, v in g.items()}, 0.5)
    assert float(total) == pytest.approx(norm)
    for k in g:
        np.testing.assert_allclose(clipped[k].numpy(), g[k] * 0.5 / (norm + 1e-6))
    kept, _ = optim.clip_grad_norm({k: hal.asarray(v) for k, v in g.items()}, 2 * norm)
    for k in g:
        np.testing.assert_allclose(kept[k].numpy(), g[k])


def test_from_config_rejects_what_it_does_not_know():
    with pytest.raises(hal.HalError, match=r"unknown key\(s\) 'momentum'; accepted: optimizer"):
        optim.from_config({**CONFIG, "momentum": 0.9})
    with pytest.raises(hal.HalError, match="optimizer 'Adam' is not one of SGD, AdamW"):
        optim.from_config({**CONFIG, "optimizer": "Adam"})
    with pytest.raises(hal.HalError, match="lr_scheduler type 'Cosine' is not one of"):
        optim.from_config({**CONFIG, "lr_scheduler": {"type": "Cosine"}})
    with pytest.raises(hal.HalError, match=r"lr_scheduler \(LinearDecay\): unknown key"):
        optim.from_config({**CONFIG, "lr_scheduler": {"type": "LinearDecay", "steps": 3}})
    sgd = optim.from_config({"optimizer": "SGD", "learning_rate": 0.1, "momentum": 0.5})
    assert (type(sgd), sgd.momentum, sgd.learning_rate(), sgd.grad_clip) == (optim.SGD, 0.5,
                                                                             0.1, None)


def test_step_checks_names_and_shapes(problem):
    params = {k: hal.asarray(v) for k, v in problem[0].items()}
    opt = optim.AdamW(0.1)
    with pytest.raises(hal.HalError, match="gradient 'c' has no parameter"):
        opt.step(params, {"c": params["b"]})
    with pytest.raises(hal.HalError, match=r"gradient 'b' is float64\(3, 2\)"):
        opt.step(params, {"b": params["w"]})
    new = opt.step(params, {"w": params["w"], "b": None})
    assert new["b"] is params["b"] and new.keys() == params.keys()


def test_state_dict_resumes_exactly(problem):
    params, grads = problem
    whole = run(optim.AdamW(0.1), params, grads)
    first = optim.AdamW(0.1)
    half = run(first, params, grads[:1])
    resumed = optim.AdamW(0.1)
    resumed.load_state_dict(first.state_dict())
    rest = run(resumed, half, grads[1:])
    for k in whole:
        np.testing.assert_array_equal(rest[k], whole[k])


def test_a_tiny_model_learns_with_adamw():
    rng = np.random.default_rng(0)
    model = nn.Sequential(nn.Linear(4, 16, activation="gelu", seed=1), nn.Linear(16, 1, seed=2))
    x = hal.asarray(rng.standard_normal((32, 4)).astype(np.float32))
    y = hal.asarray(np.sin(x.numpy().sum(1, keepdims=True)))

    def loss(params):
        diff = model.call_with(params, x) - y
        return hal.mean(diff * diff)

    value_and_grad = ag.value_and_grad(loss)
    opt = optim.AdamW(optim.LinearDecay(0.1, 30, warmup_steps=3), grad_clip=1.0)
    losses = []
    for _ in range(30):
        value, grads = value_and_grad(model.trainable())
        losses.append(float(value))
        model.update(opt.step(model.trainable(), grads))
    assert losses[-1] < 0.3 * losses[0]
