"""Backend plugins: entry points, lazy loading, broken plugins, API versions, order."""

from __future__ import annotations

import sys
import types
from importlib.metadata import EntryPoint

import pytest

import hal
from hal.registry import GROUP, Registry


@pytest.fixture
def plugin_module(monkeypatch):
    """A module of test plugins: good, raising on import-time factory call, wrong version."""
    module = types.ModuleType("hal_test_plugins")

    class Good(hal.Backend):
        name = "good"

        def _open_device(self, index):
            return hal.Device(self, index)

    class Old(Good):
        name = "old"
        api_version = 0

    def broken():
        raise RuntimeError("vendor driver crashed")

    module.Good, module.Old, module.broken = Good, Old, broken
    module.not_a_backend = lambda: object()
    monkeypatch.setitem(sys.modules, "hal_test_plugins", module)
    return module


def _points(**targets):
    return [EntryPoint(name, value, GROUP) for name, value in targets.items()]


def test_good_plugin_loads_lazily(plugin_module):
    registry = Registry(_points(good="hal_test_plugins:Good"))
    assert registry.names() == ["good"]
    assert registry.available() == ["good"]
    assert registry.get("good").open().name == "good:0"


@pytest.mark.parametrize(
    ("target", "words"),
    [
        ("hal_test_plugins:broken", "vendor driver crashed"),
        ("hal_test_plugins:Old", "protocol version 0"),
        ("hal_test_plugins:not_a_backend", "not a Backend"),
        ("hal_test_plugins_missing:Thing", "ModuleNotFoundError"),
    ],
)
def test_broken_plugin_is_a_warning_never_a_crash(plugin_module, target, words):
    registry = Registry(_points(bad=target, good="hal_test_plugins:Good"))
    with pytest.warns(hal.PluginWarning, match="'bad'"):
        assert registry.available() == ["good"]
    assert words in registry.broken()["bad"]
    with pytest.raises(hal.BackendUnavailable, match=words.split()[0]):
        registry.get("bad")


def test_unknown_backend_lists_registered_ones():
    with pytest.raises(hal.BackendUnavailable, match="registered: cpu"):
        hal.backend("tpu")
    with pytest.raises(hal.BackendUnavailable, match="index"):
        hal.device("cpu:x")


def test_hal_backends_sets_the_order(plugin_module, monkeypatch):
    registry = Registry(_points(good="hal_test_plugins:Good", cpu="backends.cpu:CpuBackend"))
    assert registry.names() == ["cpu", "good"]
    monkeypatch.setattr(hal.settings, "backends", ("good",))
    assert registry.names() == ["good", "cpu"]


def test_in_tree_backends_register_through_entry_points():
    assert {"cpu", "null"} <= set(hal.backends())
    assert hal.default_device().name == "cpu:0"
    assert "cpu:0" in hal.devices()


def test_settings_read_the_environment():
    s = hal.settings.from_env({"HAL_BACKENDS": "opencl, cpu", "HAL_FALLBACK": "ERROR",
                               "HAL_CACHE_DIR": "/tmp/x", "HAL_DEVICE": "cpu:0"})
    assert s.backends == ("opencl", "cpu") and s.fallback == "error"
    assert str(s.cache_dir) == "/tmp/x" and s.device == "cpu:0"
    with pytest.raises(hal.HalError, match="HAL_FALLBACK"):
        hal.settings.from_env({"HAL_FALLBACK": "maybe"})
