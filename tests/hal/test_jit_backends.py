"""hal.jit on every available backend: compiled graphs give eager's answers, and placement
shows the fused groups each backend compiled."""

from __future__ import annotations

import numpy as np
import pytest

import hal

BACKENDS = [b for b in hal.available_backends() if b != "cuda"] + ["cuda"]


def chain(a, b):
    return hal.tanh(a * 0.5 + b) * hal.exp(-a) - 1.0


def reductions(a, b):
    return hal.sum(hal.sqrt(a * a + 1.0), axis=1), hal.max(a - b)


def composites(a, w):
    return hal.nn.layer_norm(hal.nn.gelu(hal.matmul(a, w)))


def integers(i, j):
    return hal.remainder(i, 3) + hal.floor_divide(j, 2) * i


def collective(a, b):
    """A collective between fused groups, over the one-rank group (real ranks:
    tests/frontends/parallel)."""
    return hal.exp(hal.collectives.all_reduce(a * 2.0 + b, group="self")) - 1.0


CASES = {
    "chain": (chain, [(4, 33), (1, 33)], np.float32),
    "reductions": (reductions, [(4, 33), (33,)], np.float32),
    "composites": (composites, [(4, 16), (16, 8)], np.float32),
    "integers": (integers, [(5, 7), (7,)], np.int32),
    "collective": (collective, [(4, 33), (1, 33)], np.float32),
}


@pytest.fixture(params=BACKENDS)
def device(request):
    name = request.param
    if name not in hal.available_backends():
        pytest.skip(f"{name} is unavailable here: {hal.backend(name).why_unavailable()}")
    return hal.device(name)


@pytest.mark.parametrize("case", CASES)
def test_jit_gives_eager_answers(device, case):
    hal.settings.fallback = "allow"
    fn, shapes, dtype = CASES[case]
    rng = np.random.default_rng(0)
    host = [(rng.standard_normal(s) * 4).astype(dtype) if dtype != np.int32 else
            rng.integers(-20, 20, s).astype(dtype) for s in shapes]
    args = [hal.asarray(h, device=device) for h in host]
    want = fn(*args)
    jitted = hal.jit(fn)
    with hal.placement() as where:
        got = jitted(*args)
        again = jitted(*args)
    want, got, again = (w if isinstance(w, tuple) else (w,) for w in (want, got, again))
    for g, a, w in zip(got, again, want, strict=True):
        assert (g.shape, g.dtype) == (w.shape, w.dtype)
        rtol = 0 if dtype == np.int32 else 2e-5
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=rtol, atol=rtol)
        np.testing.assert_array_equal(a.numpy(), g.numpy())
    hows = {how for *_, how in where.records}
    # a whole-graph runtime names where its session ran (ONNX Runtime: the execution provider)
    session = {device.capabilities.name} if device.backend.name == "onnxruntime" else set()
    assert hows <= {"compiled", "kernel", "fallback", "unfused"} | session
    if device.backend.name in ("cpu", "opencl", "tvm") and case == "chain":
        assert ("fused(multiply,add,tanh,negative,exp,multiply,subtract)", device.name,
                "float32", "compiled") in where.records


@pytest.mark.parametrize("name", ["cpu", "opencl", "tvm"])
def test_reduction_and_its_epilogue_compile_as_one_group(name):
    if name not in hal.available_backends():
        pytest.skip(f"{name} is unavailable here: {hal.backend(name).why_unavailable()}")
    x = hal.asarray(np.random.default_rng(1).standard_normal((3, 40)), device=name)
    jitted = hal.jit(lambda a: hal.sqrt(hal.sum(a * a, axis=1) / 4.0 + 1e-5))
    got = jitted(x)
    want = hal.sqrt(hal.sum(x * x, axis=1) / 4.0 + 1e-5)
    assert (got.shape, got.dtype) == (want.shape, want.dtype) == ((3,), hal.float64)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-13)
    graph = jitted.compiled(x).graph
    assert [n.op for n in graph.nodes] == ["fused"]
    body = graph.nodes[0].params["body"]
    assert [n.op for n in body.nodes] == ["multiply", "sum", "divide", "add", "sqrt"]
