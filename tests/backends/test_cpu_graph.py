"""The cpu backend's jitted convolution graphs: one ONNX Runtime session where every node is
in cpu_graph.WHOLE, hal's own executable otherwise or without onnxruntime, both equal to a
numpy forward; batch norms folded into their convolutions on the per-node path."""

from __future__ import annotations

import gc
import sys

import numpy as np
import pytest

import hal
from backends import cpu_conv, cpu_graph
from hal.compile import passes

pytest.importorskip("onnxruntime")

RNG = np.random.default_rng(7)
W1 = RNG.standard_normal((6, 3, 3, 3)).astype(np.float32) * 0.3
B1 = RNG.standard_normal(6).astype(np.float32)
MEAN, VAR = RNG.standard_normal(6).astype(np.float32), RNG.uniform(0.5, 2, 6).astype(np.float32)
GAMMA, BETA = RNG.standard_normal(6).astype(np.float32), RNG.standard_normal(6).astype(np.float32)
FC = RNG.standard_normal((6 * 4 * 4, 5)).astype(np.float32) * 0.1
X = RNG.standard_normal((2, 3, 8, 8)).astype(np.float32)


@pytest.fixture(scope="module")
def cpu():
    """The cpu device."""
    return hal.device("cpu")


def _cnn(cpu, head=None):
    """conv -> batch norm -> relu -> 2x2 max pool -> linear (-> head), jitted on cpu."""
    w1, b1, mean, var, gamma, beta, fc = (hal.asarray(a, device=cpu)
                                          for a in (W1, B1, MEAN, VAR, GAMMA, BETA, FC))

    def forward(x):
        y = hal.nn.conv(x, w1, b1, padding=1)
        y = hal.nn.relu(hal.nn.batch_norm(y, mean, var, gamma, beta, eps=1e-3))
        y = hal.nn.max_pool(y, 2)
        y = hal.nn.linear(hal.reshape(y, (x.shape[0], -1)), fc)
        return y if head is None else head(y)

    return hal.jit(forward)


def _reference(x: np.ndarray) -> np.ndarray:
    """The same forward in numpy float64."""
    x, w = x.astype(np.float64), W1.astype(np.float64)
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    win = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3))
    y = np.einsum("nchwij,ocij->nohw", win, w) + B1[:, None, None]
    c = (slice(None), None, None)
    y = (y - MEAN[c]) / np.sqrt(VAR[c] + 1e-3) * GAMMA[c] + BETA[c]
    y = np.maximum(y, 0)
    y = y.reshape(2, 6, 4, 2, 4, 2).max(axis=(3, 5))
    return y.reshape(2, -1) @ FC


def _check(out, expected):
    np.testing.assert_allclose(np.asarray(out.numpy(), np.float64), expected, rtol=1e-4,
                               atol=1e-4)
    assert out.dtype == np.float32


def test_a_convolution_graph_runs_as_one_session(cpu):
    f = _cnn(cpu)
    x = hal.asarray(X, device=cpu)
    _check(f(x), _reference(X))
    counts = f.compiled(x).counts()
    assert counts["CPUExecutionProvider:Conv"] == 1
    assert all(way.startswith("CPUExecutionProvider:") for way in counts)
    with hal.placement() as placed:
        _check(f(x), _reference(X))
    assert placed.to_dict()["ops"]["conv"] == {"cpu:0:CPUExecutionProvider": 1}
    options = f.compiled(x).program.session.get_session_options()
    assert options.intra_op_num_threads == 1
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    assert options.get_session_config_entry("session.inter_op.allow_spinning") == "0"


def test_the_session_runs_the_relu_inside_the_convolution(cpu, tmp_path):
    """counts() shows the nodes as assigned to the EP (Conv, Relu); the session goes on to
    ORT_ENABLE_ALL's fusions, after which no Relu (nor batch norm) runs on its own."""
    import onnx
    import onnxruntime as ort

    program = _cnn(cpu).compiled(hal.asarray(X, device=cpu)).program
    options = program.session.get_session_options()
    assert options.graph_optimization_level == ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    ort.InferenceSession(program.model.SerializeToString(), options,
                         providers=cpu_graph.PROVIDERS)
    ran = {n.op_type for n in onnx.load(options.optimized_model_filepath).graph.node}
    assert program.nodes()["CPUExecutionProvider:Relu"] == 1
    assert "Relu" not in ran and "BatchNormalization" not in ran, ran


