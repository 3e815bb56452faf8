"""The CPU backend's convolutions and pools: ONNX Runtime's Conv, ConvTranspose, MaxPool and
AveragePool (MLAS) through cached one-node sessions where it has a kernel for the dtype; the
numpy references (im2col + BLAS, windows folded tap by tap) for the rest.

Why ONNX Runtime (float32, 1 thread, medians of 15 alternating runs on a loaded 2-core Xeon
with AVX-512 VNNI and AMX): a 64x56x56 3x3 convolution at batch 1 took 9.3 ms with the
weight as a session input (what an eager call has), 2.0 ms with it an initializer (a jitted
graph's constant on the onnxruntime backend), against 17 ms for im2col + OpenBLAS in the
best layout; at batch 8 22 against 77 ms; the 3x224x224 7x7 stride-2 stem 11 against 13 ms
(36 against 109 ms at batch 8). MLAS packs the weight and builds the patches blockwise,
where numpy writes the whole im2col matrix first. A 1x1 convolution is one matrix product
and ties. A 3x3 stride-2 max pool of 64x112x112: 1.2 ms against 7 ms for numpy. ONNX
Runtime has no float64 Conv, ConvTranspose or AveragePool, nor bfloat16 kernels for these.

Prepacked weights: a convolution whose weight (and bias) arrays are read-only runs a session
with them as initializers, which MLAS prepacks once (1.1-1.6x faster a call than the weight
as an input, 1 thread), cached by the arrays' identity and dropped when they die. That
assumes a read-only array never changes: the cpu backend's jitted graphs mark their
constants so (`cpu_graph.freeze`; a graph writes only into buffers of its own, never into a
constant), and a numpy array shared with a hal Tensor (`hal.asarray` does not copy) must not
be written to while a graph that captured it lives. Writable weights (eager calls, values
computed inside a graph) are session inputs, read each call.

Sessions' intra-op pools do not spin between runs: ResNet-50 at batch 1 node by node with 2
threads on 2 shared cores took 3.6 s a call with spinning pools (one per session), 0.2-0.26
s without.
"""

from __future__ import annotations

import functools
import math
import weakref
from collections import OrderedDict

import numpy as np

import hal
from hal import dtypes as dt
from hal import ops

SESSIONS = 128  # one-node sessions kept (one per op, shapes, dtypes and params)
PACKED = 512  # sessions with a weight as initializer kept (a ResNet-50 has 53 convolutions)
PARALLEL_ELEMENTS = 1 << 16  # a session gets every core from a tensor of this size up
ON_ONNXRUNTIME = {"conv": (dt.float32, dt.float16), "conv_transpose": (dt.float32, dt.float16),
                  "max_pool": (dt.float32, dt.float16, dt.float64),
                  "avg_pool": (dt.float32, dt.float16)}
WEIGHTED = ("conv", "conv_transpose")  # (x, weight, bias): the weight can be prepacked


_packed: OrderedDict[tuple, object] = OrderedDict()  # (ids, shapes, params) -> session


@functools.lru_cache(maxsize=SESSIONS)
def _session(op: str, metas: tuple, params: tuple, out_shape: tuple, out_dtype):
    inputs = [m for m in metas if m is not None]
    refs, k = [], 0
    for m in metas:
        refs.append(None if m is None else ("input", k))
        k += m is not None
    return _one_node(op, inputs, tuple(refs), [], params, out_shape, out_dtype)


def _packed_session(op: str, x, weight, bias, params: tuple, out_shape: tuple, out_dtype):
    """The session of op on x with weight and bias as initializers, cached while they live."""
    key = (op, id(weight), id(bias), x.shape, x.dtype, params)
    session = _packed.get(key)
    if session is not None:
        _packed.move_to_end(key)
        return session
    cpu = hal.device("cpu")
    constants = [hal.Tensor.wrap(a, cpu) for a in (weight, bias) if a is not None]
    refs = (("input", 0), ("const", 0), None if bias is None else ("const", 1))
    session = _packed[key] = _one_node(op, [(x.shape, x.dtype)], refs, constants, params,
                                       out_shape, out_dtype)
    for array in (weight, bias):  # an id is unique only while its array lives
        if array is not None:
            weakref.finalize(array, _packed.pop, key, None)
    if len(_packed) > PACKED:
        _packed.popitem(last=False)
    return session


def _one_node(op: str, inputs: list, refs: tuple, constants: list, params: tuple,
              out_shape: tuple, out_dtype):
    import onnxruntime as ort

    from hal.compile.graph import Graph, Node

    from .onnxruntime.session import session_options

    graph = Graph(inputs, [Node(op, refs, dict(params), out_shape, out_dtype)], constants,
                  [("node", 0)])
    largest = max(math.prod(shape) for shape, _ in [*inputs, (out_shape, out_dtype)])
    threads = hal.settings.threads if largest >= PARALLEL_ELEMENTS else 1
    return ort.InferenceSession(hal.onnx.to_onnx(graph).SerializeToString(),
                                session_options(threads),
                                providers=["CPUExecutionProvider"])


def kernel(op: str):
    """The CPU kernel of op (numpy arrays in, one out): ONNX Runtime's for its dtypes, else
    the op's reference."""
    spec, dtypes = ops.spec(op), ON_ONNXRUNTIME[op]

    def run(*operands, out_shape, out_dtype, **params):
        present = [a for a in operands if a is not None]
        if operands[0].dtype not in dtypes or any(a.size == 0 for a in present):
            return spec.evaluate(*operands, **params)
        frozen = tuple(sorted(params.items()))
        if op in WEIGHTED and not any(a.flags.writeable for a in present[1:]):
            x, weight, *bias = operands
            session = _packed_session(op, x, weight, bias[0] if bias else None, frozen,
                                      tuple(out_shape), out_dtype)
            return session.run(None, {session.get_inputs()[0].name: np.ascontiguousarray(x)})[0]
        metas = tuple(None if a is None else (a.shape, a.dtype) for a in operands)
        session = _session(op, metas, frozen, tuple(out_shape), out_dtype)
        names = [i.name for i in session.get_inputs()]
        return session.run(None, dict(zip(names, map(np.ascontiguousarray, present))))[0]

    run.__name__ = run.__qualname__ = f"cpu_{op}"
    return run
