"""Creating tensors on a device: from data, constants, ranges and seeded random numbers."""

from __future__ import annotations

import numpy as np

from .functions import astype
from .ops import shapes
from .runtime import dtypes as dt
from .runtime.errors import HalError, UnsupportedDType
from .runtime.registry import resolve_device
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
            out = astype(out, dtype)
        return out
    try:
        host = np.array(obj, dtype=dt.dtype(dtype) if dtype is not None else None,
                        copy=True if copy else None)
    except (TypeError, ValueError) as e:
        raise HalError(f"asarray: cannot make a tensor of {type(obj).__name__}: {e}") from None
    if dtype is None and host.dtype not in dt.ALL:
        host = host.astype(_nearest(host))
    return Tensor.from_host(host, target or resolve_device(None))


def _nearest(host: np.ndarray) -> np.dtype:
    """The hal dtype that holds an array of a dtype outside the set exactly, or UnsupportedDType."""
    d = host.dtype
    if d.kind == "U" or d.kind == "O" or d.kind == "S":
        return dt.dtype(d)  # raises, naming the dtype
    if d.kind == "u":
        if d.itemsize == 8 and host.size and host.max() > np.iinfo(np.int64).max:
            raise UnsupportedDType(
                f"asarray: {d.name} values up to {host.max()} do not fit int64, hal's widest "
                "integer; pass float64 data or split the values"
            )
        return dt.int64
    if d.kind == "i":
        return dt.int64 if d.itemsize > 4 else dt.int32
    return dt.dtype(d)


def from_dlpack(x, /, *, device=None, copy: bool | None = None) -> Tensor:
    """A tensor sharing memory with a DLPack producer where the device allows, else copying it;
    copy=True always copies (so later writes by the producer cannot show through)."""
    target = resolve_device(device)
    out = Tensor.wrap(target.from_dlpack(x), target)
    return Tensor.from_host(np.array(out.numpy()), target) if copy else out


def full(shape, fill_value, *, dtype=None, device=None) -> Tensor:
    """A tensor of one value (dtype from the value when not given)."""
    d = dt.dtype(dtype) if dtype is not None else dt.default_dtype(fill_value)
    target, shape = resolve_device(device), shapes.as_shape(shape)
    target.check_fits(shape, d, "full")  # before numpy builds the host array
    return Tensor.from_host(np.full(shape, fill_value, dtype=d), target)


def zeros(shape, *, dtype=None, device=None) -> Tensor:
    """A tensor of zeros (float64 unless dtype is given)."""
    return full(shape, 0, dtype=dt.float64 if dtype is None else dtype, device=device)


def ones(shape, *, dtype=None, device=None) -> Tensor:
    """A tensor of ones (float64 unless dtype is given)."""
    return full(shape, 1, dtype=dt.float64 if dtype is None else dtype, device=device)


def empty(shape, *, dtype=None, device=None) -> Tensor:
    """A tensor whose values are unspecified by the Array API; hal's are zeros (float64 default)."""
    return zeros(shape, dtype=dtype, device=device)


def empty_like(x: Tensor, /, *, dtype=None, device=None) -> Tensor:
    """A tensor of x's shape, dtype and device unless given; its values (zeros) are unspecified."""
    return zeros_like(x, dtype=dtype, device=device)


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


def eye(n_rows: int, n_cols: int | None = None, /, *, k: int = 0, dtype=None,
        device=None) -> Tensor:
    """The n_rows x n_cols matrix with ones on diagonal k (float64 unless dtype is given)."""
    d = dt.float64 if dtype is None else dt.dtype(dtype)
    return Tensor.from_host(np.eye(n_rows, n_cols, k=k, dtype=d), resolve_device(device))
