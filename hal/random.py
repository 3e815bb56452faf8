"""Seeded random tensors: drawn on the host with numpy's PCG64, then placed on the device.

The same seed gives the same values on every backend, so results compare across devices.
"""

from __future__ import annotations

import numpy as np

from .ops import shapes
from .runtime import dtypes as dt
from .runtime.errors import UnsupportedDType
from .runtime.registry import resolve_device
from .tensor import Tensor


def _generator(seed) -> np.random.Generator:
    return np.random.default_rng(seed)


def uniform(shape, *, low: float = 0.0, high: float = 1.0, seed=None, dtype=dt.float64,
            device=None) -> Tensor:
    """Uniform values in [low, high)."""
    _floating(dtype, "uniform")
    values = _generator(seed).uniform(low, high, shapes.as_shape(shape))
    return Tensor.from_host(values.astype(dt.dtype(dtype)), resolve_device(device))


def normal(shape, *, mean: float = 0.0, std: float = 1.0, seed=None, dtype=dt.float64,
           device=None) -> Tensor:
    """Normally distributed values; complex dtypes get independent real and imaginary parts."""
    d = _floating(dtype, "normal")
    rng = _generator(seed)
    values = rng.normal(mean, std, shapes.as_shape(shape))
    if dt.is_complex(d):
        values = values + 1j * rng.normal(0.0, std, values.shape)
    return Tensor.from_host(values.astype(d), resolve_device(device))


def integers(shape, low: int, high: int, *, seed=None, dtype=dt.int64, device=None) -> Tensor:
    """Integers in [low, high)."""
    d = dt.dtype(dtype)
    if not dt.is_integer(d):
        raise UnsupportedDType(f"integers: dtype {d.name} is not an integer dtype")
    values = _generator(seed).integers(low, high, shapes.as_shape(shape))
    return Tensor.from_host(values.astype(d), resolve_device(device))


def _floating(dtype, op: str) -> np.dtype:
    d = dt.dtype(dtype)
    if not (dt.is_floating(d) or dt.is_complex(d)):
        raise UnsupportedDType(f"{op}: dtype {d.name} is not a floating dtype")
    return d
