"""The ONNX Runtime backend: devices and memory, single ops against the reference through
their cached one-node sessions, hal.jit graphs as one session (equal to eager cpu, built
once, placed on the EP), graphs replayed where ONNX Runtime has no kernel, fallback and
its refusal, and bad input. The op x dtype cells are in tests/conformance.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import hal
from hal import ops

ort = pytest.importorskip("onnxruntime")

RNG = np.random.default_rng(5)


@pytest.fixture(scope="module")
def dev():
    """onnxruntime:0, the CPU execution provider."""
    return hal.device("onnxruntime:0")


def _on(dev, a):
    return hal.asarray(a, device=dev)


def _close(actual, expected, op: str):
    rtol, atol = ops.spec(op).tolerance_for(np.asarray(expected).dtype)
    np.testing.assert_allclose(np.asarray(actual, np.float64), np.asarray(expected, np.float64),
                               rtol=rtol, atol=atol)
    assert np.asarray(actual).dtype == np.asarray(expected).dtype


def test_the_cpu_execution_provider_is_device_0(dev):
    caps = dev.capabilities
    assert "onnxruntime:0" in hal.devices()
    assert caps.name == "CPUExecutionProvider" and ort.__version__ in caps.runtime_version
    assert isinstance(caps.extra["provider_options"], dict)
    assert "ONNX Runtime has no complex tensors" in caps.unsupported["complex64"]
    assert "add" in caps.ops and "erf" in caps.ops


def test_the_module_loads_without_onnxruntime():
    code = ("import sys; import backends.onnxruntime as b; "
            "print('onnxruntime' in sys.modules, b.OnnxRuntimeBackend.name)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.stdout.split() == ["False", "onnxruntime"], done.stderr


def test_unavailable_says_how_to_install(monkeypatch):
    from backends.onnxruntime import OnnxRuntimeBackend

    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import onnxruntime fails
    why = OnnxRuntimeBackend().why_unavailable()
    assert "onnxruntime does not import" in why and "pip install onnxruntime" in why


@pytest.mark.parametrize("dtype", [d for d in hal.ALL if not hal.isdtype(d, "complex floating")],
                         ids=lambda d: d.name)
def test_memory_round_trip(dev, dtype):
    for shape in [(), (0, 3), (2, 3)]:
        host = (RNG.standard_normal(shape) * 10).astype(dtype)
        assert np.array_equal(_on(dev, host).numpy(), host)
    strided = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]
    assert np.array_equal(_on(dev, strided).numpy(), strided)


def test_complex_data_is_refused(dev):
    with pytest.raises(hal.UnsupportedDType, match="ONNX Runtime has no complex tensors"):
        _on(dev, np.ones(3, np.complex64))
    with pytest.raises(hal.UnsupportedOp, match=r"rfftn.*ONNX Runtime has no complex"):
        hal.fft.rfft(_on(dev, np.ones(8, np.float32)))


_F32 = RNG.standard_normal((3, 4)).astype(np.float32)
_FULL_INT8 = np.repeat(np.int8([[-128, 127, 0]]), 1536, axis=0) + \
    RNG.integers(0, 2, (1536, 3)).astype(np.int8) * np.int8([1, -1, 1])
_CASES = [  # (op, operands, params)
    ("add", [_F32, np.float32(2.5)], {}),
    ("add", [np.arange(6, dtype=np.int8).reshape(2, 3), np.int8(120)], {}),  # wraps as numpy
    ("matmul", [RNG.standard_normal((2, 3, 4)), RNG.standard_normal((4, 5))], {}),
    ("exp", [_F32.astype(np.float16)], {}),
    ("sum", [np.arange(12, dtype=np.int32).reshape(3, 4)], {"axis": 1, "keepdims": True}),
    ("max", [np.arange(12, dtype=np.int64).reshape(3, 4)], {"axis": 0}),
    ("broadcast_to", [_F32[:1]], {"shape": (2, 3, 4)}),
    ("slice", [_F32], {"bounds": ((2, -1, 2), (0, 2, 2))}),
    ("pad", [_F32], {"pad_width": ((1, 0), (2, 1)), "mode": "edge"}),
    ("take", [_F32, np.array([3, 0, 3], np.int64)], {"axis": 1}),
    ("astype", [_F32], {"dtype": hal.bfloat16}),
    ("astype", [_F32 * 10], {"dtype": hal.int32}),
    ("softmax", [_F32], {"axis": 0}),
    ("layer_norm", [_F32, None, np.arange(4, dtype=np.float32)], {"eps": 1e-3}),
    ("gelu", [_F32], {"approximate": "tanh"}),
    ("linear", [_F32, RNG.standard_normal((4, 2)).astype(np.float32), None],
     {"activation": "relu"}),
    ("cumulative_sum", [np.array([True, False, True])], {"include_initial": True}),
    ("argsort", [np.array([3, 1, 2, 1], np.int32)], {"descending": True}),
    ("qmatmul", [RNG.integers(-128, 128, (3, 8)).astype(np.int8),
                 RNG.integers(-128, 128, (8, 2)).astype(np.int8)], {"b_zero_point": 3}),
    # full-range uint8 x int8 at K = 1536: pair sums past 16 bits (exact as uint8 x uint8)
    ("qmatmul", [np.full((2, 1536), 255, np.uint8), _FULL_INT8], {"a_zero_point": 3}),
    ("quantized_linear", [RNG.standard_normal((2, 1536)).astype(np.float32) * 4, _FULL_INT8,
                          np.float32([0.01, 0.02, 0.03]), None], {}),
    ("max", [np.float32([[1, np.nan, 3], [2, 5, -np.inf]])], {"axis": 1}),
    ("permute_dims", [np.float32(1.5)], {"axes": ()}),
    ("roll", [np.zeros((0, 3), np.int32)], {"shift": 2}),
]


@pytest.mark.parametrize(("op", "operands", "params"), _CASES,
                         ids=[f"{op}-{np.asarray(a[0]).dtype}" for op, a, _ in _CASES])
def test_single_op_matches_the_reference(dev, op, operands, params):
    spec = ops.spec(op)
    with hal.placement() as placed:
        out = hal.op(op, *[None if a is None else _on(dev, a) for a in operands], **params)
    assert placed.to_dict()["ops"][op] == {"onnxruntime:0:kernel": 1}
    _close(out.numpy(), spec.evaluate(*operands, **params), op)


def test_a_single_op_session_is_built_once_per_signature(dev):
    sessions = dev.op_sessions
    x, y = _on(dev, _F32), _on(dev, _F32 * 2)
    hal.subtract(x, y)
    misses = sessions.misses
    hits = sessions.hits
    np.testing.assert_array_equal(hal.subtract(y, x).numpy(), _F32)
    assert (sessions.misses, sessions.hits) == (misses, hits + 1)
    hal.subtract(x, _on(dev, _F32[0]))  # another operand shape: another session
    assert sessions.misses == misses + 1


def _block(x, w1, b1, w2, gamma, beta):
    """A transformer-ish block: attention over rows, a GELU MLP, residuals, layer norms."""
    q = hal.reshape(x, (1, *x.shape))
    attended = hal.reshape(hal.nn.scaled_dot_product_attention(q, q, q, causal=True), x.shape)
    h = hal.nn.layer_norm(x + attended, gamma, beta)
    y = hal.nn.layer_norm(h + hal.nn.linear(hal.nn.linear(h, w1, b1, activation="gelu"), w2),
                          gamma, beta)
    return hal.nn.softmax(y, axis=-1), hal.mean(y * y)


def _block_args():
    return [RNG.standard_normal(s).astype(np.float32) for s in
            [(6, 8), (8, 16), (16,), (16, 8), (8,), (8,)]]


def test_jit_runs_a_block_as_one_session_equal_to_eager_cpu(dev):
    args = _block_args()
    jitted = hal.jit(_block)
    with hal.placement() as placed:
        outs = jitted(*[_on(dev, a) for a in args])
    expected = _block(*[_on("cpu", a) for a in args])
    for out, ref in zip(outs, expected, strict=True):
        np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-5, atol=1e-6)
        assert out.device is dev
    counts = jitted.compiled(*[_on(dev, a) for a in args]).counts()
    assert counts["CPUExecutionProvider:LayerNormalization"] == 2  # composites kept whole
    assert all(key.startswith("CPUExecutionProvider:") for key in counts)
    placements = placed.to_dict()["ops"]
    assert placements["layer_norm"] == {"onnxruntime:0:CPUExecutionProvider": 2}
    assert placed.fallbacks == 0


def test_jit_builds_the_session_once(dev):
    args = [_on(dev, a) for a in _block_args()]
    sessions = dev.graph_sessions
    jitted = hal.jit(_block)
    jitted(*args)
    misses = sessions.misses
    jitted(*args)
    hal.jit(_block)(*args)  # another jit of the same function: the same session
    assert sessions.misses == misses
    assert jitted.traces == 1


def test_large_sessions_get_a_thread_pool_and_other_sessions_still_work(dev):
    small = hal.jit(lambda v: v * 2)
    small(_on(dev, _F32))
    big = _on(dev, np.ones((300, 300), np.float32))
    assert small.compiled(_on(dev, _F32)).program.threads == 1
    assert small.compiled(big).program.threads == os.cpu_count()
    model = hal.onnx.to_onnx(small.graph(big))  # a session of other code, default options
    out = ort.InferenceSession(model.SerializeToString()).run(None, {"input_0": big.numpy()})
    np.testing.assert_array_equal(out[0], big.numpy() * 2)


SPINNING = ("session.intra_op.allow_spinning", "session.inter_op.allow_spinning")


def _spinning(session) -> list[str]:
    options = session.get_session_options()
    return [options.get_session_config_entry(key) for key in SPINNING]


def test_sessions_do_not_spin_between_runs_but_the_ort_peers_do(dev, tmp_path):
    from frontends.quant import peers

    x = _on(dev, np.ones((300, 300), np.float32))
    for v in (x, _on(dev, _F32)):  # with a thread pool and without
        assert _spinning(hal.jit(lambda v: hal.exp(v) * 2).compiled(v).program.session) == \
            ["0", "0"]
    path = tmp_path / "twice.onnx"
    path.write_bytes(hal.onnx.to_onnx(hal.jit(lambda v: v * 2).graph(x)).SerializeToString())
    options = peers.ort_session(path).get_session_options()  # ONNX Runtime as users get it
    for key in SPINNING:
        with pytest.raises(RuntimeError, match="does not have configuration"):
            options.get_session_config_entry(key)


def test_bfloat16_passes_in_and_out_of_a_session(dev):
    x = _F32.astype(hal.bfloat16)
    jitted = hal.jit(lambda v: hal.reshape(hal.astype(v, hal.float32) * 2, (4, 3)))
    out = jitted(_on(dev, x))
    np.testing.assert_array_equal(out.numpy(), (x.astype(np.float32) * 2).reshape(4, 3))
    assert "CPUExecutionProvider:Reshape" in jitted.compiled(_on(dev, x)).counts()


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
def test_a_float16_graph_rounds_between_nodes_in_one_session(dev):
    a, b = np.array([300, 2048], np.float16), np.array([65504, 1], np.float16)
    jitted = hal.jit(lambda x, y: (x * x - y, (x + 1) - x))  # x * x: inf; 2049: 2048
    out = jitted(_on(dev, a), _on(dev, b))
    np.testing.assert_array_equal(out[0].numpy(), a * a - b)
    np.testing.assert_array_equal(out[1].numpy(), (a + np.float16(1)) - a)
    executable = jitted.compiled(_on(dev, a), _on(dev, b))
    assert executable.counts()["CPUExecutionProvider:BitCast"] == 2 * 2  # x * x and x + 1
    assert executable.program.model.opset_import[0].version == 26
    single = hal.jit(lambda x: x * 2)  # nothing passed on: nothing to round, opset unchanged
    assert single.compiled(_on(dev, a)).program.model.opset_import[0].version == hal.onnx.OPSET


@pytest.fixture
def onnxruntime_1_30(monkeypatch):
    """onnxruntime as 1.30 loads models: IR version 13 and opset 25 at most (no BitCast)."""
    import onnx

    from backends.onnxruntime import formats

    class Loader(ort.InferenceSession):
        def __init__(self, model, *args, **kwargs):
            proto = onnx.load_from_string(model)
            if proto.ir_version > 13:
                raise RuntimeError(f"Unsupported model IR version: {proto.ir_version}, max "
                                   "supported IR version: 13")
            if max(o.version for o in proto.opset_import) > 25:
                raise RuntimeError("ValidateOpsetForDomain: opset is not supported")
            super().__init__(model, *args, **kwargs)

    monkeypatch.setattr(ort, "InferenceSession", Loader)
    formats.accepted.cache_clear()
    yield formats
    formats.accepted.cache_clear()


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
def test_an_older_onnxruntime_loads_what_it_accepts(onnxruntime_1_30):
    assert onnxruntime_1_30.accepted() == (13, 25)
    fresh = type(hal.backend("onnxruntime"))().open(0)  # its sessions made under 1.30
    assert fresh.capabilities.extra["onnx_formats"] == "IR version 13, opset 25"
    a, b = np.array([300, 2048], np.float16), np.array([65504, 1], np.float16)
    with warnings.catch_warnings():
        warnings.simplefilter("error", hal.PluginWarning)  # refused with a reason, no fault
        jitted = hal.jit(lambda x, y: (x * x - y, (x + 1) - x))
        out = jitted(_on(fresh, a), _on(fresh, b))
    np.testing.assert_array_equal(out[0].numpy(), a * a - b)  # rounded between nodes
    np.testing.assert_array_equal(out[1].numpy(), (a + np.float16(1)) - a)
    replayed = jitted.compiled(_on(fresh, a), _on(fresh, b))
    assert "opset 25 at most: no BitCast (opset 26)" in replayed.reason
    single = hal.jit(lambda x: x * 2)  # nothing to round: one session at the default opset
    assert single.compiled(_on(fresh, a)).program.model.opset_import[0].version == 20


def test_an_op_without_kernel_falls_back_or_is_refused(dev):
    x = np.linspace(-2, 2, 5)
    assert dev.kernel("erf", hal.float64) is None  # ONNX Runtime has no float64 Erf
    with hal.fallback_policy("allow"), hal.placement() as placed:
        out = hal.erf(_on(dev, x))
    _close(out.numpy(), ops.spec("erf").evaluate(x), "erf")
    assert placed.to_dict()["ops"]["erf"] == {"onnxruntime:0:fallback": 1}
    with hal.fallback_policy("error"), \
            pytest.raises(hal.FallbackRefused, match="erf on onnxruntime:0 for float64"):
        hal.erf(_on(dev, x))


def test_a_graph_onnx_runtime_cannot_run_is_replayed(dev):
    x = _on(dev, np.linspace(-2, 2, 5))

    def f(v):
        return hal.erf(v) * 2

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # expected: no PluginWarning, no FallbackWarning
        with hal.fallback_policy("allow"):
            jitted = hal.jit(f)
            out = jitted(x)
    executable = jitted.compiled(x)
    assert "ONNX Runtime has no kernel" in executable.reason and "Erf" in executable.reason
    assert executable.counts() == {"replayed fallback": 1, "replayed kernel": 1}
    _close(out.numpy(), ops.spec("erf").evaluate(x.numpy()) * 2, "erf")
    with hal.fallback_policy("error"), pytest.raises(hal.FallbackRefused, match="erf"):
        hal.jit(f)(x)
