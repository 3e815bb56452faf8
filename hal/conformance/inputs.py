"""What the strategies draw with: the Case record, arrays of a dtype with its special values
and large magnitudes, the operands passed as strided views, shapes and axes."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import IntEnum

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from ..runtime import dtypes as dt


@dataclass
class Case:
    """One drawn input: operands, params, and operands passed as strided views."""

    args: list
    params: dict = field(default_factory=dict)
    views: tuple[int, ...] = ()
    origin: str = ""  # an expression that rebuilds the case (repros of large inputs use it)


SMALL_SIDES = dict(min_side=0, max_side=5)  # axes of small shapes, empty and size-1 ones too


def small_shapes(min_dims: int = 0):
    """Shapes of min_dims to 3 axes of 0 to 5 elements."""
    return hnp.array_shapes(min_dims=min_dims, max_dims=3, **SMALL_SIDES)


class Reach(IntEnum):
    """How far beyond [lo, hi] the values drawn for an op reach; each adds to the one before.

    BEYOND_EXP: +-80 and +-1000, past exp's range (exp(80) overflows float16, exp(1000)
    every float): a softmax without the max subtracted, or sigmoid/tanh as a ratio of
    exponentials, gives inf/inf = NaN there. FLOAT_MAX: the float dtype's largest finite
    values, where IEEE arithmetic fixes the result (inf on overflow, exact comparisons and
    selections). INT_RANGE: an integer dtype's full range, for the exact ops.
    """

    NONE = 0
    BEYOND_EXP = 1
    FLOAT_MAX = 2
    INT_RANGE = 3


def big_values(reach: Reach, d: np.dtype) -> tuple:
    """The large magnitudes an op of this reach must get right on dtype d, beside [lo, hi]."""
    if dt.is_integer(d):
        info = np.iinfo(d)
        return (int(info.min), int(info.max)) if reach >= Reach.INT_RANGE else ()
    if dt.is_bool(d) or dt.is_complex(d) or reach < Reach.BEYOND_EXP:
        return ()
    top = dt.finfo(d).max  # np.finfo refuses bfloat16 on some numpy versions
    return (80.0, -80.0, 1000.0, -1000.0) + ((top, -top) if reach >= Reach.FLOAT_MAX else ())


def _elements(d: np.dtype, *, special: bool, big: tuple = (), lo: float = -10, hi: float = 10):
    if dt.is_bool(d):
        return st.booleans()
    if dt.is_integer(d):
        info = np.iinfo(d)
        within = st.integers(max(info.min, int(lo)), min(info.max, int(hi)))
        return st.one_of(within, st.sampled_from(big)) if big else within
    if dt.is_complex(d):
        part = st.floats(float(np.float32(lo)), float(np.float32(hi)), width=32)
        return st.builds(complex, part, part)
    width = 16 if d == dt.float16 else 32
    exact = np.float16 if width == 16 else np.float32
    finite = st.floats(float(exact(lo)), float(exact(hi)), width=width)
    extra = ([math.nan, math.inf, -math.inf, 0.0, -0.0] if special else []) + list(big)
    return st.one_of(finite, st.sampled_from(extra)) if extra else finite


def arrays(d: np.dtype, shape, *, special=False, big=(), lo=-10, hi=10):
    """Arrays of dtype d and shape (bfloat16 drawn as float32, then rounded).

    special: NaN, inf and signed zeros drawn too; big: values drawn besides those in
    [lo, hi] (see `big_values`).
    """
    draw_dtype = dt.float32 if d == dt.bfloat16 else d
    elements = _elements(d, special=special, big=big, lo=lo, hi=hi)
    strategy = hnp.arrays(draw_dtype, shape, elements=elements)
    return strategy.map(lambda a: a.astype(d)) if d == dt.bfloat16 else strategy


def strided_views(n: int):
    """Which of n operands to pass as strided views (the kit slices them on the device)."""
    return st.lists(st.booleans(), min_size=n, max_size=n).map(
        lambda flags: tuple(i for i, f in enumerate(flags) if f))


def axis_of(draw, ndim: int, *, optional: bool):
    """An axis of an ndim-d tensor, negative or not; None too when optional."""
    axis = draw(st.integers(-ndim, ndim - 1))
    return None if optional and draw(st.booleans()) else axis
