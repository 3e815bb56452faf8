"""hal.jit: tracing to graphs, the cache, passes, executables, and autodiff through both."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import hal
from backends.cpu import CpuBackend
from frontends import autograd as ag
from hal.compile import passes
from hal.compile.graph import FUSED, Graph


def _x(n=6, dtype=np.float64, device="cpu", lo=0.1):
    return hal.asarray(np.linspace(lo, 1.0, n).astype(dtype), device=device)


def _close(a, b, rtol=1e-12):
    np.testing.assert_allclose(np.asarray(a.numpy()), np.asarray(b.numpy()), rtol=rtol,
                               atol=1e-14)


def model(a, b):
    y = hal.exp(a * 2.0 + b) - hal.sin(b)
    return hal.sum(y * y) + 1.0, hal.nn.softmax(y), hal.sum(hal.exp(a) * (a * 2.0), axis=0)


# -- results, structure, cache ------------------------------------------------------------------
def test_jit_equals_eager_on_cpu_and_on_the_null_backend(cpu, null):
    hal.settings.fallback = "allow"
    for device in (cpu, null):
        a, b = _x(device=device), _x(device=device, lo=0.3)
        for got, want in zip(hal.jit(model)(a, b), model(a, b), strict=True):
            _close(got, want)


def test_pytrees_in_and_out_static_arguments_and_to_static():
    @hal.to_static(static_argnames=("power",))
    def f(params, x, *, power):
        return {"y": params["w"] * x ** power + params["b"], "n": power, "none": None}

    p = {"w": _x(), "b": _x(lo=0.5)}
    out = f(p, _x(), power=3)
    _close(out["y"], p["w"] * _x() ** 3 + p["b"])
    assert out["n"] == 3 and out["none"] is None
    f(p, _x(), power=3)
    assert f.traces == 1
    f(p, _x(), power=2)
    assert f.traces == 2
    g = hal.jit(lambda x, n: x * n, static_argnums=1)
    _close(g(_x(), 4), _x() * 4)


def test_new_shapes_retrace_with_a_warning_and_the_cache_is_bounded():
    f = hal.jit(lambda x: x + 1.0, cache_size=2, retrace_warning=3)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        for n in (2, 3, 4, 5):
            _close(f(_x(n)), _x(n) + 1.0)
    assert f.traces == 4 and len(f._cache) == 2
    assert any(issubclass(w.category, hal.RetraceWarning) and "traced 4 times" in str(w.message)
               for w in seen)
    f(_x(5))
    assert f.traces == 4


def test_bad_arguments_and_data_dependent_control_flow_are_clear_errors():
    with pytest.raises(hal.HalError, match="argument 0 is a ndarray; pass hal Tensors"):
        hal.jit(lambda x: x)(np.ones(3))
    with pytest.raises(hal.HalError, match="static argument 1 of type list is not hashable"):
        hal.jit(lambda x, s: x, static_argnums=1)(_x(), [1, 2])
    with pytest.raises(hal.HalError, match=r"made by op 'greater' at .*test_jit.py:\d+.*used at "
                       r".*test_jit.py:\d+.*hal.where"):
        hal.jit(lambda x: x if hal.sum(x) > 0 else -x)(_x())
    with pytest.raises(hal.HalError, match="no data while the function is traced"):
        hal.jit(lambda x: x.numpy())(_x())
    with pytest.raises(hal.HalError, match="returned a ndarray"):
        hal.jit(lambda x: np.ones(2))(_x())
    with pytest.raises(hal.HalError, match="is not callable"):
        hal.jit(3)


def test_a_leaked_tracer_is_refused_when_used_later():
    kept = []
    f = hal.jit(lambda x: kept.append(x * 2.0) or x)
    f(_x())
    with pytest.raises(hal.HalError, match="another trace"):
        hal.jit(lambda x: x + kept[0])(_x())


# -- graphs and passes ----------------------------------------------------------------------------
def test_graph_text_and_json_round_trip(cpu):
    a, b = _x(), _x(lo=0.3)
    g = hal.jit(model).graph(a, b)
    text = str(g)
    assert text.startswith("graph(%in0:float64[6], %in1:float64[6]) {")
    assert "softmax(%" in text and "return %" in text
    back = Graph.from_json(g.to_json(), cpu)
    assert back.key() == g.key() and str(back) == text
    for got, want in zip(back.run(a, b), model(a, b), strict=True):
        _close(got, want)
    with pytest.raises(hal.HalError, match="graph JSON: not JSON"):
        Graph.from_json("{", cpu)
    with pytest.raises(hal.HalError, match=r"hal\.graph/1"):
        Graph.from_json("{}", cpu)


def test_dead_code_common_subexpressions_and_constants_are_removed():
    c = hal.asarray(np.full(6, 2.0))

    def f(x):
        unused = hal.exp(x)  # noqa: F841
        folded = hal.sqrt(c) * 3.0  # constants only: computed at trace time
        return hal.sin(x) + hal.sin(x) + folded

    g = hal.jit(f).graph(_x())
    assert [n.op for n in g.nodes] == ["sin", "add", "add"]
    assert g.nodes[1].inputs == (("node", 0), ("node", 0))
    np.testing.assert_allclose(g.constants[0].numpy(), np.sqrt(2.0) * 3.0)
    _close(hal.jit(f)(_x()), f(_x()))


def test_fusion_groups_single_use_elementwise_chains_and_reduction_prologues(cpu):
    a, b = _x(), _x(lo=0.3)
    g = passes.eliminate_dead(passes.fuse(passes.lower(hal.jit(model).graph(a, b),
                                                       hal.device("null"))))
    fused = [n for n in g.nodes if n.op == FUSED]
    kinds = sorted(n.params["kind"] for n in fused)
    assert kinds.count("reduce") == 2 and kinds.count("elementwise") >= 3
    chain = max(fused, key=lambda n: len(n.params["body"].nodes))
    assert [n.op for n in chain.params["body"].nodes] == ["add", "exp", "sin", "subtract"]
    assert all(n.op in ("max", "sum", FUSED) for n in g.nodes)  # softmax lowered and fused
    for got, want in zip(g.run(a, b), model(a, b), strict=True):
        _close(got, want)


# -- executables ----------------------------------------------------------------------------------
def _numpy_fused(body, device):
    """A stand-in backend compiler: the body evaluated with numpy, written into `out`
    (compiled once per body key, as the contract asks)."""
    for run in compiled:
        if run.key == body.key():
            return run

    def run(*natives, out):
        values = []
        for node in body.nodes:
            args = [None if r is None else natives[r[1]] if r[0] == "input" else
                    body.constant_value(r[1]) if r[0] == "const" else values[r[1]]
                    for r in node.inputs]
            values.append(hal.ops.spec(node.op).evaluate(*args, **node.params))
        out[...] = values[-1]
        run.calls += 1
        return out

    run.takes_out, run.calls, run.key = True, 0, body.key()
    compiled.append(run)
    return run


compiled: list = []


def test_buffers_are_reused_by_liveness_and_outputs_stay_fresh(cpu, monkeypatch):
    monkeypatch.setattr(CpuBackend, "compile_fused", lambda self, body, device:
                        _numpy_fused(body, device))
    compiled.clear()

    def f(x):
        a = hal.exp(x * 2.0)
        b = hal.matmul(a, a)  # a kernel between groups ends a chain
        c = hal.sin(x + b)
        d = hal.sum(hal.reshape(c, (2, 3)), axis=0)  # a view keeps c's buffer alive
        return hal.cos(x * hal.max(d))

    jf = hal.jit(f)
    x = _x()
    first = jf(x)
    _close(first, f(x))
    exe = jf.compiled(x)
    assert exe.counts()["compiled"] == 3
    assert len(exe._buffers.fixed) == 1  # a dies before c is written: one buffer, reused
    second = jf(_x(lo=0.2))
    _close(first, f(x))  # the first result was not overwritten
    _close(second, f(_x(lo=0.2)))
    assert all(run.calls == 2 for run in compiled)


def test_nodes_without_kernels_fall_back_counted_placed_or_refused(null):
    hal.settings.fallback = "allow"
    x = _x(device=null)
    jf = hal.jit(lambda a: hal.exp(a) + 1.0)
    want = hal.exp(x) + 1.0
    before = hal.fallback_counts[("exp", "null:0", "float64")]
    with hal.placement() as where:
        got = jf(x)
    _close(got, want)
    assert hal.fallback_counts[("exp", "null:0", "float64")] == before + 1
    assert ("exp", "null:0", "float64", "fallback") in where.records
    hal.settings.fallback = "error"
    with pytest.raises(hal.FallbackRefused, match="exp on null:0 for float64"):
        hal.jit(lambda a: hal.exp(a) * 3.0)(x)


def test_placement_names_each_fused_group(cpu, monkeypatch):
    compiled.clear()
    monkeypatch.setattr(CpuBackend, "compile_fused", lambda self, body, device:
                        _numpy_fused(body, device))
    jf = hal.jit(lambda a: hal.sum(hal.exp(a) * a))
    jf(_x())
    with hal.placement() as where:
        jf(_x())
    assert where.records == [("fused(exp,multiply,sum)", "cpu:0", "float64", "compiled")]


def test_a_failing_step_names_its_node_and_source_line(cpu, monkeypatch):
    def broken(self, body, device):
        def run(*natives):
            raise RuntimeError("device lost")
        return run

    monkeypatch.setattr(CpuBackend, "compile_fused", broken)
    with pytest.raises(hal.KernelError, match=r"node %0 fused\(exp,sin\) -> float64\(6,\) "
                       r"\(traced at .*test_jit.py:\d+\) on cpu:0.*RuntimeError: device lost"):
        hal.jit(lambda a: hal.sin(hal.exp(a)))(_x())


# -- autodiff -------------------------------------------------------------------------------------
def f_scalar(a):
    return hal.sum(hal.sin(a) ** 2 * hal.exp(a))


def test_grad_of_jit_and_jit_of_grad_agree_with_eager():
    x = _x()
    want = ag.grad(f_scalar)(x)
    _close(ag.grad(hal.jit(f_scalar))(x), want)
    jg = hal.jit(ag.grad(f_scalar))
    _close(jg(x), want)
    assert len(jg.graph(x).nodes) > 6  # the backward pass is in the graph
    second = lambda a: hal.sum(ag.grad(f_scalar)(a) * a)  # noqa: E731
    _close(hal.jit(ag.grad(second))(x), ag.grad(second)(x), rtol=1e-10)


def test_a_graph_split_at_its_cotangent_runs_the_forward_then_the_backward(cpu):
    """vjp traced as one graph, split: the first part runs the forward's nodes only and
    returns the value and the residuals the second reads, the second the rest; a first
    output that needs the cotangent is refused."""
    from hal.compile.pipeline import compile

    def joint(a, b, ct):
        y, back = ag.vjp(lambda a: hal.sin(a) * b, a)
        return y, back(ct)[0], b * 3.0

    a, b, ct = _x(), _x(lo=0.3), _x(lo=0.5)
    graph = hal.jit(joint).graph(a, b, ct)
    first, second = passes.split(graph, [2], [0])
    assert len(first.inputs) == 2 and len(first.outputs) > 1
    assert "cos" in second.op_counts() and "cos" not in first.op_counts()  # sin's derivative
    assert second.inputs[-1] == graph.inputs[2]
    assert len(first.nodes) + len(second.nodes) == len(graph.nodes)
    y, *residuals = compile(first, cpu)(a, b)
    grad, tripled = compile(second, cpu)(*residuals, ct)
    want = joint(a, b, ct)
    for got, expected in zip((y, grad, tripled), want, strict=True):
        _close(got, expected)
    with pytest.raises(hal.HalError, match="output 1 needs input 2, a later one"):
        passes.split(graph, [2], [0, 1])


def test_jvp_and_taylor_mode_under_jit_agree_with_eager():
    x = _x()
    tangent = _x(lo=0.5)
    for got, want in zip(hal.jit(lambda a, t: ag.jvp(f_scalar, (a,), (t,)))(x, tangent),
                         ag.jvp(f_scalar, (x,), (tangent,)), strict=True):
        _close(got, want)

    def taylor(a):
        return ag.derivatives(lambda y: hal.sin(y) * hal.exp(-y * y), a, order=10)

    for got, want in zip(hal.jit(taylor)(x), taylor(x), strict=True):
        _close(got, want, rtol=1e-10)


def test_nested_jit_inlines_into_the_outer_graph():
    inner = hal.jit(lambda a: hal.exp(a) * 2.0)
    outer = hal.jit(lambda a: inner(a) + inner(a * 3.0))
    _close(outer(_x()), hal.exp(_x()) * 2.0 + hal.exp(_x() * 3.0) * 2.0)
    assert "exp" in outer.graph(_x()).op_counts()


def test_groups_a_backend_declines_or_fails_to_compile_run_as_their_nodes(cpu, null,
                                                                          monkeypatch):
    hal.settings.fallback = "allow"
    a, b = _x(device=null), _x(device=null, lo=0.3)
    exe = hal.jit(model).compiled(a, b)
    assert FUSED not in exe.graph.op_counts() and set(exe.counts()) == {"fallback"}

    def broken(self, body, device):
        raise ZeroDivisionError("bug in the code generator")

    monkeypatch.setattr(CpuBackend, "compile_fused", broken)
    with pytest.warns(hal.PluginWarning, match=r"cpu: compile_fused failed for the group "
                      r"\(exp,sin\) with ZeroDivisionError"):
        got = hal.jit(lambda x: hal.sin(hal.exp(x)))(_x())
    _close(got, hal.sin(hal.exp(_x())))


def mean_square(a):
    return hal.sqrt(hal.sum(a * a, axis=1) / 4.0 + 1e-5)


def test_a_reduction_joins_the_group_of_its_epilogue_or_is_split_off_when_declined(
        cpu, monkeypatch):
    x = hal.asarray(np.linspace(0.1, 1, 12).reshape(3, 4))
    (node,) = passes.fuse(hal.jit(mean_square).graph(x)).nodes
    assert [n.op for n in node.params["body"].nodes] == ["multiply", "sum", "divide", "add",
                                                         "sqrt"]

    def no_epilogues(self, body, device):
        ops_ = [n.op for n in body.nodes]
        if "sum" in ops_ and ops_[-1] != "sum":
            return None
        return _numpy_fused(body, device)

    compiled.clear()
    monkeypatch.setattr(CpuBackend, "compile_fused", no_epilogues)
    exe = hal.jit(mean_square).compiled(x)
    bodies = [[n.op for n in g.params["body"].nodes] for g in exe.graph.nodes]
    assert bodies == [["multiply", "sum"], ["divide", "add", "sqrt"]]
    _close(exe(x)[0], mean_square(x))
