"""The out-of-tree example plugin loads through an entry point and passes conformance."""

from __future__ import annotations

import sys
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

import hal
from hal import conformance as kit
from hal import ops
from hal.registry import GROUP, Registry

PLUGIN = Path(__file__).parents[1] / "examples" / "plugin"


@pytest.fixture
def mychip(monkeypatch):
    monkeypatch.syspath_prepend(str(PLUGIN))
    yield Registry([EntryPoint("mychip", "mychip_hal:MyChipBackend", GROUP)]).get("mychip")
    sys.modules.pop("mychip_hal", None)


def test_registered_kernels_pass_and_the_rest_fall_back(mychip):
    device = mychip.open()
    assert device.capabilities.ops == ("add", "exp", "multiply")
    for op, dtype, status in [("add", hal.int8, kit.PASS), ("exp", hal.float32, kit.PASS),
                              ("exp", hal.float16, kit.FALLBACK),
                              ("softmax", hal.float32, kit.FALLBACK)]:
        cell = kit.check_cell(device, ops.spec(op), dtype, examples=5)
        assert cell.status == status, (op, dtype, cell.error)
