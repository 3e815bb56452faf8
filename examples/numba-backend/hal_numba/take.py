"""take (numpy.take, an embedding's lookup) as one numba loop that copies rows of words.

x becomes a C-contiguous (outer, n, inner) block, n the axis taken along (the flattened
tensor when axis is None); each index picks one (inner,) row per outer slice, a negative
index counting from the end. Selection copies bits, so every dtype runs as unsigned words
of its size (complex128 as two), and one loop per word size and index dtype serves all.
Indices out of range never reach the kernel: the op's domain check refuses them first.
"""

from __future__ import annotations

import functools
import math

import numba
import numpy as np

from . import compiled
from .table import kernels


def gather(x, indices, out):
    n, m, inner = x.shape[1], indices.size, x.shape[2]
    for job in numba.prange(x.shape[0] * m):
        o, j = job // m, job % m
        i = np.int64(indices[j])
        if i < 0:
            i += n
        for k in range(inner):
            out[o, j, k] = x[o, i, k]


@functools.cache
def _gather(word: np.dtype, index: np.dtype, parallel: bool):
    return compiled.loop(gather, compiled.array(word, 3, readonly=True),
                         compiled.array(index, 1, readonly=True), compiled.array(word, 3),
                         parallel=parallel)


def _words(block: np.ndarray) -> np.ndarray:
    """A C-contiguous 3-d block as unsigned words of its itemsize (8 bytes at most)."""
    return block.view(f"u{min(block.dtype.itemsize, 8)}")


@kernels.register("take")  # every dtype: selection copies bits
def _take(device, x, indices, *, axis=None, out_shape, out_dtype):
    if axis is None:
        x, axis = x.reshape(-1), 0
    axis = axis % x.ndim
    block = (math.prod(x.shape[:axis]), x.shape[axis], math.prod(x.shape[axis + 1:]))
    source = _words(np.ascontiguousarray(x).reshape(block))
    out = device.empty(out_shape, out_dtype)
    rows = _words(out.reshape(block[0], indices.size, block[2]))
    _gather(source.dtype, indices.dtype, out.size >= compiled.PARALLEL_MIN)(
        source, np.ascontiguousarray(indices).reshape(-1), rows)
    return out

