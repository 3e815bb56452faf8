"""Creating tensors on a device: from data, constants, ranges and seeded random numbers."""

from __future__ import annotations

import math

import numpy as np

from .functions import astype
from .ops import arguments, shapes
from .runtime import dtypes as dt
from .runtime.errors import ArgumentError, DomainError, HalError, UnsupportedDType
from .runtime.registry import resolve_device
from .tensor import Tensor, tensor_argument


def asarray(obj, /, *, dtype=None, device=None, copy: bool | None = None) -> Tensor:
    """A tensor from a Tensor, numpy array, DLPack object, nested sequence or scalar.

    Python floats default to float64 and ints to int64 (numpy's rules). copy=True always
    copies (on the same device unless device is given); copy=None copies only where needed
    (another dtype or device; a host device shares a numpy array); copy=False never copies
    and raises ArgumentError where a copy is needed.
    """
    copy = copy if copy is None else arguments.flag("asarray", "copy", copy)
    target = resolve_device(device) if device is not None else None
    if isinstance(obj, Tensor):
        return _from_tensor(obj, dt.dtype(dtype) if dtype is not None else obj.dtype,
                            target or obj.device, copy)
    try:
        host = np.array(obj, dtype=dt.dtype(dtype) if dtype is not None else None,
                        copy=True if copy else None)
    except (TypeError, ValueError, OverflowError) as e:
        raise HalError(f"asarray: cannot make a tensor of {type(obj).__name__}: {e}") from None
    if dtype is None and host.dtype not in dt.ALL:
        host = host.astype(_nearest(host))
    out = Tensor.from_host(host, target or resolve_device(None))
    if copy is False and not (isinstance(out.native, np.ndarray)
                              and np.may_share_memory(out.native, obj)):
        raise _needs_copy(f"a {type(obj).__name__} of shape {host.shape}", out.dtype,
                          out.device)
    return out


def _from_tensor(x: Tensor, dtype: np.dtype, target, copy: bool | None) -> Tensor:
    """asarray of a Tensor: x itself, a copy, or x converted to dtype on target."""
    if dtype == x.dtype and target is x.device:
        return _copy(x) if copy else x
    if copy is False:
        raise _needs_copy(f"the {x.dtype} tensor {x.shape} on {x.device.name}", dtype, target)
    return astype(x.to(target), dtype)


def _copy(x: Tensor) -> Tensor:
    """A new tensor with x's values on x's device."""
    return Tensor.from_host(np.array(x.numpy()), x.device)


def _needs_copy(what: str, dtype: np.dtype, device) -> ArgumentError:
    return ArgumentError(
        f"asarray: copy=False, but {what} cannot be shared as a {dtype} tensor on "
        f"{device.name}: it needs a copy; pass copy=None to copy only where needed")


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
    copy = copy if copy is None else arguments.flag("from_dlpack", "copy", copy)
    target = resolve_device(device)
    try:
        native = target.from_dlpack(x)
    except (AttributeError, TypeError, BufferError, ValueError, RuntimeError) as e:
        raise ArgumentError(
            f"from_dlpack: {type(x).__name__} cannot be imported through DLPack on "
            f"{target.name} ({type(e).__name__}: {e}); pass an object with __dlpack__ of a "
            "DLPack dtype, or use hal.asarray") from None
    out = Tensor.wrap(native, target)
    return _copy(out) if copy else out


def full(shape, fill_value, *, dtype=None, device=None) -> Tensor:
    """A tensor of one value (dtype from the value when not given)."""
    return _filled("full", shape, fill_value, dtype, device)


def _filled(op: str, shape, fill_value, dtype, device) -> Tensor:
    """full under the name of the op the caller called (zeros, ones_like, ...)."""
    d = dt.dtype(dtype) if dtype is not None else dt.default_dtype(fill_value)
    target, shape = resolve_device(device), shapes.as_shape(op, shape)
    value = arguments.fill_value(op, fill_value, d)
    target.check_fits(shape, d, op)  # before numpy builds the host array
    return Tensor.from_host(np.full(shape, value, dtype=d), target)


def zeros(shape, *, dtype=None, device=None) -> Tensor:
    """A tensor of zeros (float64 unless dtype is given)."""
    return _filled("zeros", shape, 0, dt.float64 if dtype is None else dtype, device)


def ones(shape, *, dtype=None, device=None) -> Tensor:
    """A tensor of ones (float64 unless dtype is given)."""
    return _filled("ones", shape, 1, dt.float64 if dtype is None else dtype, device)


def empty(shape, *, dtype=None, device=None) -> Tensor:
    """A tensor whose values are unspecified by the Array API; hal's are zeros (float64 default)."""
    return _filled("empty", shape, 0, dt.float64 if dtype is None else dtype, device)


