"""matmul: the matrix product with numpy's batching and broadcasting."""

from __future__ import annotations

import numpy as np

from . import shapes
from .spec import NONBOOL, PRIMITIVE, declare


def _matmul_meta(a, b):
    return shapes.matmul("matmul", tuple(a.shape), tuple(b.shape)), a.dtype


def _matmul_bound(a, b):
    return np.abs(a) @ np.abs(b)


declare(
    "matmul", PRIMITIVE, "matmul", NONBOOL, np.matmul, _matmul_meta, promote=(0, 1),
    bound=_matmul_bound,
)
