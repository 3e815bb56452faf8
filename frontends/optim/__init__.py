"""Optimizers for models built from frontends.nn: SGD, AdamW, a warmup-then-linear-decay
schedule, gradient clipping by global norm, and the config dict form.

    from frontends import optim
    opt = optim.from_config({"optimizer": "AdamW", "learning_rate": 5e-5,
                             "lr_scheduler": {"type": "LinearDecay", "total_steps": 300}})
    model.update(opt.step(model.trainable(), grads))
"""

from .clip import clip_grad_norm
from .optimizers import SGD, AdamW, Optimizer, from_config
from .schedules import LinearDecay

__all__ = ["SGD", "AdamW", "LinearDecay", "Optimizer", "clip_grad_norm", "from_config"]
