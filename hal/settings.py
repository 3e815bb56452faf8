"""One settings object that reads every HAL_* environment variable."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from .errors import HalError

FALLBACK_POLICIES = ("error", "warn", "allow")


@dataclass
class Settings:
    """What the environment asks of hal; `Settings.from_env()` is the only reader of HAL_*."""

    backends: tuple[str, ...] = ()  # HAL_BACKENDS=a,b: preferred order (first = default device)
    fallback: str = "warn"  # HAL_FALLBACK=error|warn|allow: ops a backend lacks, run on the CPU
    device: str | None = None  # HAL_DEVICE=opencl:0: the default device
    cache_dir: Path = field(default_factory=lambda: Path.home() / ".cache" / "hal")  # HAL_CACHE_DIR

    @classmethod
    def from_env(cls, environ=None) -> Settings:
        """Read the HAL_* variables; a bad value raises HalError naming the variable."""
        env = os.environ if environ is None else environ
        fallback = env.get("HAL_FALLBACK", "warn").strip().lower() or "warn"
        if fallback not in FALLBACK_POLICIES:
            raise HalError(
                f"HAL_FALLBACK={fallback!r} is not a policy; set it to one of "
                f"{', '.join(FALLBACK_POLICIES)}"
            )
        backends = tuple(b.strip() for b in env.get("HAL_BACKENDS", "").split(",") if b.strip())
        cache = env.get("HAL_CACHE_DIR")
        return cls(
            backends=backends,
            fallback=fallback,
            device=env.get("HAL_DEVICE") or None,
            cache_dir=Path(cache).expanduser() if cache else cls().cache_dir,
        )


settings = Settings.from_env()
