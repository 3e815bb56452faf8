"""Backends found through the `hal.backends` entry point group, loaded lazily.

A backend is loaded when it is asked for: by name, by `available()` (which loads them
all), or as a candidate for the default device (HAL_DEVICE, else HAL_BACKENDS in order,
else the embedded `cpu`), so `import hal` and a first op load the cpu backend alone.

In-tree backends register exactly like external ones (see pyproject.toml). A plugin's
code cannot take hal down: an external plugin is first probed in a child process
(plugin_probe.py), so one that crashes the interpreter is refused with the signal; then
loading it, and its `why_unavailable` and `device_count`, run on a watched thread, so an
exception of any type (SystemExit included) or no answer within `settings.probe_timeout`
is a PluginWarning naming the plugin and why, and the backend counts as unavailable for
that reason. Only KeyboardInterrupt goes through.
"""

from __future__ import annotations

import importlib
import threading
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import plugin_probe
from .backend import API_VERSION, Backend
from .device import Device
from .errors import BackendUnavailable, HalError, PluginWarning
from .settings import settings

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

GROUP = "hal.backends"


class PluginFault(Exception):
    """A plugin's code raised (anything but KeyboardInterrupt) or did not answer in time."""


def watched(fn: Callable[[], Any], what: str) -> Any:
    """fn() on a daemon thread, waited for at most settings.probe_timeout seconds; a
    PluginFault saying what `what` raised or that it hung. KeyboardInterrupt propagates."""
    box: dict[str, Any] = {}

    def run():
        try:
            box["value"] = fn()
        except BaseException as e:  # SystemExit and all: reported to the caller below
            box["error"] = e

    thread = threading.Thread(target=run, name=f"hal: {what}", daemon=True)
    thread.start()
    thread.join(settings.probe_timeout)
    if thread.is_alive():
        raise PluginFault(f"{what} did not answer within {settings.probe_timeout:g} s "
                          "(HAL_PROBE_TIMEOUT)")
    error = box.get("error")
    if isinstance(error, KeyboardInterrupt):
        raise error
    if error is not None:
        raise PluginFault(f"{what} raised {type(error).__name__}: {error}") from error
    return box["value"]


def _guard(backend: Backend, name: str, broken: dict[str, str]) -> None:
    """Make the backend's availability hooks safe to call: each call runs watched, and a
    fault is remembered (in `broken` too), warned about once, and from then on is the
    backend's reason."""
    why_unavailable, device_count = backend.why_unavailable, backend.device_count
    faults: list[str] = []

    def fault(e: PluginFault) -> str:
        if not faults:
            faults.append(f"the plugin failed: {e}")
            broken[name] = faults[0]
            warnings.warn(f"hal backend plugin {name!r}: {e}; it counts as unavailable",
                          PluginWarning, stacklevel=4)
        return faults[0]

    def probe() -> str | None:
        reason = why_unavailable()
        if reason is None:
            device_count()
            backend._load_kernels()  # the library imports: ops are known once available
        return reason

    def guarded_why_unavailable() -> str | None:
        if faults:
            return faults[0]
        try:
            return watched(probe, f"{type(backend).__name__} (why_unavailable, device_count, "
                                  "_load_kernels)")
        except PluginFault as e:
            return fault(e)

    def guarded_device_count() -> int:
        if faults:
            return 0
        try:
            return int(watched(device_count, f"{type(backend).__name__}.device_count"))
        except PluginFault as e:
            fault(e)
            return 0

    backend.why_unavailable = guarded_why_unavailable
    backend.device_count = guarded_device_count


