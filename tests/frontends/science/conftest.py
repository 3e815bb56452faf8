"""Devices the science tests run on: cpu always, opencl where it is available."""

from __future__ import annotations

import pytest

import hal

DEVICES = ["cpu"] + (["opencl"] if "opencl" in hal.available_backends() else [])


@pytest.fixture(params=DEVICES)
def device(request):
    """Every available backend with kernels (cpu, and opencl where PoCL is installed)."""
    return hal.device(request.param)
