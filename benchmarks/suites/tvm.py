"""TVM suite: what autotuning, fusion and int8 buy, beside numpy, ONNX Runtime and the
other backends.

Every hal workload runs on every backend: f32 GEMM 1024^3 (and 512^3, the int8 shapes'
float baseline), linear + bias + tanh-GELU 512^3 as one kernel, uint8 x int8 -> int32
qmatmul 512^3 and the dynamic-quantized linear 512^3. On a TVM device a workload runs
its tuned kernel where `hal tune` has tuned that shape (the device's capabilities record
the tuning runs, with their trials and seconds), and `<workload>[untuned]` runs the same
kernel with the default schedule. Peers compute on the host CPU and are measured where
the device under test is on it (the cpu backend, TVM's llvm target, PoCL): numpy written
naively (`y**3`) and well (in place, `y*y*y`) for the fused
layer, and ONNX Runtime's MatMulInteger and DynamicQuantizeMatMul for the int8 ones.
Work: 2 M N K operations per call (FLOPs for floats, integer ops for int8).
"""

from __future__ import annotations

import functools
import math

import numpy as np

import hal
from benchmarks import ort_peer
from benchmarks.workload import Case, Workload, random_array

F32 = ("float32",)
SQRT_2_OVER_PI = math.sqrt(2 / math.pi)
ORT_CPU = "ONNX Runtime's CPU provider"


def _gemm_case(m, n, k):
    def build(dtype: np.dtype) -> Case:
        a, b = random_array((m, k), dtype, 0), random_array((k, n), dtype, 1)
        return Case([a, b], flops=2.0 * m * n * k, items=m)

    return build


def _linear_case(m, n, k):
    def build(dtype: np.dtype) -> Case:
        x, w = random_array((m, k), dtype, 0), random_array((k, n), dtype, 1)
        return Case([x, w, random_array((n,), dtype, 2)], flops=2.0 * m * n * k, items=m)

    return build


def _qmatmul_case(m, n, k):
    def build(dtype: np.dtype) -> Case:
        rng = np.random.default_rng(0)
        a = rng.integers(0, 256, (m, k), dtype=np.uint8)
        b = rng.integers(-128, 128, (k, n), dtype=np.int8)
        return Case([a, b], flops=2.0 * m * n * k, items=m)

    return build


def _quantized_linear_case(m, n, k):
    def build(dtype: np.dtype) -> Case:
        x = random_array((m, k), np.float32, 0)
        w = random_array((k, n), np.float32, 1)
        scale = (np.abs(w).max(axis=0) / 127).astype(np.float32)
        wq = np.rint(w / scale).astype(np.int8)
        return Case([x, wq, scale, random_array((n,), np.float32, 2)],
                     flops=2.0 * m * n * k, items=m)

    return build


def _untuned(run):
    """run on a TVM device with its default schedules (other devices: not applicable)."""

    def untuned(*tensors, **options):
        device = tensors[0].device
        default_schedules = getattr(device, "default_schedules", None)
        if default_schedules is None:
            raise hal.UnsupportedOp(f"{device.name} has no tuned kernels to leave out")
        with default_schedules():
            return run(*tensors, **options)

    return untuned


def _host_peer(fn, what: str):
    """A peer written for the host CPU: run where the device under test is on it (the cpu
    backend, TVM's llvm target, PoCL), skipped with the reason elsewhere."""

    def run(*tensors):
        ort_peer.on_host_cpu(tensors[0].device, what)
        return hal.asarray(fn(*(t.numpy() for t in tensors)))

    return run


def _gelu_naive(x, w, b):
    """The textbook expression: numpy's float32 `**3` goes through powf."""
    y = x @ w + b
    return 0.5 * y * (1 + np.tanh(SQRT_2_OVER_PI * (y + 0.044715 * y**3)))


def _gelu_well(x, w, b):
    """The same in place, with `y*y*y`: what a careful numpy user writes."""
    y = x @ w
    y += b
    t = y * y
    t *= y
    t *= 0.044715
    t += y
    t *= SQRT_2_OVER_PI
    np.tanh(t, out=t)
    t += 1
    t *= y
    t *= 0.5
    return t


def _gelu_reference(x, w, b):
    return hal.ops.spec("linear").evaluate(x, w, b, activation="gelu_tanh")


