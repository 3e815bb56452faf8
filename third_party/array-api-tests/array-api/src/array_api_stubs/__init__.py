"""The 2023.12 signature stubs of the Array API standard (the only version vendored here)."""

from . import _2023_12
