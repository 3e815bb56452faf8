"""Tensor: a device-native array with its shape, dtype and device; immutable, eager."""

from __future__ import annotations

import math

import numpy as np

from .ops import shapes
from .runtime import dtypes as dt
from .runtime.errors import ArgumentError, DeviceError, HalError, ShapeError, UnsupportedDType
from .runtime.registry import resolve_device


class Tensor:
    """An n-d array on a hal device. Ops return new tensors; a tensor is never changed."""

    __slots__ = ("__weakref__", "device", "donated", "dtype", "native", "shape")
    __hash__ = None  # elementwise ==, as in numpy and the Array API
    __array_priority__ = 1000  # numpy defers binary operators to Tensor

    @classmethod
    def wrap(cls, native, device) -> Tensor:
        """A tensor around a device-native array (no copy): how a backend hands back a result.

        `native` must be the device's own array type (what its kernels take and return:
        numpy, pyopencl.array, cupy, a hal.Buffer, ...); `tensor.native` is the way back.
        """
        t = object.__new__(cls)
        t.native = native
        t.device = device
        t.shape = native.shape  # a tuple for numpy, pyopencl, cupy and hal.Buffer
        t.dtype = native.dtype
        return t

    @classmethod
    def from_host(cls, array: np.ndarray, device) -> Tensor:
        """A tensor on `device` holding the numpy array (copied unless the device is the host)."""
        dtype = dt.dtype(array.dtype)
        device.check_dtype(dtype)
        shapes.check_rank("tensor", array.shape)
        return cls.wrap(device.upload(array), device)

    def donate(self, why: str) -> None:
        """Hand this tensor's memory over (hal.jit's donate_argnums): any later use of the
        tensor raises HalError(why)."""
        self.donated = why
        del self.native
        self.__class__ = _Spent

    # -- properties -------------------------------------------------------------------
    @property
    def ndim(self) -> int:
        """Number of axes."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """Number of elements."""
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        """Bytes of the elements."""
        return self.size * self.dtype.itemsize

    # -- conversion -------------------------------------------------------------------
    def numpy(self) -> np.ndarray:
        """The values as a host numpy array (a copy unless the device is the host)."""
        return self.device.download(self.native)

    def __array__(self, dtype=None, copy=None):
        out = self.numpy()
        return out if dtype is None else out.astype(dtype)

    def to(self, device) -> Tensor:
        """This tensor on another device (itself if it is there already)."""
        target = resolve_device(device)
        if target is self.device:
            return self
        return Tensor.from_host(self.numpy(), target)

    def item(self):
        """The value of a one-element tensor as a Python scalar."""
        if self.size != 1:
            raise ShapeError(f"item: needs a one-element tensor, shape is {self.shape}")
        return self.numpy().reshape(()).item()

    def tolist(self):
        """The values as nested Python lists."""
        return self.numpy().tolist()

    def _dlpack_source(self):
        native = self.native
        return np.asarray(native) if isinstance(native, np.generic) else native  # 0-d numpy

    def __dlpack__(self, **kwargs):
        fn = getattr(self._dlpack_source(), "__dlpack__", None)
        if fn is None:
            raise DeviceError(
                f"__dlpack__: {self.device.name} tensors cannot be shared through DLPack; "
                "use .numpy() for a host copy"
            )
        return fn(**kwargs)

    def __dlpack_device__(self):
        fn = getattr(self._dlpack_source(), "__dlpack_device__", None)
        if fn is None:
            raise DeviceError(f"__dlpack_device__: {self.device.name} tensors have no DLPack")
        return fn()

    def __bool__(self) -> bool:
        return bool(self.item())

    def __float__(self) -> float:
        return float(self._real_item("__float__"))

    def __int__(self) -> int:
        return int(self._real_item("__int__"))

    def _real_item(self, op: str):
        if dt.is_complex(self.dtype):
            raise UnsupportedDType(f"{op}: a {self.dtype.name} tensor has no real value; take "
                                   "hal.real or hal.abs first")
        return self.item()

    def __complex__(self) -> complex:
        return complex(self.item())

    def __index__(self) -> int:
        if not (dt.is_integer(self.dtype) or dt.is_bool(self.dtype)):
            raise HalError(f"__index__: a {self.dtype.name} tensor is not an integer index")
        return int(self.item())

    def __len__(self) -> int:
        if not self.shape:
            raise ShapeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __repr__(self) -> str:
        body = np.array2string(self.numpy(), separator=", ", prefix="tensor(")
        return f"tensor({body}, dtype={self.dtype.name}, device={self.device.name})"

    # -- indexing, operators and methods: bound by hal.functions (its METHODS table) ----
    def __setitem__(self, key, value):
        raise HalError(
            "tensors are immutable: build a new one with hal.where, hal.concat or hal.pad"
        )


class _Spent(Tensor):
    """A donated Tensor (what `Tensor.donate` turns one into): reading its memory raises the
    HalError saying why. Tensor itself has no __getattr__, which numpy would call for each
    attribute it probes in np.asarray(tensor) (4 us more)."""

    __slots__ = ()

    def __getattr__(self, name: str):
        if name == "native":
            raise HalError(self.donated)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")


def tensor_argument(op: str, x, name: str = "x") -> Tensor:
    """x itself when it is a Tensor, else a HalError naming the op and what x was."""
    if not isinstance(x, Tensor):
        raise ArgumentError(f"{op}: {name} must be a hal Tensor, got {type(x).__name__}; "
                            "hal.asarray makes one")
    return x
