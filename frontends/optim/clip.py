"""Gradient clipping by the global L2 norm, as torch.nn.utils.clip_grad_norm_."""

from __future__ import annotations

from collections.abc import Mapping

import hal
from hal import HalError, Tensor


def clip_grad_norm(grads: Mapping[str, Tensor | None], max_norm: float,
                   ) -> tuple[dict[str, Tensor | None], Tensor]:
    """(grads scaled by min(1, max_norm / (norm + 1e-6)), norm): norm is the L2 norm of all
    the gradients together, a 0-d tensor (float32, or float64 if all are). Computed on the
    device without a host round trip, so it also runs inside hal.jit; None stays None."""
    if not max_norm > 0:
        raise HalError(f"clip_grad_norm: max_norm {max_norm} must be positive")
    present = [g for g in grads.values() if g is not None]
    if not present:
        raise HalError("clip_grad_norm: no gradients to clip")
    total = hal.sqrt(sum(_squares(g) for g in present))
    scale = hal.minimum(max_norm / (total + 1e-6), 1.0)
    return ({name: None if g is None else g * hal.astype(scale, g.dtype)
             for name, g in grads.items()}, total)


def _squares(g: Tensor) -> Tensor:
    wide = g if g.dtype == hal.float64 else hal.astype(g, hal.float32)
    return hal.sum(wide * wide)