def test_a_node_outside_the_allowlist_keeps_the_per_node_path(cpu):
    f = _cnn(cpu, head=hal.sin)
    x = hal.asarray(X, device=cpu)
    assert "sin" not in cpu_graph.WHOLE
    _check(f(x), np.sin(_reference(X)))
    assert isinstance(f.compiled(x), hal.compile.executable.Executable)
    assert set(f.compiled(x).counts()) <= {"kernel", "compiled"}
    assert "batch_norm" not in f.compiled(x).graph.op_counts()  # folded into the conv
    assert not any(c.native.flags.writeable for c in f.compiled(x).graph.constants)
    assert any(key[0] == "conv" and key[3] == X.shape for key in cpu_conv._packed)


CONV_ARGS = dict(out_shape=(2, 6, 8, 8), out_dtype=np.dtype(np.float32), stride=1, padding=1,
                 dilation=1, groups=1, layout="channels_first")


def test_a_read_only_weight_is_prepacked_until_it_dies():
    conv = cpu_conv.kernel("conv")
    weight = W1.copy().view()
    weight.flags.writeable = False
    expected = hal.ops.spec("conv").evaluate(X, W1, padding=1)
    np.testing.assert_allclose(conv(X, weight, None, **CONV_ARGS), expected, rtol=1e-4,
                               atol=1e-4)
    key = next(k for k in cpu_conv._packed if k[1] == id(weight))
    del weight
    gc.collect()
    assert key not in cpu_conv._packed


def test_a_writable_weight_is_read_each_call():
    conv = cpu_conv.kernel("conv")
    weight = W1.copy()
    conv(X, weight, None, **CONV_ARGS)
    weight *= 2
    np.testing.assert_allclose(conv(X, weight, None, **CONV_ARGS),
                               hal.ops.spec("conv").evaluate(X, 2 * W1, padding=1),
                               rtol=1e-4, atol=1e-4)


def test_without_onnxruntime_the_graph_runs_node_by_node(cpu, monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # `import onnxruntime` fails
    assert not cpu_graph.has_onnxruntime()
    f = _cnn(cpu)
    x = hal.asarray(X, device=cpu)
    assert isinstance(f.compiled(x), hal.compile.executable.Executable)
    monkeypatch.undo()  # the per-node convolution kernel itself uses onnxruntime
    _check(f(x), _reference(X))


def test_graphs_of_other_dtypes_or_without_a_convolution_are_not_whole(cpu):
    x = hal.asarray(X, device=cpu)
    assert not cpu_graph.runs_whole(hal.jit(lambda a: hal.nn.relu(a) * 2).graph(x))
    x64 = hal.asarray(X.astype(np.float64), device=cpu)
    assert not cpu_graph.runs_whole(hal.jit(lambda a: hal.nn.max_pool(a, 2)).graph(x64))
    assert cpu_graph.runs_whole(hal.jit(lambda a: hal.nn.max_pool(a, 2)).graph(x))


def test_batch_norm_folds_into_the_convolution(cpu):
    graph = _cnn(cpu).graph(hal.asarray(X, device=cpu))
    folded = passes.fold_batch_norm(graph)
    assert graph.op_counts()["batch_norm"] == 1
    assert "batch_norm" not in folded.op_counts()
    assert folded.op_counts()["conv"] == 1
    _check(folded.run(hal.asarray(X, device=cpu))[0], _reference(X))


def test_a_batch_norm_of_a_returned_convolution_stays(cpu):
    w, mean, var = (hal.asarray(a, device=cpu) for a in (W1, MEAN, VAR))

    def both(x):
        y = hal.nn.conv(x, w)
        return y, hal.nn.batch_norm(y, mean, var)

    graph = hal.jit(both).graph(hal.asarray(X, device=cpu))
    assert passes.fold_batch_norm(graph).op_counts()["batch_norm"] == 1
