"""The CPU backend: numpy and scipy on host memory; the reference and the embedded default.

Every op has a kernel: the op's numpy reference by default, and faster library calls
where they exist (numpy ufuncs directly, FFTW plans (`cpu_fft`), a vectorised float32 erf
and GELU (`cpu_erf`; scipy.special.erf in float64), ONNX Runtime's convolutions and pools
(`cpu_conv`), composites written as one numpy expression instead of a chain of dispatched ops,
rope and rms_norm as numba gufuncs where numba imports (`cpu_fused.composite`), movement ops
planned per graph node as numpy's own methods). A jitted float32 graph of convolutions,
pools and the ops around them runs as one ONNX Runtime session (`cpu_graph`). Tensors are
numpy arrays, so host transfers are free and DLPack is numpy's.
"""

from __future__ import annotations

import functools
import math
import operator
import os
import platform

import numpy as np

import hal
from hal import dtypes as dt
from hal import host, ops
from hal.ops import shapes

from . import cpu_conv, cpu_erf, cpu_fft, cpu_int8

kernels = hal.KernelTable("cpu")

# Default: every op runs its reference (which computes half precision in float32).
for _spec in ops.specs():
    kernels.register(_spec.name, device_arg=False)(_spec.evaluate)

# numpy ufuncs take the fast path directly where numpy computes in the dtype itself.
_NATIVE = tuple(d for d in dt.ALL if d not in (dt.float16, dt.bfloat16))
_UFUNCS = {
    "negative": np.negative, "abs": np.abs, "exp": np.exp, "log": np.log, "sqrt": np.sqrt,
    "sin": np.sin, "cos": np.cos, "tanh": np.tanh, "add": np.add, "subtract": np.subtract,
    "multiply": np.multiply, "divide": np.divide, "maximum": np.maximum,
    "minimum": np.minimum, "equal": np.equal, "less": np.less, "greater": np.greater,
    "matmul": np.matmul, "real": np.real, "imag": np.imag, "conj": np.conj,
    "isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite,
    "floor_divide": np.floor_divide, "remainder": np.remainder,
}
for _name, _ufunc in _UFUNCS.items():
    _dtypes = [d for d in _NATIVE if d in ops.spec(_name).dtypes]
    kernels.register(_name, _dtypes, device_arg=False)(_ufunc)


# Movement, casts and take are exact: the reference function itself is the kernel.
for _spec in ops.specs():
    if _spec.family in ("movement", "cast", "take"):
        kernels.register(_spec.name, device_arg=False)(_spec.reference)


@kernels.register("sum", _NATIVE, device_arg=False)
def _sum(x, *, axis=None, keepdims=False):
    wide = np.int64 if x.dtype.kind in "biu" else None  # integers and bool sum to int64
    return np.sum(x, axis=axis, keepdims=keepdims, dtype=wide)


@kernels.register("max", [d for d in _NATIVE if d in ops.spec("max").dtypes], device_arg=False)
def _max(x, *, axis=None, keepdims=False):
    return np.max(x, axis=axis, keepdims=keepdims)


@kernels.register("min", [d for d in _NATIVE if d in ops.spec("min").dtypes], device_arg=False)
def _min(x, *, axis=None, keepdims=False):
    return np.min(x, axis=axis, keepdims=keepdims)


@kernels.register("where", device_arg=False)  # selection is exact in any dtype
def _where(condition, x, y):
    return np.where(condition, x, y)


@kernels.register("power", [d for d in _NATIVE if dt.is_floating(d) or dt.is_complex(d)],
                  device_arg=False)
def _power(a, b):
    return np.power(a, b)


@kernels.register("erf", [dt.float32, dt.float64], device_arg=False)
def _erf(x):
    if x.dtype == np.float32:
        return cpu_erf.erf(x)
    from scipy.special import erf

    return erf(x)


for _name in ("fftn", "ifftn", "rfftn", "irfftn"):
    kernels.register(_name, device_arg=False)(cpu_fft.kernel(_name))


# Fused composites for the dtypes numpy computes natively: one expression, no dispatch.
_FUSED = (dt.float32, dt.float64)


# Views planned once per node (`for_shape`): numpy's own methods with the arguments bound,
# no Python frame per call (a decode step has dozens of these)
@kernels.register("reshape", device_arg=False)
def _reshape(x, *, shape):
    return x.reshape(shapes.reshape("reshape", x.shape, shape))


@kernels.register("permute_dims", device_arg=False)
def _permute_dims(x, *, axes):
    return x.transpose(axes)


@kernels.register("slice", device_arg=False)
def _slice(x, *, bounds):
    return x[ops.slice_index(bounds)]


_reshape.for_shape = lambda in_shapes, dtypes, *, shape: operator.methodcaller(
    "reshape", shapes.reshape("reshape", in_shapes[0], shape))
_permute_dims.for_shape = lambda in_shapes, dtypes, *, axes: operator.methodcaller(
    "transpose", axes)
