"""The hal error hierarchy: every failure names the op, backend, dtype/shape and what to do."""

from __future__ import annotations


class HalError(Exception):
    """Base class of every error hal raises on purpose."""


class UnsupportedOp(HalError):
    """An op the backend (or the op set) does not provide."""


class UnsupportedDType(HalError, TypeError):
    """A dtype an op or a device does not accept."""


class ArgumentError(HalError, TypeError):
    """An argument of the wrong kind: a string where a number goes, a float for a count."""


class ShapeError(HalError, ValueError):
    """Shapes that do not fit the op (broadcasting, contraction, axes, sizes)."""


class DomainError(HalError, ValueError):
    """Operand values outside an op's domain (an integer to a negative integer power)."""


class DeviceError(HalError):
    """A device that failed, or tensors on devices that cannot be mixed."""


class KernelError(DeviceError):
    """A backend's kernel that raised, or returned a result of the wrong shape or dtype."""


class BackendUnavailable(HalError):
    """A backend that is unknown, not installed, or has no device here."""


class HalOutOfMemory(HalError, MemoryError):
    """A device allocation that does not fit, even after the cache was emptied."""


class FallbackRefused(HalError):
    """An op that would have to run on the CPU while HAL_FALLBACK=error."""


class FallbackWarning(UserWarning):
    """An op ran on the CPU because the device has no kernel for it (HAL_FALLBACK=warn)."""


class PluginWarning(UserWarning):
    """A backend plugin that could not be loaded; hal goes on without it."""