@functools.cache
def _ort_session(kind: str, k: int, n: int):
    """An ONNX Runtime session of one int8 node: MatMulInteger (u8 x s8 with A's zero
    point) or com.microsoft DynamicQuantizeMatMul (float A, int8 B, per-column scales)."""
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper

    if kind == "MatMulInteger":
        node = helper.make_node("MatMulInteger", ["A", "B", "a_zero"], ["Y"])
        inputs = [helper.make_tensor_value_info("A", TensorProto.UINT8, ["M", k]),
                  helper.make_tensor_value_info("B", TensorProto.INT8, [k, n])]
        init = [helper.make_tensor("a_zero", TensorProto.UINT8, [], [128])]
        out = helper.make_tensor_value_info("Y", TensorProto.INT32, ["M", n])
    else:
        node = helper.make_node("DynamicQuantizeMatMul", ["A", "B", "scale", "zero", "bias"],
                                ["Y"], domain="com.microsoft")
        inputs = [helper.make_tensor_value_info("A", TensorProto.FLOAT, ["M", k]),
                  helper.make_tensor_value_info("B", TensorProto.INT8, [k, n]),
                  helper.make_tensor_value_info("scale", TensorProto.FLOAT, [n]),
                  helper.make_tensor_value_info("bias", TensorProto.FLOAT, [n])]
        init = [helper.make_tensor("zero", TensorProto.INT8, [n], [0] * n)]
        out = helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["M", n])
    graph = helper.make_graph([node], kind, inputs, [out], initializer=init)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.microsoft", 1)])
    onnx.checker.check_model(model)
    options = ort.SessionOptions()
    return ort.InferenceSession(model.SerializeToString(), options,
                                providers=["CPUExecutionProvider"])


def _ort_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"onnxruntime {version('onnxruntime')}"
    except PackageNotFoundError:
        return "onnxruntime (not installed)"


def _ort_qmatmul(a, b):
    return _ort_session("MatMulInteger", a.shape[1], b.shape[1]).run(None, {"A": a, "B": b})[0]


def _ort_quantized_linear(x, wq, scale, bias):
    session = _ort_session("DynamicQuantizeMatMul", x.shape[1], wq.shape[1])
    return session.run(None, {"A": x, "B": wq, "scale": scale, "bias": bias})[0]


def _quantized_linear_reference(x, wq, scale, bias):
    """The op's reference on the float32 inputs (quantization is defined in float32; the
    harness hands references double-precision copies)."""
    f32 = [np.asarray(a, np.float32) for a in (x, scale, bias)]
    return hal.ops.spec("quantized_linear").evaluate(f32[0], wq, f32[1], f32[2])


def _qmatmul_reference(a, b):
    return hal.ops.spec("qmatmul").evaluate(a, b, a_zero_point=128)


def _qmatmul(a, b):
    return hal.qmatmul(a, b, a_zero_point=128)


def workloads() -> list[Workload]:
    """GEMM, fused linear-GELU, qmatmul and quantized linear: tuned, untuned and peers."""
    out = []
    for size in (1024, 512):
        params = {"M": size, "N": size, "K": size}
        out.append(Workload("gemm", params, F32, _gemm_case(size, size, size), hal.matmul,
                            np.matmul))
        out.append(Workload("gemm[untuned]", params, F32, _gemm_case(size, size, size),
                            _untuned(hal.matmul), np.matmul))
    m = n = k = 512
    params = {"M": m, "N": n, "K": k, "activation": "gelu_tanh"}
    linear = functools.partial(hal.nn.linear, activation="gelu_tanh")
    out += [
        Workload("linear_gelu", params, F32, _linear_case(m, n, k), linear, _gelu_reference),
        Workload("linear_gelu[untuned]", params, F32, _linear_case(m, n, k),
                 _untuned(linear), _gelu_reference),
        Workload("linear_gelu[numpy-naive]", {**params, "peer": f"numpy {np.__version__}"},
                 F32, _linear_case(m, n, k), _host_peer(_gelu_naive, "numpy"), _gelu_reference),
        Workload("linear_gelu[numpy-well]", {**params, "peer": f"numpy {np.__version__}"},
                 F32, _linear_case(m, n, k), _host_peer(_gelu_well, "numpy"), _gelu_reference),
    ]
    qparams = {"M": m, "N": n, "K": k, "a": "uint8", "b": "int8", "a_zero_point": 128}
    out += [
        Workload("qmatmul", qparams, ("uint8",), _qmatmul_case(m, n, k), _qmatmul,
                 _qmatmul_reference),
        Workload("qmatmul[untuned]", qparams, ("uint8",), _qmatmul_case(m, n, k),
                 _untuned(_qmatmul), _qmatmul_reference),
        Workload("qmatmul[onnxruntime]", {**qparams, "peer": _ort_version()}, ("uint8",),
                 _qmatmul_case(m, n, k), _host_peer(_ort_qmatmul, ORT_CPU),
                 _qmatmul_reference),
    ]
    lparams = {"M": m, "N": n, "K": k, "weight": "int8 per-channel"}
    reference = _quantized_linear_reference
    out += [
        Workload("quantized_linear", lparams, F32, _quantized_linear_case(m, n, k),
                 hal.nn.quantized_linear, reference, tolerance_scale=100.0),
        Workload("quantized_linear[untuned]", lparams, F32, _quantized_linear_case(m, n, k),
                 _untuned(hal.nn.quantized_linear), reference, tolerance_scale=100.0),
        Workload("quantized_linear[onnxruntime]", {**lparams, "peer": _ort_version()}, F32,
                 _quantized_linear_case(m, n, k), _host_peer(_ort_quantized_linear, ORT_CPU),
                 reference, tolerance_scale=100.0),
    ]
    return out
