"""One settings object that reads every HAL_* environment variable."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from .errors import HalError

FALLBACK_POLICIES = ("error", "warn", "allow")
SWITCH = {"1": True, "true": True, "on": True, "yes": True,
          "0": False, "false": False, "off": False, "no": False}


@dataclass
class Settings:
    """What the environment asks of hal; `Settings.from_env()` is the only reader of HAL_*."""

    backends: tuple[str, ...] = ()  # HAL_BACKENDS=a,b: preferred order (first = default device)
    fallback: str = "warn"  # HAL_FALLBACK=error|warn|allow: ops a backend lacks, run on the CPU
    device: str | None = None  # HAL_DEVICE=opencl:0: the default device
    cache_dir: Path = field(default_factory=lambda: Path.home() / ".cache" / "hal")  # HAL_CACHE_DIR
    probe_timeout: float = 30.0  # HAL_PROBE_TIMEOUT: seconds a plugin may take to load or probe
    capture: bool = True  # HAL_CAPTURE=0: jitted graphs are never recorded as device graphs
    threads: int = field(default_factory=lambda: default_threads())  # HAL_THREADS: per library
    invalid: str | None = None  # why the environment was refused (the defaults stand in)

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
        timeout = env.get("HAL_PROBE_TIMEOUT", "").strip() or str(cls.probe_timeout)
        if not _positive_number(timeout):
            raise HalError(f"HAL_PROBE_TIMEOUT={timeout!r} is not a positive number of seconds; "
                           "unset it or give e.g. 30")
        capture = env.get("HAL_CAPTURE", "1").strip().lower() or "1"
        if capture not in SWITCH:
            raise HalError(f"HAL_CAPTURE={capture!r} is not a switch; set it to 1 (capture "
                           "jitted graphs where the backend can) or 0 (never)")
        threads = env.get("HAL_THREADS", "").strip() or str(default_threads(env))
        if not threads.isdigit() or int(threads) < 1:
            raise HalError(f"HAL_THREADS={threads!r} is not a thread count; set it to a whole "
                           f"number >= 1 (this machine has {usable_cores()} usable cores) or "
                           "unset it")
        return cls(
            backends=backends,
            fallback=fallback,
            device=env.get("HAL_DEVICE") or None,
            cache_dir=Path(cache).expanduser() if cache else cls().cache_dir,
            probe_timeout=float(timeout),
            capture=SWITCH[capture],
            threads=int(threads),
        )

    @classmethod
    def from_env_or_defaults(cls) -> Settings:
        """The environment's settings, or the defaults carrying why the environment is bad.

        hal must import even when a HAL_* variable is bad, so that the command line can
        say so in one line; `check()` raises the reason when hal is first used.
        """
        try:
            return cls.from_env()
        except HalError as e:
            return cls(invalid=str(e))

    def check(self) -> None:
        """HalError if the environment's HAL_* variables were refused."""
        if self.invalid is not None:
            raise HalError(self.invalid)


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask), not the machine's count."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


# How MPI launchers tell a process how many ranks share its node (MPICH/Hydra, Open MPI).
LOCAL_RANKS_VARIABLES = ("MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE")


def default_threads(environ=None) -> int:
    """The usable cores shared among the MPI ranks on this node (1 rank outside MPI).

    Each rank taking every core multiplies the threads: two ranks on two cores, each with
    two BLAS threads that spin while they wait, made a training step 10-30x slower."""
    env = os.environ if environ is None else environ
    ranks = next((int(env[v]) for v in LOCAL_RANKS_VARIABLES
                  if env.get(v, "").strip().isdigit() and int(env[v]) > 0), 1)
    return max(1, usable_cores() // ranks)


def _positive_number(text: str) -> bool:
    try:
        return float(text) > 0
    except ValueError:
        return False


settings = Settings.from_env_or_defaults()
