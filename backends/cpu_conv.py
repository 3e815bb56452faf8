"""The CPU backend's convolution: ONNX Runtime's Conv (MLAS) through a cached one-node
session for float32 and float16; the numpy reference (im2col + BLAS) for the rest.

Why ONNX Runtime: on ResNet-50 layers (float32, 1 thread, a loaded 2-core Xeon with
AVX-512) its Conv took 1.8 ms for a 64x56x56 3x3 layer at batch 1 and 5.0 ms for the
3x224x224 7x7 stride-2 stem, against 15.7 and 12.6 ms for the best im2col + OpenBLAS
layout (the reference's) and 28 and 22 ms for patches-times-weight; at batch 8 37 against
116 ms. MLAS packs the weight and computes the patches blockwise, so no im2col matrix is
written in full. Only 1x1 convolutions are a plain matrix product, where the two tie.
ONNX Runtime has no float64 Conv, and hal.onnx exports bfloat16 without a kernel for it.
"""

from __future__ import annotations

import functools
import math

import numpy as np

import hal
from hal import dtypes as dt
from hal import ops

SESSIONS = 128  # one-node sessions kept (one per shape, dtype and params)
PARALLEL_ELEMENTS = 1 << 16  # a session gets every core from a tensor of this size up
ON_ONNXRUNTIME = (dt.float32, dt.float16)


@functools.lru_cache(maxsize=SESSIONS)
def _session(metas: tuple, params: tuple, out_shape: tuple, out_dtype):
    import onnxruntime as ort

    from hal.compile.graph import Graph, Node

    inputs = [m for m in metas if m is not None]
    refs, k = [], 0
    for m in metas:
        refs.append(None if m is None else ("input", k))
        k += m is not None
    graph = Graph(inputs, [Node("conv", tuple(refs), dict(params), out_shape, out_dtype)], [],
                  [("node", 0)])
    largest = max(math.prod(shape) for shape, _ in [*inputs, (out_shape, out_dtype)])
    options = ort.SessionOptions()
    options.intra_op_num_threads = hal.settings.threads if largest >= PARALLEL_ELEMENTS else 1
    options.log_severity_level = 4
    session = ort.InferenceSession(hal.onnx.to_onnx(graph).SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    return session, names


def conv(x, weight, bias=None, *, out_shape, out_dtype, **params):
    """conv on numpy arrays: ONNX Runtime's Conv for float32/float16, else the reference."""
    if x.dtype not in ON_ONNXRUNTIME or x.size == 0 or weight.size == 0:
        return ops.spec("conv").evaluate(x, weight, bias, **params)
    operands = (x, weight, bias)
    metas = tuple(None if a is None else (a.shape, a.dtype) for a in operands)
    session, names = _session(metas, tuple(sorted(params.items())), tuple(out_shape),
                              out_dtype)
    feeds = dict(zip(names, (np.ascontiguousarray(a) for a in operands if a is not None)))
    return session.run(None, feeds)[0]
