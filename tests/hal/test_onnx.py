"""hal.onnx: hal graphs exported to ONNX (checked, run by ONNX Runtime) and ONNX models
imported as hal graphs (run on hal, against ONNX Runtime and against eager hal)."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

import hal
from hal.ops.quant import U8S8, U8U8, int8_product_form

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

_RNG = np.random.default_rng(7)
# zero, inf and NaN operands warn in numpy; the values are compared
pytestmark = [pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning"),
              pytest.mark.filterwarnings("ignore:divide by zero encountered:RuntimeWarning")]


def _f32(*shape, scale=1.0):
    return (_RNG.standard_normal(shape) * scale).astype(np.float32)


def _ints(lo, hi, shape, dtype):
    return _RNG.integers(lo, hi, shape).astype(dtype)


_SPECIAL = np.array([[3.0, np.nan, -1.5, 3.0], [-np.inf, 2.0, 2.0, 0.5], [0.0, -7.0, np.inf, 7.0]],
                    dtype=np.float32)

# name -> (function of Tensors returning a tuple, its arguments as numpy arrays)
CASES = {
    "elementwise": (lambda x, y: (
        hal.exp(x), hal.log(hal.abs(x) + 1.0), hal.sqrt(hal.abs(y)), hal.sin(x) * hal.cos(y),
        hal.tanh(x), hal.erf(y), -x, x / y, (hal.abs(x) + 0.5) ** y, x ** 2,
        hal.maximum(x, y), hal.minimum(x, y), hal.where(x > y, x, y - 1.0), hal.equal(x, y),
        hal.less(x, 0.5)), [_f32(3, 4), _f32(4)]),
    "integers": (lambda a, b, u, s: (
        a + b, a // b, a % b, a @ b.T, -u, hal.sum(s, axis=1), hal.cumulative_sum(s, axis=1),
        hal.nn.relu(a), hal.astype(a, hal.float32) * 0.5),
        [_ints(-20, 20, (2, 3), np.int64), _ints(1, 9, (2, 3), np.int64) * np.array([1, -1, 1]),
         np.array([0, 1, 200], np.uint8), np.array([[100, 100, -3], [5, 6, 7]], np.int8)]),
    "casts": (lambda x, b: (
        hal.astype(x, hal.int32), hal.astype(x, hal.bool), hal.astype(b, hal.float32),
        hal.astype(hal.abs(x) * 10.0, hal.uint8)),
        [np.array([-1.7, 2.5, 3.9, 0.0, -0.0], np.float32), np.array([True, False])]),
    "reductions": (lambda x, b: (
        hal.sum(x, axis=1), hal.max(x, axis=0, keepdims=True), hal.min(x), hal.mean(x),
        hal.var(x, axis=1, correction=1), hal.all(x > -1.0, axis=1), hal.any(b),
        hal.argmax(x, axis=1), hal.argmin(x, keepdims=True), hal.max(b)),
        [_f32(3, 5), np.array([False, True, False])]),
    "movement": (lambda x, i: (
        hal.reshape(x, (4, -1)), hal.permute_dims(x, (1, 0)), hal.broadcast_to(x[:1], (3, 4)),
        x[::-1, 1::2], hal.concat([x, x[:, :1]], axis=1), hal.pad(x, ((1, 0), (2, 1)), value=7.0),
        hal.pad(x, ((0, 2), (1, 1)), mode="edge"), hal.pad(x, ((1, 2), (3, 1)), mode="wrap"),
        hal.roll(x, 2, axis=1), hal.roll(x, -5), hal.take(x, i, axis=1), hal.take(x, i)),
        [_f32(3, 4), np.array([[0, -1], [3, 2]], np.int64)]),
    "0-d and empty": (lambda s, e: (
        hal.permute_dims(s * 2.0, ()), hal.roll(s - 1.0, 3), hal.roll(e * 2.0, 2),
        hal.roll(e - 1.0, 1, axis=1), hal.permute_dims(e + 1.0, (1, 0))),
        [np.array(2.5, np.float32), np.zeros((0, 3), np.float32)]),
    "sorting": (lambda x: (
        hal.sort(x, axis=1), hal.argsort(x, axis=1), hal.sort(x, axis=0, descending=True),
        hal.argsort(x, axis=1, descending=True)),
        [np.array([[3, 1, 3, 1, 2], [0, 0, 5, -1, 0]], np.float32)]),
    "nn": (lambda x, w, b, g: (
        hal.nn.linear(x, w, b, activation="gelu"), hal.nn.linear(x, w, activation="silu"),
        hal.nn.layer_norm(x, g, b[:4], eps=1e-3), hal.nn.layer_norm(x), hal.nn.softmax(x),
        hal.nn.log_softmax(x, axis=0), hal.nn.gelu(x, approximate="tanh"), hal.nn.sigmoid(x),
        hal.nn.relu(x)), [_f32(3, 4), _f32(4, 6), _f32(6), _f32(4)]),
    "attention": (lambda q, k, v: (
        hal.nn.scaled_dot_product_attention(q, k, v),
        hal.nn.scaled_dot_product_attention(q, k, v, causal=True, scale=0.3)),
        [_f32(2, 3, 4), _f32(2, 5, 4), _f32(2, 5, 6)]),
    "conv and pooling": (lambda x, w, b, s, m, v, t: (
        hal.nn.conv(x, w, b, stride=(2, 1), padding=((1, 0), (2, 1)), dilation=(1, 2),
                    groups=2),
        hal.nn.conv(hal.permute_dims(x, (0, 2, 3, 1)), w[:, :, :2, :1], padding=1, groups=2,
                    layout="channels_last"),
        hal.nn.conv(t, s, stride=2, padding=((1, 2),)),
        hal.nn.conv_transpose(x, w[:4], b[:4], stride=2, padding=((1, 0), (0, 1)),
                              output_padding=(1, 0), groups=2),
        hal.nn.max_pool(x, (2, 3), stride=(2, 1), padding=((1, 1), (0, 2))),
        hal.nn.max_pool(t, 2, layout="channels_last"),
        hal.nn.avg_pool(x, 3, stride=2, padding=1),
        hal.nn.avg_pool(x, (2, 2), stride=1, padding=1, count_include_pad=True),
        hal.nn.batch_norm(x, m, v, b[:4], m * 2.0, eps=1e-3),
        hal.nn.batch_norm(hal.permute_dims(x, (0, 2, 3, 1)), m, v, layout="channels_last")),
        [_f32(2, 4, 7, 6), _f32(6, 2, 3, 2), _f32(6), _f32(3, 5, 3), _f32(4),
         np.abs(_f32(4)) + 0.5, _f32(2, 5, 9)]),
    "llama": (lambda x, w, q, c, s: (
        hal.nn.rms_norm(x, w), hal.nn.rms_norm(x, eps=1e-3), hal.nn.rope(q, c, s),
        hal.nn.rope(q, c, s, interleaved=True)),
        [_f32(3, 6), _f32(6), _f32(2, 2, 5, 6), np.cos(_f32(5, 3)), np.sin(_f32(5, 3))]),
    "special values": (lambda x, y: (
        hal.isnan(x), hal.isinf(x), hal.isfinite(x), hal.isnan(hal.astype(y, hal.int32)),
        hal.clip(x, -1.0, 2.5), hal.floor_divide(x, y), hal.remainder(x, y),
        hal.max(x, axis=1), hal.min(x, axis=0), hal.argmax(x, axis=1), hal.argmin(x)),
        [_SPECIAL, np.array([2.0, -2.0, 0.5, -3.0], np.float32)]),
    "int8": (lambda x, s, a, w, ws, b: (
        hal.quantize_linear(x, s[0], hal.asarray(np.uint8(128))),
        hal.quantize_linear(x, s[:3], hal.asarray(np.array([1, 0, -3], np.int8)), axis=0),
        hal.dequantize_linear(a, s[0], hal.asarray(np.uint8(7))),
        hal.qmatmul(a, w, a_zero_point=128, b_zero_point=3),
        hal.nn.quantized_linear(x, w, ws, b), hal.nn.quantized_linear(x[:, :2] * 0.0, w[:2], ws)),
        [_f32(3, 8, scale=30.0), np.array([0.5, 1.0, 2.0], np.float32),
         _ints(0, 256, (3, 8), np.uint8), _ints(-128, 128, (8, 5), np.int8),
         np.array([0.01, 0.02, 0.015, 0.03, 0.01], np.float32), _f32(5)]),
}


def _full_range_int8(k: int):
    """uint8 and int8 activations and int8 weights over their whole ranges, K = k, with a
    row and columns at the extremes (whose uint8 x int8 pair sums overflow 16 bits)."""
    a = _ints(0, 256, (4, k), np.uint8)
    s = _ints(-128, 128, (4, k), np.int8)
    w = _ints(-128, 128, (k, 6), np.int8)
    a[0], s[0], w[:, 0], w[:, 1] = 255, -128, -128, 127
    return a, s, w


def _form_runs_here(form: str) -> None:
    """Skip where ONNX Runtime cannot run `form` exactly: u8 x s8 on a CPU without VNNI/AMX."""
    if form == U8S8 and int8_product_form() != U8S8:
        pytest.skip("this CPU has no VNNI/AMX: ONNX Runtime's u8 x s8 GEMM saturates there")


QREF = hal.ops.spec("qmatmul").reference


@pytest.mark.parametrize("form", [U8S8, U8U8])
def test_int8_products_are_exact_in_onnxruntime_over_the_full_range(form):
    _form_runs_here(form)
    a, s, w = _full_range_int8(1536)
    x = _f32(4, 1536, scale=3.0)
    ws, bias = np.float32(np.linspace(0.01, 0.02, 6)), _f32(6)
    cases = [  # (function, its arguments, the numpy integer reference or None)
        (lambda p, q: hal.qmatmul(p, q, a_zero_point=7, b_zero_point=-128), [a, w],
         QREF(a, w, a_zero_point=7, b_zero_point=-128)),
        (lambda p: hal.qmatmul(p, hal.asarray(w), a_zero_point=128, b_zero_point=3), [a],
         QREF(a, w, a_zero_point=128, b_zero_point=3)),
        (lambda p, q: hal.qmatmul(p, q, a_zero_point=-5, b_zero_point=127), [s, w],
         QREF(s, w, a_zero_point=-5, b_zero_point=127)),
        (hal.nn.quantized_linear, [x, w, ws, bias], None),
        (lambda p: hal.nn.quantized_linear(p, hal.asarray(w), hal.asarray(ws)), [x], None),
    ]
    for k, (fn, args, expected) in enumerate(cases):
        tensors = _tensors(args)
        model = hal.onnx.export(fn, *tensors, int8_form=form)
        got = _ort_run(model, {f"input_{i}": v for i, v in enumerate(args)})[0]
        if expected is not None:
            np.testing.assert_array_equal(got, expected, err_msg=f"case {k}")
        else:  # float32 rounding of the same integer sums
            want = fn(*tensors).numpy()
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-4, err_msg=f"case {k}")


def _weight_types(w, form):
    x = hal.asarray(_f32(2, 8))
    ws = hal.asarray(np.full(3, 0.1, np.float32))
    model = hal.onnx.export(lambda v: hal.nn.quantized_linear(v, hal.asarray(w), ws), x,
                            int8_form=form)
    return [numpy_helper.to_array(t).dtype.name for t in model.graph.initializer
            if len(t.dims) == 2]


def test_a_constant_int8_weight_is_kept_in_7_bits_and_shifted_beyond_without_vnni():
    assert _weight_types(_ints(-64, 65, (8, 3), np.int8), U8U8) == ["int8"]  # quantize_dynamic's
    assert _weight_types(_ints(-128, 128, (8, 3), np.int8), U8U8) == ["uint8"]


def test_an_int8_weight_stays_int8_in_the_vnni_form_and_is_the_default_there():
    assert _weight_types(_ints(-128, 128, (8, 3), np.int8), U8S8) == ["int8"]
    default = "int8" if int8_product_form() == U8S8 else "uint8"
    assert _weight_types(_ints(-128, 128, (8, 3), np.int8), None) == [default]


def test_an_unknown_int8_form_is_refused():
    with pytest.raises(hal.HalError, match="int8_form 'int8 x int8'"):
        _weight_types(_ints(-64, 65, (8, 3), np.int8), "int8 x int8")


def _tensors(args, device=None):
    return [hal.asarray(a, device=device) for a in args]


def _assert_close(got: np.ndarray, want: np.ndarray, what: str):
    assert (got.dtype, got.shape) == (want.dtype, want.shape), what
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6, equal_nan=True,
                                   err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


def _ort_run(model, feeds: dict) -> list[np.ndarray]:
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


@pytest.mark.parametrize("opset", [17, 20, 23])
@pytest.mark.parametrize("case", list(CASES))
def test_export_runs_in_onnxruntime_as_hal_eager(case, opset):
    fn, args = CASES[case]
    tensors = _tensors(args)
    model = hal.onnx.export(fn, *tensors, opset=opset)
    onnx.checker.check_model(model, full_check=True)
    assert all(node.name and node.name.startswith("n") for node in model.graph.node)
    got = _ort_run(model, {f"input_{i}": a for i, a in enumerate(args)})
    want = [t.numpy() for t in fn(*tensors)]
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        _assert_close(g, w, f"{case} output {k} (opset {opset})")


@pytest.mark.parametrize("case", list(CASES))
def test_export_then_load_runs_on_hal_as_eager(case):
    fn, args = CASES[case]
    tensors = _tensors(args)
    model = hal.onnx.load(hal.onnx.export(fn, *tensors))
    assert model.input_names == [f"input_{i}" for i in range(len(args))]
    want = [t.numpy() for t in fn(*tensors)]
    for k, (g, w) in enumerate(zip(model(*tensors), want)):
        _assert_close(g.numpy(), w, f"{case} output {k}")


def test_dynamic_update_slice_exports_as_scatternd_and_imports_back():
    def fn(c, k, p):
        start = hal.pad(p, ((2, 1),))
        return (hal.dynamic_update_slice(c, k, start),
                hal.dynamic_update_slice(c, k[:, :, :, :2], hal.astype(start, hal.int32) + 3),
                hal.dynamic_update_slice(c, c[:1], [-4, 0, 0, 0]),
                hal.dynamic_update_slice(c, k[:, :, :0], start))

    args = [_f32(2, 3, 6, 4), _f32(2, 3, 1, 4), np.array([4], np.int64)]
    tensors = _tensors(args)
    model = hal.onnx.export(fn, *tensors)
    assert {n.op_type for n in model.graph.node} >= {"ScatterND"}
    got = _ort_run(model, {f"input_{i}": v for i, v in enumerate(args)})
    loaded = hal.onnx.load(model)
    for p in (4, 0, 9):  # the start is an input: one graph for every position
        tensors[2] = hal.asarray(np.array([p], np.int64))
        want = [t.numpy() for t in fn(*tensors)]
        assert {n.op for n in loaded.graph(*tensors).nodes} >= {"dynamic_update_slice"}
        for k, (g, w) in enumerate(zip(loaded(*tensors), want, strict=True)):
            np.testing.assert_array_equal(g.numpy(), w, err_msg=f"start {p}, output {k}")
    for k, (g, w) in enumerate(zip(got, [t.numpy() for t in fn(*_tensors(args))], strict=True)):
        np.testing.assert_array_equal(g, w, err_msg=f"onnxruntime, output {k}")


@pytest.mark.parametrize(("indices", "attrs", "words"), [
    ([[0, 0], [2, 1]], {}, "indices of shape (2, 2) into data of shape (3, 4)"),
    ([[0], [2]], {}, "is not a block write"),
    ([[1], [2]], {"reduction": "add"}, "reduction 'add'"),
    ([[2], [3]], {}, "is not a block write"),  # past the end of data
], ids=["not a block", "not consecutive", "reduction", "outside"])
def test_scatternd_other_than_a_block_write_is_refused(indices, attrs, words):
    indices = np.array(indices, np.int64)
    updates = _f32(2, *(4,) * (2 - indices.shape[-1]))
    node = helper.make_node("ScatterND", ["x", "i", "u"], ["y"], name="scatter", **attrs)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4])],
        [numpy_helper.from_array(indices, "i"), numpy_helper.from_array(updates, "u")])
    opsets = [helper.make_opsetid("", 18)]
    model = hal.onnx.load(helper.make_model(graph, opset_imports=opsets,
                                            ir_version=helper.find_min_ir_version_for(opsets)))
    with pytest.raises(hal.UnsupportedOp, match="node 'scatter' \\(ScatterND\\)") as caught:
        model(hal.asarray(_f32(3, 4)))
    assert words in str(caught.value) and "hal.dynamic_update_slice" in str(caught.value)


def test_export_then_load_on_opencl():
    if "opencl" not in hal.available_backends():
        pytest.skip(f"opencl: {hal.backend('opencl').why_unavailable()}")
    hal.settings.fallback = "allow"  # ops opencl lacks run on the CPU
    fn, args = CASES["nn"]
    model = hal.onnx.load(hal.onnx.export(fn, *_tensors(args)))
    tensors = _tensors(args, device="opencl")
    got = model(*tensors)
    assert {t.device.name for t in got} == {tensors[0].device.name}
    for k, (g, w) in enumerate(zip(got, fn(*_tensors(args)))):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=1e-6,
                                   err_msg=f"output {k}")


def test_fused_nodes_export_as_their_bodies():
    x = hal.asarray(_f32(3, 4))

    def f(a):
        return hal.sum(hal.exp(a) * 2.0 + a, axis=1), hal.tanh(a) - 1.0

    graph = hal.compile.passes.fuse(hal.jit(f).graph(x))
    assert graph.op_counts() == {"fused": 2}
    model = hal.onnx.to_onnx(graph, input_names=["x"], output_names=["s", "t"])
    assert [n.op_type for n in model.graph.node] == ["Exp", "Mul", "Add", "ReduceSum", "Tanh",
                                                     "Sub"]
    assert model.graph.node[0].name == "n0.fused.n0.exp/Exp"
    for g, w in zip(_ort_run(model, {"x": x.numpy()}), f(x)):
        _assert_close(g, w.numpy(), "fused")


def test_export_writes_the_file_and_keeps_constants(tmp_path):
    w = hal.asarray(_f32(4, 3))
    x = hal.asarray(_f32(2, 4))
    path = tmp_path / "f.onnx"
    hal.onnx.export(lambda a: hal.nn.linear(a, w) * 3.0, x, path=path,
                    input_names=["x"], output_names=["y"])
    model = onnx.load(str(path))
    assert sorted(numpy_helper.to_array(t).shape for t in model.graph.initializer) == [(), (4, 3)]
    assert [d.dim_value for d in model.graph.output[0].type.tensor_type.shape.dim] == [2, 3]
    loaded = hal.onnx.load(path)
    np.testing.assert_allclose(loaded(x)[0].numpy(), (x.numpy() @ w.numpy()) * 3, rtol=1e-6)


def test_outputs_that_are_inputs_constants_or_repeated():
    x = hal.asarray(np.arange(3, dtype=np.float32))
    c = hal.asarray(np.float32(5))

    def f(a):
        y = a * 2.0
        return a, y, y, c

    model = hal.onnx.export(f, x)
    want = [t.numpy() for t in f(x)]
    for got in (_ort_run(model, {"input_0": x.numpy()}),
                [t.numpy() for t in hal.onnx.load(model)(x)]):
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            _assert_close(g, w, f"output {k}")


def test_import_hal_does_not_import_onnx():
    code = "import sys, hal; hal.onnx; assert 'onnx' not in sys.modules, 'onnx imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


# -- a model in torch.onnx's BERT export style --------------------------------------------------
def _bert_style_model(rng) -> onnx.ModelProto:
    """One encoder layer and a pooler as torch.onnx writes BERT at opset 14: dynamic batch
    and sequence dims, the heads split through Shape/Gather/Unsqueeze/Concat/Reshape, the
    mask through Unsqueeze/Cast/Sub/Mul, layer norm as ReduceMean/Sub/Pow/Sqrt/Div, erf gelu."""
    hidden, heads, vocab, positions, ffn = 8, 2, 20, 16, 16
    head = hidden // heads
    inits: dict[str, np.ndarray] = {}
    nodes: list = []

    def const(value, dtype=np.float32):
        name = f"c{len(inits)}"
        inits[name] = np.asarray(value, dtype=dtype)
        return name

    def weight(*shape):
        return const(rng.standard_normal(shape) * 0.3)

    def op(op_type, *inputs, **attrs):
        out = f"v{len(nodes)}"
        nodes.append(helper.make_node(op_type, list(inputs), [out], name=f"/{op_type}_{len(nodes)}",
                                      **attrs))
        return out

    def layer_norm(x):
        centred = op("Sub", x, op("ReduceMean", x, axes=[-1]))
        var = op("ReduceMean", op("Pow", centred, const(2.0)), axes=[-1])
        y = op("Div", centred, op("Sqrt", op("Add", var, const(1e-12))))
        return op("Add", op("Mul", y, const(1 + rng.standard_normal(hidden) * 0.1)),
                  weight(hidden))

    def dense(x, n_in, n_out):
        return op("Add", op("MatMul", x, weight(n_in, n_out)), weight(n_out))

    i0, i1 = const(0, np.int64), const(1, np.int64)
    ax0 = const([0], np.int64)
    shape = op("Shape", "input_ids")
    positions_ids = op("Unsqueeze", op("Range", i0, op("Gather", shape, i1), i1), ax0)
    types = op("ConstantOfShape", shape, value=helper.make_tensor("value", TensorProto.INT64,
                                                                   [1], [0]))
    x = op("Add", op("Add", op("Gather", weight(vocab, hidden), "input_ids"),
                     op("Gather", weight(positions, hidden), positions_ids)),
           op("Gather", weight(2, hidden), types))
    x = layer_norm(x)

    x_shape = op("Shape", x)
    batch = op("Unsqueeze", op("Gather", x_shape, i0), ax0)
    seq = op("Unsqueeze", op("Gather", x_shape, i1), ax0)
    split = op("Concat", batch, seq, const([heads], np.int64), const([head], np.int64), axis=0)

    def heads_of(y, perm):
        return op("Transpose", op("Reshape", y, split), perm=perm)

    q = heads_of(dense(x, hidden, hidden), [0, 2, 1, 3])
    k = heads_of(dense(x, hidden, hidden), [0, 2, 3, 1])
    v = heads_of(dense(x, hidden, hidden), [0, 2, 1, 3])
    mask = op("Cast", op("Unsqueeze", "attention_mask", const([1, 2], np.int64)),
              to=TensorProto.FLOAT)
    mask = op("Mul", op("Sub", const(1.0), mask), const(-10000.0))
    # torch's expand: the target shape with -1 replaced through Equal/Where on constants
    target = op("Concat", batch, const([1, 1], np.int64), seq, axis=0)
    target = op("Where", op("Equal", target, const(-1, np.int64)), const(1, np.int64), target)
    mask = op("Expand", mask, target)
    nodes.append(helper.make_node("Constant", [], ["sqrt_head"], name="/Constant",
                                  value=numpy_helper.from_array(np.float32(math.sqrt(head)))))
    scores = op("Add", op("Div", op("MatMul", q, k), "sqrt_head"), mask)
    context = op("Transpose", op("MatMul", op("Softmax", scores, axis=-1), v), perm=[0, 2, 1, 3])
    merged = op("Reshape", context, op("Concat", batch, seq, const([hidden], np.int64), axis=0))
    x = layer_norm(op("Add", dense(merged, hidden, hidden), x))

    h = dense(x, hidden, ffn)
    gelu = op("Mul", op("Mul", h, op("Add", op("Erf", op("Div", h, const(math.sqrt(2)))),
                                     const(1.0))), const(0.5))
    x = layer_norm(op("Add", dense(gelu, ffn, hidden), x))
    nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="/out"))
    first = op("Squeeze", op("Slice", "last_hidden_state", ax0, const([1], np.int64),
                             const([1], np.int64)), const([1], np.int64))
    pooled = op("Gemm", first, weight(hidden, hidden), weight(hidden), transB=1)
    nodes.append(helper.make_node("Tanh", [pooled], ["pooler_output"], name="/pooler"))

    dims = ["batch", "sequence"]
    graph = helper.make_graph(
        nodes, "bert_style",
        [helper.make_tensor_value_info(n, TensorProto.INT64, dims)
         for n in ("input_ids", "attention_mask")],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT,
                                       [*dims, hidden]),
         helper.make_tensor_value_info("pooler_output", TensorProto.FLOAT, ["batch", hidden])],
        [numpy_helper.from_array(a, n) for n, a in inits.items()])
    opsets = [helper.make_opsetid("", 14)]
    return helper.make_model(graph, opset_imports=opsets,
                             ir_version=helper.find_min_ir_version_for(opsets))


def test_bert_style_model_matches_onnxruntime_at_two_lengths(tmp_path):
    rng = np.random.default_rng(3)
    path = tmp_path / "bert_style.onnx"
    onnx.save(_bert_style_model(rng), str(path))
    model = hal.onnx.load(path)
    assert model.inputs[0][1] == ("batch", "sequence")
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    for seq in (5, 9):
        ids = rng.integers(0, 20, (2, seq)).astype(np.int64)
        mask = np.ones((2, seq), np.int64)
        mask[1, seq - 2:] = 0
        graph = model.graph(((2, seq), hal.int64), ((2, seq), hal.int64))
        assert {"matmul", "take", "softmax"} <= set(graph.op_counts())
        assert not {"Shape", "range"} & set(graph.op_counts())
        got = model(hal.asarray(ids), hal.asarray(mask))
        want = session.run(None, {"input_ids": ids, "attention_mask": mask})
        assert [g.shape for g in got] == [(2, seq, 8), (2, 8)]
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.numpy(), w, rtol=1e-4, atol=1e-5)


def test_onnxruntime_quantize_dynamic_output_imports(tmp_path):
    from onnxruntime.quantization import QuantType, quantize_dynamic

    rng = np.random.default_rng(5)
    w1, b1 = (rng.standard_normal((16, 12)) * 0.3).astype(np.float32), np.float32([0.1] * 12)
    w2 = (rng.standard_normal((12, 4)) * 0.3).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]), helper.make_node("Add", ["h", "b1"],
                                                                             ["hb"]),
             helper.make_node("Relu", ["hb"], ["r"]), helper.make_node("MatMul", ["r", "w2"],
                                                                       ["y"])]
    graph = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])],
        [numpy_helper.from_array(a, n) for n, a in (("w1", w1), ("b1", b1), ("w2", w2))])
    opsets = [helper.make_opsetid("", 17)]
    fp32, int8 = tmp_path / "mlp.onnx", tmp_path / "mlp_int8.onnx"
    onnx.save(helper.make_model(graph, opset_imports=opsets,
                                ir_version=helper.find_min_ir_version_for(opsets)), str(fp32))
    # reduce_range: 7-bit weights, which ONNX Runtime multiplies exactly without VNNI
    quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8, reduce_range=True)
    model = hal.onnx.load(int8)
    ops_in_file = {n.op_type for n in model.proto.graph.node}
    assert {"DynamicQuantizeLinear", "MatMulInteger"} <= ops_in_file
    x = _f32(3, 16, scale=2.0)
    graph = model.graph(hal.asarray(x))
    assert "qmatmul" in graph.op_counts()
    got = model(hal.asarray(x))[0].numpy()
    want = ort.InferenceSession(str(int8), providers=["CPUExecutionProvider"]).run(
        None, {"x": x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


# -- ONNX ops the exporter does not write, one node each, against ONNX Runtime ----------------
def _i64(*values):
    return np.array(values, np.int64)


_X = np.array([[7.0, -7.0, 2.5, -0.5], [0.0, 3.0, -3.0, np.inf]], np.float32)
# name -> (op type, graph inputs, initializers (static operands), attributes, outputs, opset)
ONNX_NODES = {
    "Mod fmod": ("Mod", {"a": _X[:, :3], "b": np.float32([2, -2, 1.5])}, {}, {"fmod": 1}, 1, 17),
    "Mod int": ("Mod", {"a": _i64(7, -7, 7, -7, 6), "b": _i64(2, 2, -2, -2, 3)}, {}, {}, 1, 17),
    "Div int": ("Div", {"a": _i64(7, -7, 7, -7, 6), "b": _i64(2, 2, -2, -2, 3)}, {}, {}, 1, 17),
    "Floor": ("Floor", {"x": _X}, {}, {}, 1, 17),
    "Reciprocal": ("Reciprocal", {"x": _X}, {}, {}, 1, 17),
    "IsInf positive": ("IsInf", {"x": _X * -1}, {}, {"detect_negative": 0}, 1, 17),
    "Clip": ("Clip", {"x": _X}, {"lo": np.float32(-1), "hi": np.float32(2)}, {}, 1, 17),
    "Flatten": ("Flatten", {"x": _f32(2, 3, 4)}, {}, {"axis": 2}, 1, 17),
    "Squeeze": ("Squeeze", {"x": _f32(1, 3, 1)}, {}, {}, 1, 17),
    "Split": ("Split", {"x": _f32(2, 7)}, {}, {"axis": 1, "num_outputs": 3}, 3, 18),
    "Split sizes": ("Split", {"x": _f32(5, 2)}, {"split": _i64(1, 4)}, {}, 2, 17),
    "Slice negative": ("Slice", {"x": _f32(4, 6)}, {"starts": _i64(-1, 5), "ends": _i64(
        -(2 ** 63), -100), "axes": _i64(0, -1), "steps": _i64(-2, -2)}, {}, 1, 17),
    "ScatterND block": ("ScatterND", {"x": _f32(3, 4, 2)}, {
        "i": np.moveaxis(np.indices((2, 3)), 0, -1) + _i64(1, 1), "u": _f32(2, 3, 2)}, {}, 1, 16),
    "ScatterND negative": ("ScatterND", {"x": _f32(3, 4)}, {"i": _i64(-1).reshape(1, 1),
                                                            "u": _f32(1, 4)}, {}, 1, 11),
    "Pad crop": ("Pad", {"x": _f32(3, 4)}, {"pads": _i64(1, -1, -2, 2),
                                            "value": np.float32(9)}, {}, 1, 17),
    "TopK": ("TopK", {"x": np.float32([[3, 1, 3, 1, 2]])}, {"k": _i64(3)}, {"largest": 1},
             2, 17),
    "CumSum": ("CumSum", {"x": _i64(1, 2, 3, 4)}, {"axis": _i64(0)},
               {"exclusive": 1, "reverse": 1}, 1, 17),
    "ArgMax last": ("ArgMax", {"x": np.float32([[1, 3, 3, 0]])}, {},
                    {"axis": 1, "select_last_index": 1}, 1, 17),
    "ReduceSum int": ("ReduceSum", {"x": np.int32([[1, 2], [3, 4]])}, {"axes": _i64(1)},
                      {"keepdims": 0}, 1, 17),
    "ReduceMax axes input": ("ReduceMax", {"x": _f32(2, 3)}, {"axes": _i64(0)}, {}, 1, 18),
    "Softmax opset 11": ("Softmax", {"x": _f32(2, 3, 4)}, {}, {"axis": 1}, 1, 11),
    "LayerNormalization axis": ("LayerNormalization", {"x": _f32(2, 3, 4)},
                                {"scale": _f32(3, 4), "bias": _f32(3, 4)}, {"axis": 1}, 1, 17),
    "Conv 1-d no pads": ("Conv", {"x": _f32(1, 3, 8)}, {"w": _f32(4, 3, 3)},
                         {"strides": [2]}, 1, 17),
    "Conv 3-d groups": ("Conv", {"x": _f32(1, 4, 4, 5, 3)}, {"w": _f32(2, 2, 2, 3, 1),
                                                            "b": _f32(2)},
                        {"group": 2, "pads": [0, 1, 0, 1, 0, 0], "dilations": [2, 1, 1]},
                        1, 17),
    "ConvTranspose": ("ConvTranspose", {"x": _f32(1, 2, 4, 3)}, {"w": _f32(2, 3, 3, 2)},
                      {"strides": [2, 2], "pads": [1, 0, 0, 1], "output_padding": [1, 0]},
                      1, 17),
    "MaxPool opset 11": ("MaxPool", {"x": _f32(1, 2, 5, 5)}, {},
                         {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
                         1, 11),
    "AveragePool default count": ("AveragePool", {"x": _f32(1, 2, 5)}, {},
                                  {"kernel_shape": [2], "pads": [1, 1]}, 1, 17),
    "BatchNormalization": ("BatchNormalization", {"x": _f32(2, 3, 2, 2)},
                           {"s": _f32(3), "b": _f32(3), "m": _f32(3),
                            "v": np.float32([0.5, 1, 2])}, {"epsilon": 1e-3}, 1, 17),
    "RMSNormalization axis": ("RMSNormalization", {"x": _f32(2, 3, 4)}, {"scale": _f32(4)},
                              {"axis": 1, "epsilon": 1e-3}, 1, 23),
    "Gemm alpha beta": ("Gemm", {"a": _f32(3, 2)}, {"b": _f32(3, 4), "c": _f32(1, 4)},
                        {"alpha": 0.5, "beta": 2.0, "transA": 1}, 1, 17),
    "Max variadic": ("Max", {"a": _f32(2, 3), "b": _f32(3), "c": _f32(2, 1)}, {}, {}, 1, 17),
    "DequantizeLinear int32": ("DequantizeLinear", {"x": np.int32([[5, -300], [7, 1]])},
                               {"s": np.float32([0.5, 0.25])}, {"axis": 1}, 1, 17),
    "MatMulInteger zero points": ("MatMulInteger", {"a": _ints(0, 256, (3, 4), np.uint8)},
                                  {"b": _ints(0, 256, (4, 2), np.uint8),
                                   "za": np.uint8(3), "zb": np.uint8([7, 9])},
                                  {}, 1, 17),
}


@pytest.mark.parametrize("case", list(ONNX_NODES))
def test_onnx_node_imports_as_onnxruntime_runs_it(case):
    op_type, inputs, statics, attrs, outputs, opset = ONNX_NODES[case]
    names = [f"y{k}" for k in range(outputs)]
    node = helper.make_node(op_type, [*inputs, *statics], names, name=case, **attrs)
    graph = helper.make_graph(
        [node], "one", [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(
            a.dtype), a.shape) for n, a in inputs.items()],
        [], [numpy_helper.from_array(np.asarray(a), n) for n, a in statics.items()])
    opsets = [helper.make_opsetid("", opset)]
    model = helper.make_model(graph, opset_imports=opsets,
                              ir_version=helper.find_min_ir_version_for(opsets))
    model = onnx.shape_inference.infer_shapes(model, strict_mode=True)  # the outputs' types
    model.graph.output.extend(model.graph.value_info)
    want = _ort_run(model, inputs)
    got = hal.onnx.load(model)(*(hal.asarray(a) for a in inputs.values()))
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        _assert_close(g.numpy(), w, f"{case} output {k}")


# -- bad input --------------------------------------------------------------------------------
def _one_node_model(op_type, inputs, attrs=None, name="odd"):
    node = helper.make_node(op_type, inputs, ["y"], name=name, **(attrs or {}))
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 2])
                      for n in inputs],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])])
    opsets = [helper.make_opsetid("", 17)]
    return helper.make_model(graph, opset_imports=opsets,
                             ir_version=helper.find_min_ir_version_for(opsets))


def test_unsupported_onnx_op_names_op_node_and_file(tmp_path):
    path = tmp_path / "einsum.onnx"
    onnx.save(_one_node_model("Einsum", ["a", "b"], {"equation": "ij,jk->ik"}), str(path))
    with pytest.raises(hal.UnsupportedOp, match=r"einsum\.onnx.*'odd'.*'Einsum'.*SUPPORTED_OPS"):
        hal.onnx.load(path)
    assert "MatMulInteger" in hal.onnx.SUPPORTED_OPS and "Einsum" not in hal.onnx.SUPPORTED_OPS


def test_model_the_checker_rejects_names_the_file(tmp_path):
    path = tmp_path / "broken.onnx"
    onnx.save(_one_node_model("Relu", ["a"], {"alpha": 1.0}), str(path))  # no such attribute
    with pytest.raises(hal.HalError, match=r"broken\.onnx: the ONNX checker rejects it"):
        hal.onnx.load(path)
    (tmp_path / "junk.onnx").write_bytes(b"not a model")
    with pytest.raises(hal.HalError, match=r"junk\.onnx: cannot read it"):
        hal.onnx.load(tmp_path / "junk.onnx")


def test_wrong_inputs_name_the_input():
    model = hal.onnx.load(_one_node_model("Add", ["a", "b"]))
    a = hal.asarray(_f32(2, 2))
    with pytest.raises(hal.HalError, match=r"1 inputs given, the model takes 2 \(a, b\)"):
        model(a)
    with pytest.raises(hal.ShapeError, match="input 'b'"):
        model(a, hal.asarray(_f32(2, 3)))
    with pytest.raises(hal.UnsupportedDType, match="input 'b' is float32, got float64"):
        model(a, hal.asarray(np.ones((2, 2))))
    np.testing.assert_allclose(model(a, a)[0].numpy(), a.numpy() * 2)


def test_complex_ops_do_not_export():
    x = hal.asarray(np.ones(4, np.complex64))
    with pytest.raises(hal.UnsupportedOp, match=r"'fftn'.*ONNX has no complex tensors"):
        hal.onnx.export(lambda a: hal.fft.fftn(a) * 2.0, x)
    with pytest.raises(hal.UnsupportedOp, match=r"'rfftn'.*ONNX has no complex tensors"):
        hal.onnx.export(lambda a: hal.real(hal.fft.rfft(a)), hal.asarray(np.ones(4)))
