"""INT8: the cpu qmatmul/quantized_linear kernels, quantized_linear's traceable decomposition
on every backend, frontends.quant (dynamic and static PTQ) against numpy, and the ONNX
Runtime peer. Shapes stay small (tvm compiles each new shape)."""

from __future__ import annotations

import numpy as np
import pytest

import hal
from frontends import quant
from frontends.nn import Layer, Linear
from hal.conformance.compare import mismatch
from hal.dispatch import decomposition_of

RNG = np.random.default_rng(5)
REFERENCE = hal.ops.spec("quantized_linear").reference
TOLERANCE = hal.ops.spec("quantized_linear").tolerance_for(hal.float32)
_DEVICES = ("cpu", "opencl", "tvm")


@pytest.fixture(params=_DEVICES)
def device(request):
    """Each backend that runs here."""
    if request.param not in hal.available_backends():
        pytest.skip(f"backend {request.param} is not available here")
    return hal.device(request.param)


class MLP(Layer):
    """32 -> 48 (gelu) -> 16: two Linears to quantize."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = Linear(32, 48, activation="gelu", seed=1)
        self.fc2 = Linear(48, 16, seed=3)

    def forward(self, x):
        return self.fc2(self.fc1(x))


def _cosine(a, b):
    return float(np.dot(a.ravel(), b.ravel()) / np.linalg.norm(a) / np.linalg.norm(b))


def _numpy_weight(w, per_channel=True):
    """Symmetric int8 weight and its scales, as written out in the layer's docstring."""
    largest = np.abs(w).max(axis=0) if per_channel else np.full(w.shape[1], np.abs(w).max())
    scale = np.where(largest == 0, np.float32(1), largest / np.float32(127)).astype(np.float32)
    return np.clip(np.rint(w / scale), -128, 127).astype(np.int8), scale


def _numpy_linear(x, w, b, lo, hi, per_channel=True):
    """uint8 activations with the scale and zero point of [lo, hi], int8 weights, in numpy."""
    qw, ws = _numpy_weight(w, per_channel)
    s, z = hal.ops.dynamic_qparams(lo, hi)
    q = np.clip(np.rint(x / s) + z, 0, 255).astype(np.int64)
    return ((q - z) @ qw.astype(np.int64)).astype(np.float32) * (s * ws) + b


# -- the cpu kernels ------------------------------------------------------------------------
@pytest.mark.parametrize("a_dtype, za, zb", [(np.uint8, 0, 0), (np.uint8, 255, -128),
                                             (np.uint8, 128, 5), (np.int8, -128, 127),
                                             (np.int8, 127, -128), (np.int8, 0, 0)])
@pytest.mark.parametrize("a_shape, b_shape", [((3, 1100), (1100, 5)), ((2, 3, 600), (600, 4)),
                                              ((2, 3, 40), (2, 40, 4)), ((1100,), (1100, 3)),
                                              ((4, 1100), (1100,)), ((3, 0), (0, 4))])