def empty_like(x: Tensor, /, *, dtype=None, device=None) -> Tensor:
    """A tensor of x's shape, dtype and device unless given; its values (zeros) are unspecified."""
    return _like("empty_like", x, 0, dtype, device)


def zeros_like(x: Tensor, /, *, dtype=None, device=None) -> Tensor:
    """Zeros with x's shape, dtype and device unless given."""
    return _like("zeros_like", x, 0, dtype, device)


def ones_like(x: Tensor, /, *, dtype=None, device=None) -> Tensor:
    """Ones with x's shape, dtype and device unless given."""
    return _like("ones_like", x, 1, dtype, device)


def full_like(x: Tensor, /, fill_value, *, dtype=None, device=None) -> Tensor:
    """fill_value with x's shape, dtype and device unless given."""
    return _like("full_like", x, fill_value, dtype, device)


def _like(op: str, x, fill_value, dtype, device) -> Tensor:
    x = tensor_argument(op, x)
    return _filled(op, x.shape, fill_value, dtype if dtype is not None else x.dtype,
                   device if device is not None else x.device)


def arange(start, /, stop=None, step=1, *, dtype=None, device=None) -> Tensor:
    """Evenly spaced values in [start, stop), as numpy.arange."""
    start, step = arguments.real("arange", "start", start), arguments.real("arange", "step", step)
    if stop is None:
        start, stop = 0, start
    else:
        stop = arguments.real("arange", "stop", stop)
    if step == 0:
        raise DomainError("arange: step must not be 0")
    if all(isinstance(v, int) for v in (start, stop, step)):
        count, d = max(-((start - stop) // step), 0), dt.int64
    else:
        span = (stop - start) / step
        if not math.isfinite(span):
            raise DomainError(f"arange: ({stop} - {start}) / {step} values overflow; give a "
                              "narrower range or a larger step")
        count, d = max(math.ceil(span), 0), dt.float64
    d = d if dtype is None else dt.dtype(dtype)
    if dt.is_bool(d):
        raise UnsupportedDType("arange: dtype bool has no ranges; use an integer dtype")
    if count:
        arguments.within("arange", "start", start, d)
        arguments.within("arange", "the last value", start + (count - 1) * step, d)
    target = resolve_device(device)
    target.check_fits((count,), d, "arange")
    host = np.arange(start, stop, step, dtype=d) if count else np.empty(0, d)
    return Tensor.from_host(host, target)


def linspace(start, stop, /, num: int, *, endpoint: bool = True, dtype=None,
             device=None) -> Tensor:
    """num evenly spaced values from start to stop, as numpy.linspace."""
    ends = [_end(name, value) for name, value in (("start", start), ("stop", stop))]
    num = arguments.integer("linspace", "num", num, minimum=0)
    endpoint = arguments.flag("linspace", "endpoint", endpoint)
    complex_ends = any(isinstance(e, complex) for e in ends)
    typed = [e for e in (start, stop) if isinstance(e, np.generic)]  # numpy's scalars count
    d = dt.dtype(dtype if dtype is not None else np.result_type(*typed, 1j if complex_ends
                                                                 else 1.0))
    if complex_ends and not dt.is_complex(d):
        raise ArgumentError(f"linspace: complex ends {start!r}, {stop!r} do not fit the real "
                            f"dtype {d.name}; give a complex dtype")
    for name, value in zip(("start", "stop"), ends):
        arguments.within("linspace", name, value, d)
    if not dt.is_integer(d):  # 2**70 is a float end, not an object array
        ends = [e if isinstance(e, complex) else float(e) for e in ends]
    target = resolve_device(device)
    target.check_fits((num,), d, "linspace", host_bytes=num * 16)
    host = np.linspace(*ends, num, endpoint=endpoint, dtype=d)
    return Tensor.from_host(host, target)


def _end(name: str, value) -> float | complex:
    """A finite real or complex end of a linspace."""
    if isinstance(value, (complex, np.complexfloating)):
        return complex(arguments.real("linspace", f"the real part of {name}", value.real),
                       arguments.real("linspace", f"the imaginary part of {name}", value.imag))
    return arguments.real("linspace", name, value)


def eye(n_rows: int, n_cols: int | None = None, /, *, k: int = 0, dtype=None,
        device=None) -> Tensor:
    """The n_rows x n_cols matrix with ones on diagonal k (float64 unless dtype is given)."""
    n_rows = arguments.integer("eye", "n_rows", n_rows, minimum=0)
    n_cols = n_rows if n_cols is None else arguments.integer("eye", "n_cols", n_cols, minimum=0)
    k = arguments.integer("eye", "k", k)
    d = dt.float64 if dtype is None else dt.dtype(dtype)
    target = resolve_device(device)
    target.check_fits((n_rows, n_cols), d, "eye")
    return Tensor.from_host(np.eye(n_rows, n_cols, k=k, dtype=d), target)
