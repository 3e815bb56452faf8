"""Shared fixtures: the backends available here, and a clean fallback policy per test."""

from __future__ import annotations

import pytest

import hal


@pytest.fixture
def cpu():
    """The CPU device."""
    return hal.device("cpu")


@pytest.fixture
def null():
    """The null device (host memory, no kernels)."""
    return hal.device("null")


@pytest.fixture(autouse=True)
def _restore_fallback_policy():
    before = hal.settings.fallback
    yield
    hal.settings.fallback = before