def test_cpu_qmatmul_is_exact_at_the_extremes(a_dtype, za, zb, a_shape, b_shape):
    info = np.iinfo(a_dtype)
    far_a = info.min if za > (int(info.min) + int(info.max)) / 2 else info.max
    far_b = -128 if zb >= 0 else 127
    a = RNG.integers(info.min, int(info.max) + 1, a_shape).astype(a_dtype)
    b = RNG.integers(-128, 128, b_shape).astype(np.int8)
    a[..., : a.shape[-1] // 2] = far_a  # half the products as large as they get: |sum| > 2**24
    b_by_k = b if b.ndim == 1 else np.moveaxis(b, -2, 0)  # a view of b with K first
    b_by_k[: b_by_k.shape[0] // 2] = far_b
    out = hal.qmatmul(hal.asarray(a), hal.asarray(b), a_zero_point=za, b_zero_point=zb).numpy()
    expected = hal.ops.spec("qmatmul").reference(a, b, a_zero_point=za, b_zero_point=zb)
    assert out.dtype == np.int32 and np.array_equal(out, expected)


@pytest.mark.parametrize("x_shape", [(6, 40), (2, 3, 1100), (40,), (0, 40), (3, 0)])
@pytest.mark.parametrize("with_bias", [True, False])
def test_cpu_quantized_linear_kernel_equals_the_reference(x_shape, with_bias):
    k = x_shape[-1]
    x = (RNG.standard_normal(x_shape) * 4 + 1).astype(np.float32)
    w = RNG.integers(-128, 128, (k, 7)).astype(np.int8)
    ws = (RNG.random(7) * 0.01).astype(np.float32)
    b = RNG.standard_normal(7).astype(np.float32) if with_bias else None
    args = [hal.asarray(a) for a in (x, w, ws)] + ([hal.asarray(b)] if with_bias else [])
    with hal.placement() as where:
        out = hal.nn.quantized_linear(*args).numpy()
    assert where.to_dict()["ops"] == {"quantized_linear": {"cpu:0:kernel": 1}}
    assert np.array_equal(out, REFERENCE(x, w, ws, b))


# -- the decomposition: tensor ops only, so it traces -----------------------------------------
@pytest.mark.parametrize("backend, x_shape", [
    *((b, s) for b in ("cpu", "opencl") for s in ((5, 24), (2, 3, 24), (24,), (0, 24), (4, 0))),
    ("tvm", (5, 24)), ("tvm", (0, 24))])  # tvm compiles each new shape
def test_quantized_linear_decomposition_eager_and_jitted(backend, x_shape):
    if backend not in hal.available_backends():
        pytest.skip(f"backend {backend} is not available here")
    device = hal.device(backend)
    k = x_shape[-1]
    x = (RNG.standard_normal(x_shape) * 3 - 0.5).astype(np.float32)
    w = RNG.integers(-128, 128, (k, 8)).astype(np.int8)
    ws = (RNG.random(8) * 0.02).astype(np.float32)
    b = RNG.standard_normal(8).astype(np.float32)
    args = [hal.asarray(a, device=device) for a in (x, w, ws, b)]
    expected = REFERENCE(x, w, ws, b)
    decompose = decomposition_of("quantized_linear")
    assert np.array_equal(decompose(*args).numpy(), expected)  # int32 exact, float32 same steps
    jitted = hal.jit(decompose)(*args).numpy()
    public = hal.jit(hal.nn.quantized_linear)(*args).numpy()
    for out in (jitted, public):  # fused epilogues may contract a * b + c into one fma
        assert not mismatch(out, expected, TOLERANCE), mismatch(out, expected, TOLERANCE)
    if device.backend.name != "tvm":
        assert np.array_equal(jitted, expected)


def test_quantized_linear_decomposition_constant_input_takes_scale_one(cpu):
    x = hal.zeros((3, 4), dtype=hal.float32)
    w = hal.asarray(RNG.integers(-128, 128, (4, 2)).astype(np.int8))
    ws = hal.asarray(np.ones(2, np.float32))
    out = hal.jit(decomposition_of("quantized_linear"))(x, w, ws).numpy()
    assert np.array_equal(out, np.zeros((3, 2), np.float32))


# -- layers and model conversion --------------------------------------------------------------
@pytest.mark.parametrize("per_channel", [True, False])
def test_quantized_linear_layer_matches_numpy(per_channel):
    linear = Linear(20, 12, activation="relu", seed=7)
    layer = quant.QuantizedLinear.from_linear(linear, per_channel=per_channel)
    x = RNG.standard_normal((6, 20)).astype(np.float32)
    w, b = linear.weight.numpy(), linear.bias.numpy()
    qw, ws = _numpy_weight(w, per_channel)
    assert np.array_equal(layer.weight.numpy(), qw)
    assert np.array_equal(layer.weight_scale.numpy(), ws)
    expected = np.maximum(_numpy_linear(x, w, b, x.min(), x.max(), per_channel), 0)
    out = layer(hal.asarray(x)).numpy()
    assert not mismatch(out, expected, TOLERANCE), mismatch(out, expected, TOLERANCE)
    assert layer.trainable() == {} and set(layer.state_dict()) == {"weight", "weight_scale",
                                                                    "bias"}


def test_dynamic_quantization_is_close_and_leaves_the_model_unchanged():
    model = MLP()
    before = model.state_dict()
    x = hal.asarray(RNG.standard_normal((16, 32)).astype(np.float32))
    qmodel = quant.quant_post_dynamic(model)
    assert isinstance(qmodel.fc1, quant.QuantizedLinear)
    assert isinstance(model.fc1, Linear) and not isinstance(model.fc1, quant.QuantizedLinear)
    assert all(model.state_dict()[n] is t for n, t in before.items())
    assert _cosine(qmodel(x).numpy(), model(x).numpy()) > 0.99
    per_tensor = quant.quant_post_dynamic(model, per_channel=False)
    assert np.ptp(per_tensor.fc1.weight_scale.numpy()) == 0
    kept = quant.quant_post_dynamic(model, skip=("fc2",))
    assert isinstance(kept.fc1, quant.QuantizedLinear) and type(kept.fc2) is Linear
    report = quant.summary(qmodel)
    assert [r["name"] for r in report["layers"]] == ["fc1", "fc2"]
    assert report["float32_bytes"] == 4 * (32 * 48 + 48 + 48 * 16 + 16)
    assert report["int8_bytes"] == 32 * 48 + 8 * 48 + 48 * 16 + 8 * 16


def test_a_linear_itself_is_converted():
    linear = Linear(8, 4, seed=2)
    assert isinstance(quant.quant_post_dynamic(linear), quant.QuantizedLinear)


def test_config_dict_is_accepted_and_bad_keys_are_rejected():
    model = MLP()
    qmodel = quant.quant_post_dynamic(model, {"weight_bits": 8, "weight_quantize_type":
                                              "abs_max", "quantizable_op_type": ["matmul", "mul"],
                                              "skip": ["fc1"]})
    assert type(qmodel.fc1) is Linear and np.ptp(qmodel.fc2.weight_scale.numpy()) == 0
    for bad in ({"weight_bits": 4}, {"weight_quantize_type": "kl"}, {"activation_bits": 8},
                {"quantizable_op_type": ["conv2d"]}):
        with pytest.raises(hal.HalError, match="weight_quantize_type: channel_wise_abs_max"):
            quant.quant_post_dynamic(model, bad)
    with pytest.raises(hal.HalError, match=r"unknown option.*accepted: skip"):
        quant.quant_post_dynamic(model, bits=8)
    with pytest.raises(hal.HalError, match="skip 'fc3' names no layer"):
        quant.quant_post_dynamic(model, skip=("fc3",))


def test_static_quantization_matches_numpy_with_the_calibrated_ranges():
    model = MLP()
    batches = [RNG.standard_normal((8, 32)).astype(np.float32) * s for s in (1, 2, 0.5)]
    qmodel = quant.quant_post_static(model, [(hal.asarray(b),) for b in batches])
    hidden = [model.fc1(hal.asarray(b)).numpy() for b in batches]
    lo1, hi1 = min(b.min() for b in batches), max(b.max() for b in batches)
    lo2, hi2 = min(h.min() for h in hidden), max(h.max() for h in hidden)
    s, z = hal.ops.dynamic_qparams(lo2, hi2)
    assert qmodel.fc2.input_scale.numpy() == s and qmodel.fc2.input_zero_point.numpy() == z
    x = RNG.standard_normal((5, 32)).astype(np.float32)
    w1, b1, w2, b2 = (t.numpy() for t in model.parameters().values())
    h = hal.nn.gelu(hal.asarray(_numpy_linear(x, w1, b1, lo1, hi1))).numpy()
    expected = _numpy_linear(h, w2, b2, lo2, hi2)
    out = qmodel(hal.asarray(x)).numpy()
    assert not mismatch(out, expected, TOLERANCE), mismatch(out, expected, TOLERANCE)
    assert _cosine(out, model(hal.asarray(x)).numpy()) > 0.99


def test_static_calibration_takes_dicts_tensors_batches_and_percentiles():
    linear = Linear(6, 3, seed=4)
    data = RNG.standard_normal((4, 100, 6)).astype(np.float32)
    data[0, 0, 0] = 50.0  # an outlier that percentile calibration ignores
    seen = quant.calibrate(linear, [{"x": hal.asarray(d)} for d in data], algo="percentile",
                           percentile=99.0, batches=2)[""]
    assert seen.hi == max(np.percentile(d, 99.0) for d in data[:2]) and seen.hi < 50
    qlinear = quant.quant_post_static(linear, (hal.asarray(d) for d in data))
    assert qlinear.input_scale.numpy() == hal.ops.dynamic_qparams(data.min(), data.max())[0]


def test_static_quantization_needs_calibration_data():
    model = MLP()
    for data in (None, [], iter(())):
        with pytest.raises(hal.HalError, match=r"needs calibration batches.*quant_post_dynamic"):
            quant.quant_post_static(model, data)
    with pytest.raises(hal.HalError, match="algo 'kl'"):
        quant.quant_post_static(model, [(hal.zeros((1, 32)),)], algo="kl")


def test_a_layer_calibration_never_reaches_is_named():
    class Unused(Layer):
        def __init__(self):
            super().__init__()
            self.used, self.unused = Linear(4, 4, seed=1), Linear(4, 4, seed=2)

        def forward(self, x):
            return self.used(x)

    with pytest.raises(hal.HalError, match="unused saw no input"):
        quant.quant_post_static(Unused(), [(hal.zeros((2, 4)),)])


@pytest.mark.parametrize("static", [False, True])
def test_quantized_layer_under_jit_equals_eager(device, static):
    linear = Linear(24, 8, activation="relu", seed=6).to(device)
    x = hal.asarray(RNG.standard_normal((5, 24)).astype(np.float32), device=device)
    layer = (quant.quant_post_static(linear, [(x,)]) if static
             else quant.quant_post_dynamic(linear))
    eager = layer(x).numpy()
    baked = hal.jit(lambda x: layer(x))(x).numpy()
    state = layer.state_dict()  # the quantized tensors as graph inputs
    as_inputs = hal.jit(lambda state, x: layer.call_with(state, x))(state, x).numpy()
    exact = device.backend.name != "tvm"  # tvm's fused epilogues may use fma
    for out in (baked, as_inputs):
        assert np.array_equal(out, eager) if exact else not mismatch(out, eager, TOLERANCE)


def test_static_model_saves_and_loads(tmp_path):
    model = MLP()
    x = hal.asarray(RNG.standard_normal((4, 32)).astype(np.float32))
    qmodel = quant.quant_post_static(model, [(x,)])
    qmodel.save(tmp_path / "q.safetensors")
    other = quant.quant_post_static(model, [(x * 3,)]).load(tmp_path / "q.safetensors")
    assert np.array_equal(other(x).numpy(), qmodel(x).numpy())


# -- the ONNX Runtime peer ----------------------------------------------------------------------
def test_onnxruntime_peer_agrees_with_quantized_linear(tmp_path):
    onnx = pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper, numpy_helper

    from frontends.quant import peers

    linear = Linear(64, 24, seed=9)
    w, b = linear.weight.numpy(), linear.bias.numpy()
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["xw"]), helper.make_node("Add", ["xw", "b"],
                                                                         ["y"])],
        "linear", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 24])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
              tmp_path / "f32.onnx")
    out_path = peers.ort_quantize_dynamic(tmp_path / "f32.onnx", tmp_path / "int8.onnx")
    x = (RNG.standard_normal((7, 64)) * 2).astype(np.float32)
    ours = quant.QuantizedLinear.from_linear(linear)(hal.asarray(x)).numpy()
    theirs = peers.ort_session(out_path, exact_int8=True).run(None, {"x": x})[0]
    assert not mismatch(theirs, ours, TOLERANCE), mismatch(theirs, ours, TOLERANCE)
    with pytest.raises(hal.HalError, match="no ONNX file"):
        peers.ort_session(tmp_path / "missing.onnx")
