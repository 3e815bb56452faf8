"""The llm suite on cpu: every mode and peer against the float64 numpy model, the trained
byte LM's greedy rows, the skips and the measured record."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import hal
from benchmarks.suites import llm
from benchmarks.timing import TimingOptions, measure, normwise_error
from benchmarks.workload import NotMeasuredHere, suite_names, suite_workloads

ONE_CALL = TimingOptions(warmup=0, min_samples=1, max_samples=1, sample_time=0.0, budget=0.0)
HAS_TORCH = importlib.util.find_spec("torch") is not None


def _found(name: str, batch: int | None = None):
    (workload,) = [w for w in suite_workloads("llm")
                   if w.name == name and w.params.get("batch") == batch]
    return workload


def _output(workload, device="cpu") -> np.ndarray:
    """The workload's output, asserted within its tolerance of its reference."""
    inputs = workload.build(np.dtype("float32")).inputs
    out = workload.run(*[hal.asarray(a, device=device) for a in inputs]).numpy()
    wide = [a.astype(np.float64) if a.dtype.kind == "f" else a for a in inputs]
    error = normwise_error(out, workload.reference(*wide))
    assert error <= workload.tolerance("float32"), (workload.name, error)
    return out


@pytest.fixture
def byte_lm(monkeypatch, tmp_path):
    """A byte LM trained for 3 steps in a fresh cache directory."""
    monkeypatch.setattr(hal.settings, "cache_dir", tmp_path / "cache")
    monkeypatch.setattr(llm, "BYTE_LM_STEPS", 3)
    llm.trained_byte_lm.cache_clear()
    llm.byte_lm_on.cache_clear()
    yield
    llm.trained_byte_lm.cache_clear()
    llm.byte_lm_on.cache_clear()


def test_the_suite_is_found_with_its_workloads():
    assert "llm" in suite_names()
    names = {(w.name, w.params.get("batch")) for w in suite_workloads("llm")}
    for kind in ("prefill", "decode"):
        for mode in ("jit", "eager", "numpy", "torch"):
            assert {(f"{kind}[{mode}]", 1), (f"{kind}[{mode}]", 16)} <= names
    assert {("byte_lm_greedy[jit]", None), ("byte_lm_greedy[eager]", None)} <= names
    params = _found("decode[jit]", 16).params
    assert (params["dim"], params["kv_heads"], params["position"], params["window"]) == (
        256, 2, llm.PROMPT, 128)


@pytest.mark.parametrize("kind", ["prefill", "decode"])
def test_every_mode_and_peer_matches_the_float64_model(kind):
    want = _output(_found(f"{kind}[jit]", 1))
    np.testing.assert_allclose(_output(_found(f"{kind}[eager]", 1)), want, rtol=1e-4,
                               atol=1e-4)
    np.testing.assert_allclose(_output(_found(f"{kind}[numpy]", 1)), want, rtol=1e-4,
                               atol=1e-4)
    torch_peer = _found(f"{kind}[torch]", 1)
    if HAS_TORCH:
        np.testing.assert_allclose(_output(torch_peer), want, rtol=1e-4, atol=1e-4)
    else:
        with pytest.raises(hal.UnsupportedOp, match="pip install torch"):
            _output(torch_peer)


def test_eager_runs_on_cpu_only_and_large_prefill_where_it_is_quick(null):
    inputs = [hal.asarray(a, device=null) for a in llm.prompt_ids(1)[None]]
    with pytest.raises(NotMeasuredHere, match="on cpu only, not null"):
        _found("prefill[eager]", 1).run(*inputs)
    with pytest.raises(NotMeasuredHere, match="on cpu, onnxruntime, cuda only, not null"):
        _found("prefill[jit]", 16).run(*inputs)


def test_the_byte_lm_samples_equal_generate_eagerly_and_jitted(byte_lm):
    jitted, eager = _found("byte_lm_greedy[jit]"), _found("byte_lm_greedy[eager]")
    out = _output(jitted)
    np.testing.assert_array_equal(_output(eager), out)
    assert out.shape == (1, len(llm.BYTE_LM_PROMPT) + llm.SAMPLE)
    assert llm.byte_lm_path().is_file() and llm.byte_lm_path().parent.name == "llm"
    prompt = hal.asarray(jitted.build(np.float32).inputs[0])
    facts = jitted.facts(prompt)
    assert facts["sample"].startswith(llm.BYTE_LM_PROMPT) and "3 steps" in facts["checkpoint"]


def test_a_measurement_records_tokens_per_second():
    record = measure(_found("decode[jit]", 1), "llm", "float32", hal.device("cpu"), ONE_CALL)
    assert record.status == "ok" and record.check.passed, record.error
    assert record.items == 1 and record.metrics["items_per_s"] > 0
