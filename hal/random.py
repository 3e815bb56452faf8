"""Seeded random tensors: drawn on the host with numpy's PCG64, then placed on the device.

The same seed gives the same values on every backend, so results compare across devices.
Arguments are checked before anything is drawn, and the draw's host memory (float64
values, twice for complex) before it is allocated: a shape that cannot fit the device or
the host is a HalOutOfMemory.
"""

from __future__ import annotations

import math

import numpy as np

from .ops import arguments, shapes
from .runtime import dtypes as dt
from .runtime.errors import DomainError, UnsupportedDType
from .runtime.registry import resolve_device
from .tensor import Tensor


def uniform(shape, *, low: float = 0.0, high: float = 1.0, seed=None, dtype=dt.float64,
            device=None) -> Tensor:
    """Uniform values in [low, high)."""
    d = _floating(dtype, "uniform")
    low, high = arguments.real("uniform", "low", low), arguments.real("uniform", "high", high)
    _ordered("uniform", low, high)
    if not math.isfinite(high - low):
        raise DomainError(f"uniform: high - low ({high} - {low}) overflows float64; give a "
                          "narrower range")
    rng, target, shape = _draw("uniform", shape, d, seed, device)
    return Tensor.from_host(rng.uniform(low, high, shape).astype(d), target)


def normal(shape, *, mean: float = 0.0, std: float = 1.0, seed=None, dtype=dt.float64,
           device=None) -> Tensor:
    """Normally distributed values; complex dtypes get independent real and imaginary parts."""
    d = _floating(dtype, "normal")
    mean = arguments.real("normal", "mean", mean)
    std = arguments.real("normal", "std", std)
    if std < 0:
        raise DomainError(f"normal: std must be 0 or more, got {std}")
    rng, target, shape = _draw("normal", shape, d, seed, device)
    values = rng.normal(mean, std, shape)
    if dt.is_complex(d):
        values = values + 1j * rng.normal(0.0, std, values.shape)
    return Tensor.from_host(values.astype(d), target)


def integers(shape, low: int, high: int, *, seed=None, dtype=dt.int64, device=None) -> Tensor:
    """Integers in [low, high); both ends must lie in the dtype's range."""
    d = dt.dtype(dtype)
    if not dt.is_integer(d):
        raise UnsupportedDType(f"integers: dtype {d.name} is not an integer dtype")
    low = arguments.integer("integers", "low", low)
    high = arguments.integer("integers", "high", high)
    _ordered("integers", low, high)
    arguments.within("integers", "low", low, d)
    arguments.within("integers", "the largest value", high - 1, d)
    rng, target, shape = _draw("integers", shape, d, seed, device)
    return Tensor.from_host(rng.integers(low, high, shape).astype(d), target)


def _draw(op: str, shape, d: np.dtype, seed, device):
    """(generator, device, shape) once the shape is valid and the draw fits: the host holds
    it as float64 or int64 values (complex: twice), the device as d."""
    shape = shapes.as_shape(op, shape)
    target = resolve_device(device)
    staged = math.prod(shape) * (16 if dt.is_complex(d) else 8)
    target.check_fits(shape, d, op, host_bytes=staged)
    return arguments.generator(op, seed), target, shape


def _ordered(op: str, low, high) -> None:
    if not low < high:
        raise DomainError(f"{op}: low must be below high, got low={low}, high={high}")


def _floating(dtype, op: str) -> np.dtype:
    d = dt.dtype(dtype)
    if not (dt.is_floating(d) or dt.is_complex(d)):
        raise UnsupportedDType(f"{op}: dtype {d.name} is not a floating dtype")
    return d