_slice.for_shape = lambda in_shapes, dtypes, *, bounds: operator.itemgetter(
    ops.slice_index(bounds))


@kernels.register("take", device_arg=False)
def _take(x, indices, *, axis=None):
    return x.take(indices, axis)  # np.take's own method, without its Python wrapper


# Composites as their references compute them, in as few calls as that allows: a decode
# step at batch 1 runs dozens of these on vectors of a few hundred elements, where the
# calls are the cost. Reductions are the ufuncs' own `reduce` (np.max, np.mean... add a
# Python layer of 2-4 us), the arithmetic around them one numba gufunc where it is exact.
@kernels.register("rms_norm", _FUSED, device_arg=False)
def _rms_norm(x, weight=None, *, eps=1e-6):
    """numpy's sum of x * x, then one numba gufunc (cpu_fused.composite) where there is a
    weight of x's dtype; else the reference."""
    if weight is None or weight.dtype != x.dtype or _composite("rms_norm") is None:
        return ops.spec("rms_norm").reference(x, weight, eps=eps)
    total = np.add.reduce(x * x, axis=-1)  # the reference's np.mean sums so: same values
    return _composite("rms_norm")(x, total, x.dtype.type(eps), weight)


@kernels.register("rope", _FUSED, device_arg=False)
def _rope(x, cos, sin, *, interleaved=False):
    """One numba gufunc call (cpu_fused.composite) for half-split pairs with an angle per
    pair in x's dtype; else the reference."""
    if interleaved or cos.shape[-1:] != (x.shape[-1] // 2,) \
            or not x.dtype == cos.dtype == sin.dtype or _composite("rope") is None:
        return ops.spec("rope").reference(x, cos, sin, interleaved=interleaved)
    return _composite("rope")(x, cos, sin)


@functools.cache
def _composite(name: str):
    from . import cpu_fused  # numba, and only where the op runs

    return cpu_fused.composite(name)


@kernels.register("softmax", _FUSED, device_arg=False)
def _softmax(x, *, axis=-1):
    e = np.subtract(x, np.maximum.reduce(x, axis=axis, keepdims=True), out=np.empty_like(x))
    np.exp(e, out=e)
    e /= np.add.reduce(e, axis=axis, keepdims=True)
    return e


@kernels.register("layer_norm", _FUSED, device_arg=False)
def _layer_norm(x, weight=None, bias=None, *, eps=1e-5):
    centred = x - np.mean(x, axis=-1, keepdims=True)
    scale = 1 / np.sqrt(np.mean(centred * centred, axis=-1, keepdims=True) + eps)
    centred *= scale
    if weight is not None:
        centred *= weight
    if bias is not None:
        centred += bias
    return centred


def _gelu_inplace(y, approximate):
    if approximate == "tanh":
        inner = np.multiply(y, y, out=np.empty_like(y))  # an array even when 0-d
        inner *= 0.044715 * y
        inner += y
        inner *= math.sqrt(2 / math.pi)
        np.tanh(inner, out=inner)
    elif y.dtype == np.float32:
        return cpu_erf.gelu(y)  # a new array: in place, numpy would copy through a buffer
    else:
        from scipy.special import erf

        inner = erf(y * (1 / math.sqrt(2)), out=np.empty_like(y))
    inner += 1
    inner *= 0.5
    y *= inner
    return y


@kernels.register("gelu", _FUSED, device_arg=False)
def _gelu(x, *, approximate="none"):
    if approximate == "none" and x.dtype == np.float32:
        return cpu_erf.gelu(x)
    return _gelu_inplace(np.array(x), approximate)


def _one_plus_exp_negative(y):
    """1 + exp(-y) in a temporary of its own (silu and sigmoid divide by it, as their
    references do)."""
    t = np.negative(y)
    np.exp(t, out=t)
    t += 1
    return t


_EPILOGUES = {
    None: lambda y: y,
    "relu": lambda y: np.maximum(y, 0, out=y),
    "gelu": lambda y: _gelu_inplace(y, "none"),
    "gelu_tanh": lambda y: _gelu_inplace(y, "tanh"),
    "silu": lambda y: np.divide(y, _one_plus_exp_negative(y), out=y),
    "sigmoid": lambda y: np.divide(1, _one_plus_exp_negative(y), out=y),
    "tanh": lambda y: np.tanh(y, out=y),
}


@kernels.register("linear", _FUSED, device_arg=False)
def _linear(x, weight, bias=None, *, activation=None):
    if _one_gemm(x.shape, weight.shape):
        y = np.matmul(x.reshape(-1, x.shape[-1]), weight).reshape(*x.shape[:-1], -1)
    else:
        y = np.matmul(x, weight)
    if bias is not None:
        y += bias
    return _EPILOGUES[activation](y)


def _one_gemm(x: tuple, weight: tuple) -> bool:
    """Whether x is flattened to one GEMM, where np.matmul would loop over its leading axes."""
    return len(x) > 2 and len(weight) == 2 and math.prod(x[:-2]) > 1


def _plan_linear(in_shapes, dtypes, *, activation=None):
    """np.matmul itself for a node with no bias, activation or flattening (most of an LLM's)."""
    x, weight, *bias = in_shapes
    plain = activation is None and bias in ([], [None]) and not _one_gemm(x, weight)
    return np.matmul if plain else None


_linear.for_shape = _plan_linear


@kernels.register("scaled_dot_product_attention", _FUSED, device_arg=False)
def _attention(q, k, v, *, causal=False, scale=None):
    s = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = np.matmul(q * np.asarray(s, q.dtype), np.swapaxes(k, -1, -2))
    if causal:
        scores = np.where(ops.causal_mask(q.shape[-2], k.shape[-2]), scores, -np.inf)
    return np.matmul(_softmax(scores), v)


@kernels.register("pad", device_arg=False)
def _pad(x, *, pad_width, mode="constant", value=0):
    """Constant padding as a filled array and one assignment (np.pad takes ~20 us even for
    a few elements); the other modes by np.pad."""
    if mode != "constant":
        return ops.spec("pad").reference(x, pad_width=pad_width, mode=mode)
    out = np.full([n + b + a for n, (b, a) in zip(x.shape, pad_width)], value, x.dtype)
    out[tuple(slice(b, b + n) for n, (b, _) in zip(x.shape, pad_width))] = x
    return out


@kernels.register("dynamic_update_slice", device_arg=False)
def _dynamic_update_slice(operand, update, start_indices, *, out=None):
    """A copy of operand (or operand itself, when hal.jit passes it as `out` because the
    graph owns it, unless it is read-only) with update assigned to its clamped window."""
    if out is None or not out.flags.writeable:
        out = np.array(operand)
    elif out is not operand:
        np.copyto(out, operand)
    out[ops.update_window(operand.shape, update.shape, start_indices)] = update
    return out


_dynamic_update_slice.takes_out = True


# int8 products on an integer GEMM (see cpu_int8)
kernels.register("qmatmul", device_arg=False)(cpu_int8.qmatmul)
kernels.register("quantized_linear", device_arg=False)(cpu_int8.quantized_linear)

# convolutions and pools through ONNX Runtime's MLAS where it has a kernel (see cpu_conv)
for _name in cpu_conv.ON_ONNXRUNTIME:
    kernels.register(_name, device_arg=False)(cpu_conv.kernel(_name))


class CpuDevice(hal.Device):
    """The host CPU; tensors are numpy arrays, so memory is numpy's and copies are free."""

    def _empty(self, shape: tuple, dtype: np.dtype) -> np.ndarray:
        return np.empty(shape, dtype)

    def empty_factory(self, shape, dtype):
        """numpy's own np.empty bound to the checked shape and dtype (no frame of ours: a
        jitted graph calls it for each result it hands out)."""
        checked = super().empty_factory(shape, dtype)
        return functools.partial(np.empty, *checked.args)

    def _upload(self, array: np.ndarray) -> np.ndarray:
        return array  # host memory is this device's memory

    def _download(self, native: np.ndarray) -> np.ndarray:
        return np.asarray(native)  # the array itself: callers must not write to it

    def _pool_stats(self) -> None:
        return None  # numpy owns host memory: only the total is known

    def from_dlpack(self, obj) -> np.ndarray:
        """numpy's zero-copy DLPack import."""
        return np.from_dlpack(obj)

    def _describe(self) -> dict:
        return {
            "name": host.cpu_model(),
            "vendor": platform.machine(),
            "runtime_version": f"numpy {np.__version__}",
            "memory_bytes": host.memory_bytes(),
            "memory": "host",
            "compute_units": os.cpu_count(),
            "extra": {"blas": _blas(), "threads": hal.settings.threads},
        }


@functools.cache
def _limit_blas_threads(threads: int) -> None:
    """numpy's BLAS on `threads` threads (HAL_THREADS), through threadpoolctl: OpenBLAS's
    own default, every core, collapses 2-20x on GEMM when the cores are shared."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=threads, user_api="blas")


def _blas() -> str:
    try:
        config = np.show_config(mode="dicts")
        blas = config["Build Dependencies"]["blas"]
        return f"{blas.get('name')} {blas.get('version')}"
    except Exception:  # numpy builds differ in what show_config reports
        return "unknown"


class CpuBackend(hal.Backend):
    """numpy/scipy on the host: always available."""

    name = "cpu"
    kernels = kernels

    def _open_device(self, index: int) -> CpuDevice:
        _limit_blas_threads(hal.settings.threads)
        return CpuDevice(self, index)

    def compile(self, graph, device: hal.Device):
        """A jitted convolution graph as one ONNX Runtime session (`backends.cpu_graph`), or
        None for hal's own executable."""
        from . import cpu_graph  # only graphs need it

        return cpu_graph.compile(graph, device)

    def compile_fused(self, body, device: hal.Device):
        """One numba-compiled ufunc per fused group (`backends.cpu_fused`), or None."""
        from . import cpu_fused  # only graphs need it

        return cpu_fused.compile_body(body)
