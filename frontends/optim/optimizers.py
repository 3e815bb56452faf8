"""Optimizers over dicts of hal Tensors: SGD and AdamW, with PyTorch's update rules.

Tensors are immutable, so an optimizer is functional in its parameters: `step(params,
grads)` returns new parameters, and keeps its own state (momenta, step count) by name.

    opt = AdamW(LinearDecay(5e-5, total_steps=300, warmup_steps=10), grad_clip=1.0)
    loss, grads = ag.value_and_grad(loss_fn)(model.trainable(), batch)
    model.update(opt.step(model.trainable(), grads))

The step runs eagerly (its learning rate and bias corrections change every step); jit the
loss and gradient function, which is where the time goes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import hal
from hal import HalError, Tensor

from .clip import clip_grad_norm
from .schedules import LinearDecay

LearningRate = float | Callable[[int], float]  # a constant or a schedule of the step count


class Optimizer:
    """The common part: learning rate (a float or a schedule of the step count), decay,
    optional gradient clipping by global norm, per-parameter state and the step count."""

    def __init__(self, lr: LearningRate, weight_decay: float,
                 grad_clip: float | None) -> None:
        self.lr, self.weight_decay, self.grad_clip = lr, weight_decay, grad_clip
        self.steps = 0
        self.state: dict[str, dict[str, Tensor]] = {}
        self.last_grad_norm: Tensor | None = None

    def learning_rate(self) -> float:
        """The learning rate the next step uses."""
        return float(self.lr(self.steps)) if callable(self.lr) else float(self.lr)

    def step(self, params: Mapping[str, Tensor], grads: Mapping[str, Tensor | None],
             ) -> dict[str, Tensor]:
        """New parameters from `params` and their gradients (same names; a parameter whose
        gradient is missing or None is left as it is). With grad_clip the gradients are
        clipped first and their norm kept in `last_grad_norm`."""
        where = type(self).__name__
        for name, g in grads.items():
            if name not in params:
                raise HalError(f"{where}.step: gradient {name!r} has no parameter; the "
                               f"parameters are {', '.join(params) or 'none'}")
            p = params[name]
            if g is not None and (g.shape != p.shape or g.dtype != p.dtype):
                raise HalError(f"{where}.step: gradient {name!r} is {g.dtype.name}"
                               f"{tuple(g.shape)}, its parameter {p.dtype.name}"
                               f"{tuple(p.shape)}")
        if self.grad_clip is not None:
            grads, self.last_grad_norm = clip_grad_norm(grads, self.grad_clip)
        lr = self.learning_rate()
        self.steps += 1
        new = dict(params)
        for name, g in grads.items():
            if g is not None:
                new[name] = self._update(name, params[name], g, lr)
        return new

    def _update(self, name: str, p: Tensor, g: Tensor, lr: float) -> Tensor:
        raise NotImplementedError

    def state_dict(self) -> dict:
        """{"steps": int, "state": {parameter: {slot: Tensor}}}: what resuming needs."""
        return {"steps": self.steps, "state": {n: dict(s) for n, s in self.state.items()}}

    def load_state_dict(self, state: Mapping) -> None:
        """Resume from a `state_dict()`."""
        if set(state) != {"steps", "state"}:
            raise HalError(f"{type(self).__name__}.load_state_dict: expected keys 'steps' and "
                           f"'state', got {', '.join(map(repr, state))}")
        self.steps = int(state["steps"])
        self.state = {n: dict(s) for n, s in state["state"].items()}


class SGD(Optimizer):
    """Stochastic gradient descent as torch.optim.SGD: g += weight_decay * p; with momentum
    m = momentum * m + g (m = g at first) and g = m; p -= lr * g."""

    def __init__(self, lr: LearningRate, momentum: float = 0.0,
                 weight_decay: float = 0.0, *, grad_clip: float | None = None) -> None:
        super().__init__(lr, weight_decay, grad_clip)
        self.momentum = momentum

    def _update(self, name, p, g, lr):
        if self.weight_decay:
            g = g + p * self.weight_decay
        if self.momentum:
            previous = self.state.get(name)
            g = g if previous is None else previous["momentum"] * self.momentum + g
            self.state[name] = {"momentum": g}
        return p - g * lr


class AdamW(Optimizer):
    """Adam with decoupled weight decay as torch.optim.AdamW: p *= 1 - lr * weight_decay;
    m, v the running means of g and g^2; p -= lr * m_hat / (sqrt(v_hat) + eps) with the
    bias corrections m_hat = m / (1 - beta1^t), v_hat = v / (1 - beta2^t)."""

    def __init__(self, lr: LearningRate, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.01, *,
                 grad_clip: float | None = None) -> None:
        super().__init__(lr, weight_decay, grad_clip)
        self.betas, self.eps = tuple(betas), eps

    def _update(self, name, p, g, lr):
        b1, b2 = self.betas
        previous = self.state.get(name)
        if previous is None:
            m, v = g * (1 - b1), g * g * (1 - b2)
        else:
            m = previous["exp_avg"] * b1 + g * (1 - b1)
            v = previous["exp_avg_sq"] * b2 + g * g * (1 - b2)
        self.state[name] = {"exp_avg": m, "exp_avg_sq": v}
        t = self.steps
        if self.weight_decay:
            p = p * (1 - lr * self.weight_decay)
        denom = hal.sqrt(v) * (1 / math.sqrt(1 - b2 ** t)) + self.eps
        return p - m / denom * (lr / (1 - b1 ** t))


# -- the config dict form -----------------------------------------------------------------
_OPTIMIZERS = {"SGD": (SGD, ("momentum", "weight_decay")),
               "AdamW": (AdamW, ("betas", "eps", "weight_decay"))}
_COMMON = ("optimizer", "learning_rate", "lr_scheduler", "grad_clip")
_SCHEDULES = {"LinearDecay": (LinearDecay, ("total_steps", "warmup_steps", "end_lr"))}


def from_config(config: Mapping) -> Optimizer:
    """An optimizer from its config dict, e.g.

        {"optimizer": "AdamW", "learning_rate": 5e-5, "weight_decay": 0.01,
         "lr_scheduler": {"type": "LinearDecay", "warmup_steps": 10, "total_steps": 300},
         "grad_clip": 1.0}

    Unknown keys, optimizers or schedules are a HalError listing the accepted ones.
    """
    name = config.get("optimizer")
    if name not in _OPTIMIZERS:
        raise HalError(f"optimizer config: optimizer {name!r} is not one of "
                       f"{', '.join(_OPTIMIZERS)}")
    cls, own = _OPTIMIZERS[name]
    _check_keys(f"optimizer config ({name})", config, (*_COMMON, *own))
    if "learning_rate" not in config:
        raise HalError("optimizer config: learning_rate is required")
    lr = float(config["learning_rate"])
    schedule = config.get("lr_scheduler")
    if schedule is not None:
        kind = schedule.get("type")
        if kind not in _SCHEDULES:
            raise HalError(f"optimizer config: lr_scheduler type {kind!r} is not one of "
                           f"{', '.join(_SCHEDULES)}")
        make, keys = _SCHEDULES[kind]
        _check_keys(f"lr_scheduler ({kind})", schedule, ("type", *keys))
        lr = make(lr, **{k: v for k, v in schedule.items() if k != "type"})
    return cls(lr, **{k: config[k] for k in own if k in config},
               grad_clip=config.get("grad_clip"))


def _check_keys(where: str, given: Mapping, accepted) -> None:
    unknown = [k for k in given if k not in accepted]
    if unknown:
        raise HalError(f"{where}: unknown key(s) {', '.join(map(repr, unknown))}; accepted: "
                       f"{', '.join(accepted)}")
