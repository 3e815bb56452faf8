"""The collective kernels of a backend with collectives of its own
(`KernelTable.register_device_collectives`): they run a group's `on_device` where its
transport names a device library and stage through host memory where it is host. The
group here is a plain recorder on the cpu device: what is tested is the routing, not a
library (the NCCL path is tested on GPUs: tests/backends/test_cuda_nccl.py)."""

from __future__ import annotations

import numpy as np
import pytest

import hal
from hal.ops.collectives import device_kernel
from hal.ops.kernels import KernelTable


class Recorder:
    """A 2-rank group that records what reaches it."""

    name, size, rank = "recorder", 2, 0

    def __init__(self, transport: str):
        self.transport, self.calls = transport, []

    def on_device(self, op, x, **params):
        self.calls.append(("on_device", op, params))
        return x * 2

    def all_gather(self, x, axis):
        self.calls.append(("host", "all_gather", {"axis": axis}))
        return np.concatenate([x, x], axis)


@pytest.fixture
def recorder():
    def register(transport):
        group = Recorder(transport)
        hal.collectives.register_group("recorder", group)
        return group

    yield register
    hal.collectives.unregister_group("recorder")


def test_a_device_library_transport_runs_on_the_device(recorder):
    group, dev = recorder("testlib"), hal.device("cpu:0")
    x = np.arange(4.0).reshape(2, 2)
    out = device_kernel("all_gather")(dev, x, group="recorder", axis=1)
    np.testing.assert_array_equal(out, x * 2)
    assert group.calls == [("on_device", "all_gather", {"axis": 1})]


def test_a_host_transport_stages(recorder):
    group, dev = recorder("host (a reason)"), hal.device("cpu:0")
    x = np.arange(4.0).reshape(2, 2)
    out = device_kernel("all_gather")(dev, x, group="recorder", axis=1)
    np.testing.assert_array_equal(out, np.concatenate([x, x], 1))
    assert group.calls == [("host", "all_gather", {"axis": 1})]


def test_the_table_routes_the_summing_and_gathering_ops_and_stages_the_rest():
    table = KernelTable("t")
    table.register_device_collectives()
    routed = {op for (op, _), (fn, _) in table._entries.items()
              if fn.__qualname__.startswith("device_kernel")}
    assert routed == {"all_reduce", "all_gather", "reduce_scatter", "gather_to_group"}
    assert table.ops() >= {"all_to_all", "copy_to_group", "split_to_group", "send", "recv"}
