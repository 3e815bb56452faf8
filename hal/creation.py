"""Creating tensors on a device: from data, constants, ranges and seeded random numbers."""

from __future__ import annotations

import numpy as np

from . import dtypes as dt
from .errors import HalError
from .registry import resolve_device
from .tensor import Tensor


def asarray(obj, /, *, dtype=None, device=None, copy: bool | None = None) -> Tensor:
    """A tensor from a Tensor, numpy array, DLPack object, nested sequence or scalar.

    Python floats default to float64 and ints to int64 (numpy's rules); on the host device
    a numpy array is shared, not copied, unless copy=True.
    """
    target = resolve_device(device) if device is not None else None
    if isinstance(obj, Tensor):
        out = obj if target is None else obj.to(target)
        if dtype is not None:
            from .functions import astype

            out = astype(out, dtype)
        return out
    try:
        host = np.array(obj, dtype=dt.dtype(dtype) if dtype is not None else None,
                        copy=True if copy else None)
    except (TypeError, ValueError) as e:
        raise HalError(f"asarray: cannot make a tensor of {type(obj).__name__}: {e}") from None
    if dtype is None and host.dtype not in dt.ALL:
        host = host.astype(_nearest(host.dtype))
    return Tensor.from_host(host, target or resolve_device(None))


def _nearest(d: np.dtype) -> np.dtype:
    """The hal dtype for a numpy dtype outside the set, or UnsupportedDType."""
    if d.kind == "U" or d.kind == "O" or d.kind == "S":
        return dt.dtype(d)  # raises, naming the dtype
    if d.kind == "u":
        return dt.int64
    if d.kind == "i":
        return dt.int64 if d.itemsize > 4 else dt.int32
    return dt.dtype(d)


def from_dlpack(x, /, *, device=None) -> Tensor:
    """A tensor sharing memory with a DLPack producer where the device allows, else copying it."""
    target = resolve_device(device)
    return Tensor._wrap(target.from_dlpack(x), target)


def full(shape, fill_value, *, dtype=None, device=None) -> Tensor:
    """A tensor of one value (dtype from the value when not given)."""
    d = dt.dtype(dtype) if dtype is not None else dt.default_dtype(fill_value)
    return Tensor.from_host(np.full(_shape(shape), fill_value, dtype=d), resolve_device(device))


def zeros(shape, *, dtype=dt.float64, device=None) -> Tensor:
    """A tensor of zeros."""
    return full(shape, 0, dtype=dtype, device=device)


def ones(shape, *, dtype=dt.float64, device=None) -> Tensor:
    """A tensor of ones."""
    return full(shape, 1, dtype=dtype, device=device)


def zeros_like(x: Tensor, /, *, dtype=None, device=None) -> Tensor:
    """Zeros with x's shape, dtype and device unless given."""
    return full(x.shape, 0, dtype=dtype or x.dtype, device=device or x.device)


def ones_like(x: Tensor, /, *, dtype=None, device=None) -> Tensor:
    """Ones with x's shape, dtype and device unless given."""
    return full(x.shape, 1, dtype=dtype or x.dtype, device=device or x.device)


def full_like(x: Tensor, /, fill_value, *, dtype=None, device=None) -> Tensor:
    """fill_value with x's shape, dtype and device unless given."""
    return full(x.shape, fill_value, dtype=dtype or x.dtype, device=device or x.device)


def arange(start, /, stop=None, step=1, *, dtype=None, device=None) -> Tensor:
    """Evenly spaced values in [start, stop), as numpy.arange."""
    host = np.arange(start, stop, step, dtype=dt.dtype(dtype) if dtype is not None else None)
    return asarray(host, device=device)


def linspace(start, stop, /, num: int, *, endpoint: bool = True, dtype=None,
             device=None) -> Tensor:
    """num evenly spaced values from start to stop, as numpy.linspace."""
    host = np.linspace(start, stop, num, endpoint=endpoint,
                       dtype=dt.dtype(dtype) if dtype is not None else None)
    return asarray(host, device=device)


def eye(n: int, m: int | None = None, /, *, dtype=dt.float64, device=None) -> Tensor:
    """The identity matrix (n x m)."""
    return Tensor.from_host(np.eye(n, m, dtype=dt.dtype(dtype)), resolve_device(device))


def _shape(shape) -> tuple:
    return (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(n) for n in shape)
