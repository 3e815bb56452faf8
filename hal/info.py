"""The Array API inspection namespace: `hal.__array_namespace_info__()`."""

from __future__ import annotations

from .runtime import dtypes as dt
from .runtime import registry

_STANDARD = {"bool", "int8", "uint8", "int32", "int64", "float32", "float64", "complex64",
             "complex128"}  # hal's dtypes that the Array API standard names


class ArrayNamespaceInfo:
    """What this namespace offers: devices, dtypes, default dtypes and capabilities."""

    def capabilities(self) -> dict:
        """Optional features: boolean indexing and data-dependent shapes are not supported."""
        return {"boolean indexing": False, "data-dependent shapes": False}

    def default_device(self):
        """The device new tensors go to: HAL_DEVICE, else the first of HAL_BACKENDS that
        opens, else cpu:0."""
        return registry.default_device()

    def devices(self) -> list:
        """Every device of every available backend (each is opened)."""
        return [registry.resolve_device(n) for n in registry.devices()]

    def default_dtypes(self, *, device=None) -> dict:
        """The dtypes of Python scalars and of indices: float64, complex128, int64."""
        return {"real floating": dt.float64, "complex floating": dt.complex128,
                "integral": dt.int64, "indexing": dt.int64}

    def dtypes(self, *, device=None, kind=None) -> dict:
        """name -> dtype of the Array API's dtypes of a kind that a device holds (hal's
        float16 and bfloat16 are outside the standard, so not listed)."""
        target = registry.resolve_device(device)
        return {d.name: d for d in dt.ALL if d.name in _STANDARD and target.supports_dtype(d)
                and (kind is None or dt.isdtype(d, kind))}

def __array_namespace_info__() -> ArrayNamespaceInfo:
    """The Array API inspection object."""
    return ArrayNamespaceInfo()
