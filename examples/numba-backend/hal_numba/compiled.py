"""numba compilation on first use: one ufunc or loop per function and dtypes, cached on disk.

A kernel is compiled for exactly the dtypes it is called with (one explicit signature),
the first time it is called with them: importing the package compiles nothing, and a
process pays only for the dtypes it uses (~0.1 s each). `cache=True` keeps the machine
code in `__pycache__` beside these sources (or under NUMBA_CACHE_DIR), so later processes
load it instead (parallel loops excepted, see `loop`). Array arguments are C-contiguous;
inputs are typed read-only, which writable arrays match too.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable

import numba
import numpy as np
from numba import types

# numba's OpenMP threads spin for a while after each parallel loop (libgomp's active wait),
# keeping the cores from BLAS and the next kernels: an LM training step took 2.0 s, not
# 0.12 s, on 2 cores. They sleep unless the user chose; libgomp reads this when it loads,
# at the first parallel loop.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

# Elements below which a loop runs on one thread: waking numba's thread pool costs ~0.1-1 ms
# on a busy 2-core host, as much as such a loop takes on its own.
PARALLEL_MIN = 1 << 16


@functools.cache
def ufunc(fn: Callable, result: np.dtype, *operands: np.dtype) -> np.ufunc:
    """The numpy ufunc numba builds from the scalar function `fn` for one signature.

    numpy then broadcasts, walks strides and writes `out=`, as for its own ufuncs.
    """
    signature = numba.from_dtype(result)(*(numba.from_dtype(d) for d in operands))
    return numba.vectorize([signature], cache=True)(fn).ufunc


def array(dtype: np.dtype, ndim: int, *, readonly: bool = False) -> types.Array:
    """The numba type of a C-contiguous array (read-only for inputs)."""
    return types.Array(numba.from_dtype(dtype), ndim, "C", readonly=readonly)


def loop(fn: Callable, *arguments: types.Type, parallel: bool = False) -> Callable:
    """`fn(*arguments) -> None` compiled by numba.njit: it writes its result into an output
    argument. Division follows numpy (inf and NaN, no ZeroDivisionError). With `parallel`
    its numba.prange loops run on numba's threads, compiled once per process: numba's disk
    cache keys on the signature, not the flags, and would hand back the serial loop."""
    return numba.njit(types.void(*arguments), cache=not parallel, parallel=parallel,
                      error_model="numpy")(fn)
