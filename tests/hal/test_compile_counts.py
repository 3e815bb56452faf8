"""The counts contract of `Backend.compile`: a backend's own executable of a jitted graph
shows its nodes in `hal.placement()` and in benchmark results' `ops`, by the ways its
`counts()` names, unless it records them itself."""

from __future__ import annotations

from collections import Counter

import numpy as np

import hal
from backends.cpu import CpuBackend
from benchmarks.timing import TimingOptions, measure
from benchmarks.workload import Case, Workload
from hal import ops


class HostSession:
    """A whole-graph executable that runs outside dispatch: each node's numpy reference."""

    def __init__(self, graph, device, *, records: bool = False):
        self.graph, self.device, self.records = graph, device, records

    def __call__(self, *inputs):
        values = {"input": [t.native for t in inputs], "node": [],
                  "const": [self.graph.constant_value(i)
                            for i in range(len(self.graph.constants))]}
        for node in self.graph.nodes:
            args = [None if r is None else values[r[0]][r[1]] for r in node.inputs]
            values["node"].append(ops.spec(node.op).evaluate(*args, **node.params))
            if self.records and hal.dispatch.recording():
                hal.dispatch.record(node.op, self.device.name, node.dtype.name, "session")
        return [hal.Tensor.wrap(np.asarray(values[kind][i]), self.device)
                for kind, i in self.graph.outputs]

    def counts(self):
        return Counter({"session:" + node.op: 1 for node in self.graph.nodes})


class WholeGraphBackend(CpuBackend):
    """The cpu backend's kernels, with jitted graphs run as one host session each."""

    name = "wholegraph"
    records = False

    def compile(self, graph, device):
        return HostSession(graph, device, records=self.records)


def _step(x):
    return hal.exp(x) * 2 + x


def test_a_backend_executables_nodes_show_in_placement_by_its_counts():
    device = WholeGraphBackend().open()
    x = hal.asarray(np.linspace(-1, 1, 5, dtype=np.float32), device=device)
    jitted = hal.jit(_step)
    with hal.placement() as where:
        out = jitted(x)
    np.testing.assert_allclose(out.numpy(), np.exp(x.numpy()) * 2 + x.numpy(), rtol=1e-6)
    assert where.to_dict()["ops"] == {op: {"wholegraph:0:session": 1}
                                      for op in ("exp", "multiply", "add")}
    assert jitted.compiled(x).counts() == {"session:exp": 1, "session:multiply": 1,
                                           "session:add": 1}


def test_an_executable_that_records_itself_is_not_counted_twice():
    class SelfRecording(WholeGraphBackend):
        name = "selfrecording"
        records = True

    device = SelfRecording().open()
    x = hal.asarray(np.ones(3, np.float32), device=device)
    with hal.placement() as where:
        hal.jit(_step)(x)
    assert where.to_dict()["ops"] == {op: {"selfrecording:0:session": 1}
                                      for op in ("exp", "multiply", "add")}


def test_a_jitted_benchmark_on_such_a_backend_records_its_ops():
    device = WholeGraphBackend().open()
    workload = Workload(
        name="exp_chain", params={}, dtypes=["float32"],
        build=lambda d: Case(inputs=[np.linspace(-1, 1, 8).astype(d)], flops=0, bytes=0),
        run=hal.jit(_step), reference=lambda x: np.exp(x) * 2 + x)
    fast = TimingOptions(warmup=0, min_samples=2, max_samples=2, sample_time=0.001, budget=0.0)
    m = measure(workload, "smoke", "float32", device, fast)
    assert m.status == "ok" and m.check.passed
    assert m.placement.ops == {op: {"wholegraph:0:session": 1}
                               for op in ("exp", "multiply", "add")}