class Registry:
    """Named backend factories; each backend is built on first use and then kept."""

    def __init__(self, points: list[EntryPoint] | None = None):
        self._given = points
        self._scanned: dict[str, EntryPoint] | None = None
        self._backends: dict[str, Backend] = {}
        self._broken: dict[str, str] = {}

    @property
    def _points(self) -> dict[str, EntryPoint]:
        """The entry points by name, read once when first needed (importlib.metadata's scan
        of every installed distribution: ~3 MB and tens of ms that a first op on the
        embedded cpu does without)."""
        if self._scanned is None:
            if self._given is None:
                from importlib.metadata import entry_points

                self._given = list(entry_points(group=GROUP))
            self._scanned = {p.name: p for p in self._given}
        return self._scanned

    def names(self) -> list[str]:
        """Registered backend names: HAL_BACKENDS first, then cpu, then the rest by name."""
        known = sorted(self._points, key=lambda n: (n != "cpu", n))
        preferred = [n for n in settings.backends if n in self._points]
        return preferred + [n for n in known if n not in preferred]

    def broken(self) -> dict[str, str]:
        """Plugins that failed to load or to answer a probe: name -> why."""
        return dict(self._broken)

    def get(self, name: str) -> Backend:
        """The backend called `name`; BackendUnavailable if it is unknown or failed to load."""
        if name in self._backends:
            return self._backends[name]
        if name == EMBEDDED and self._scanned is None and self._given is None:
            return self._load(name, _Embedded())
        if name not in self._points:
            raise BackendUnavailable(
                f"unknown backend {name!r}; registered: {', '.join(self.names()) or 'none'} "
                f"(plugins register under the entry point group {GROUP!r})"
            )
        if name in self._broken:
            raise BackendUnavailable(f"backend {name!r} failed to load: {self._broken[name]}")
        backend = self._load(name)
        if backend is None:
            raise BackendUnavailable(f"backend {name!r} failed to load: {self._broken[name]}")
        return backend

    def _load(self, name: str, point=None) -> Backend | None:
        point = point or self._points[name]
        try:
            crashed = plugin_probe.crash(point)
            if crashed is not None:
                raise PluginFault(crashed)
            backend = watched(lambda: point.load()(), f"loading {point.value}")
            if not isinstance(backend, Backend):
                raise TypeError(f"{point.value} returned {type(backend).__name__}, not a Backend")
            if backend.api_version != API_VERSION:
                raise TypeError(
                    f"it implements protocol version {backend.api_version}, this hal speaks "
                    f"{API_VERSION}; update the plugin"
                )
        except (PluginFault, TypeError) as e:  # a broken plugin must never take hal down
            self._broken[name] = str(e)
            warnings.warn(f"hal backend plugin {name!r} ({point.value}) was not loaded: "
                          f"{self._broken[name]}", PluginWarning, stacklevel=3)
            return None
        _guard(backend, name, self._broken)
        self._backends[name] = backend
        return backend

    def available(self) -> list[str]:
        """Names of the backends that load and can open a device here (every registered
        backend is loaded and probed to answer)."""
        out = []
        for name in self.names():
            try:
                if self.get(name).is_available():
                    out.append(name)
            except BackendUnavailable:
                continue
        return out


class _Embedded:
    """The embedded cpu backend's entry point as pyproject.toml registers it, loaded without
    reading the installed distributions (a test holds the two equal)."""

    name, value, dist = "cpu", "backends.cpu:CpuBackend", None

    def load(self):
        """The backend class."""
        module, _, attribute = self.value.partition(":")
        return getattr(importlib.import_module(module), attribute)


registry = Registry()


def backend(name: str) -> Backend:
    """The registered backend called `name`."""
    return registry.get(name)


def backends() -> list[str]:
    """Names of every registered backend, available or not."""
    return registry.names()


def available_backends() -> list[str]:
    """Names of the backends that can open a device here, in preference order."""
    return registry.available()


def resolve_device(spec=None) -> Device:
    """A Device from a Device, 'backend' or 'backend:index'; None means the default device."""
    if isinstance(spec, Device):
        return spec
    settings.check()
    if spec is None:
        return default_device()
    if not isinstance(spec, str):
        raise BackendUnavailable(f"device {spec!r}: give a Device or a name like 'cpu:0'")
    name, _, index = spec.partition(":")
    if index and not index.isdigit():
        raise BackendUnavailable(f"device {spec!r}: the index after ':' must be a number")
    return registry.get(name).open(int(index) if index else 0)


_default: list[Device] = []
EMBEDDED = "cpu"  # the default device's backend when nothing is named: it needs no probing


def default_device() -> Device:
    """The device new tensors go to: HAL_DEVICE if set; else device 0 of the first backend
    named in HAL_BACKENDS that is available and opens; else the embedded `cpu`. Only the
    backends tried are loaded: an accelerator is the default only when it is named."""
    if not _default:
        if settings.device:
            _default.append(resolve_device(settings.device))
        else:
            _default.append(_first_device())
    return _default[0]


def _first_device() -> Device:
    """Device 0 of the first of HAL_BACKENDS, then cpu, that is available and opens (one that
    fails to open is a PluginWarning and the next one is tried)."""
    named = [n for n in registry.names() if n in settings.backends] if settings.backends else []
    tried = named if EMBEDDED in named else [*named, EMBEDDED]
    for name in tried:
        try:
            backend = registry.get(name)
        except BackendUnavailable:  # a broken plugin: warned about when it failed to load
            continue
        if not backend.is_available():
            continue
        try:
            return backend.open(0)
        except HalError as e:
            warnings.warn(f"hal: {name}:0 was skipped as the default device: {e}",
                          PluginWarning, stacklevel=3)
    raise BackendUnavailable(
        f"no default device: none of {', '.join(tried) or EMBEDDED} is available and opens; "
        "name one with HAL_DEVICE (`hal devices` lists them and says why others are not)")


def devices() -> list[str]:
    """Names of every device of every available backend."""
    return [d for name in registry.available() for d in registry.get(name).devices()]
