"""Learning-rate schedules: callables from the number of steps taken to a learning rate."""

from __future__ import annotations

from hal import HalError


class LinearDecay:
    """Linear warmup from 0 to peak_lr over warmup_steps, then linear decay to end_lr at
    total_steps (HF's `get_linear_schedule_with_warmup` when end_lr is 0); end_lr after."""

    def __init__(self, peak_lr: float, total_steps: int, warmup_steps: int = 0,
                 end_lr: float = 0.0) -> None:
        if not 0 <= warmup_steps <= total_steps or total_steps < 1:
            raise HalError(f"LinearDecay: need 0 <= warmup_steps ({warmup_steps}) <= "
                           f"total_steps ({total_steps}) and total_steps >= 1")
        self.peak_lr, self.end_lr = float(peak_lr), float(end_lr)
        self.total_steps, self.warmup_steps = int(total_steps), int(warmup_steps)

    def __call__(self, step: int) -> float:
        """The learning rate of the step taken after `step` steps."""
        if step < self.warmup_steps:
            return self.peak_lr * step / self.warmup_steps
        left = max(self.total_steps - step, 0) / max(self.total_steps - self.warmup_steps, 1)
        return self.end_lr + (self.peak_lr - self.end_lr) * left

    def __repr__(self) -> str:
        return (f"LinearDecay(peak_lr={self.peak_lr}, total_steps={self.total_steps}, "
                f"warmup_steps={self.warmup_steps}, end_lr={self.end_lr})")
