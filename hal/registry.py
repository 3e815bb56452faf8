"""Backends found through the `hal.backends` entry point group, loaded lazily.

In-tree backends register exactly like external ones (see pyproject.toml). A plugin
that fails to load is a PluginWarning naming it and why, and hal goes on without it.
"""

from __future__ import annotations

import warnings
from importlib.metadata import EntryPoint, entry_points

from .device import API_VERSION, Backend, Device
from .errors import BackendUnavailable, PluginWarning
from .settings import settings

GROUP = "hal.backends"


class Registry:
    """Named backend factories; each backend is built on first use and then kept."""

    def __init__(self, points: list[EntryPoint] | None = None):
        self._points = {p.name: p for p in (points if points is not None else
                                            entry_points(group=GROUP))}
        self._backends: dict[str, Backend] = {}
        self._broken: dict[str, str] = {}

    def names(self) -> list[str]:
        """Registered backend names: HAL_BACKENDS first, then cpu, then the rest by name."""
        known = sorted(self._points, key=lambda n: (n != "cpu", n))
        preferred = [n for n in settings.backends if n in self._points]
        return preferred + [n for n in known if n not in preferred]

    def broken(self) -> dict[str, str]:
        """Plugins that failed to load: name -> why."""
        return dict(self._broken)

    def get(self, name: str) -> Backend:
        """The backend called `name`; BackendUnavailable if it is unknown or failed to load."""
        if name in self._backends:
            return self._backends[name]
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

    def _load(self, name: str) -> Backend | None:
        point = self._points[name]
        try:
            backend = point.load()()
            if not isinstance(backend, Backend):
                raise TypeError(f"{point.value} returned {type(backend).__name__}, not a Backend")
            if backend.api_version != API_VERSION:
                raise TypeError(
                    f"it implements protocol version {backend.api_version}, this hal speaks "
                    f"{API_VERSION}; update the plugin"
                )
        except Exception as e:  # a broken plugin must never take hal down
            self._broken[name] = f"{type(e).__name__}: {e}"
            warnings.warn(f"hal backend plugin {name!r} ({point.value}) was not loaded: "
                          f"{self._broken[name]}", PluginWarning, stacklevel=3)
            return None
        self._backends[name] = backend
        return backend

    def available(self) -> list[str]:
        """Names of the backends that load and can open a device here."""
        out = []
        for name in self.names():
            try:
                if self.get(name).is_available():
                    out.append(name)
            except BackendUnavailable:
                continue
        return out


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
    if spec is None:
        return default_device()
    if not isinstance(spec, str):
        raise BackendUnavailable(f"device {spec!r}: give a Device or a name like 'cpu:0'")
    name, _, index = spec.partition(":")
    if index and not index.isdigit():
        raise BackendUnavailable(f"device {spec!r}: the index after ':' must be a number")
    return registry.get(name).open(int(index) if index else 0)


_default: list[Device] = []


def default_device() -> Device:
    """HAL_DEVICE if set, else the first device of the first available backend."""
    if not _default:
        if settings.device:
            _default.append(resolve_device(settings.device))
        else:
            names = registry.available()
            if not names:
                raise BackendUnavailable("no backend can open a device; `hal devices` says why")
            _default.append(registry.get(names[0]).open(0))
    return _default[0]


def devices() -> list[str]:
    """Names of every device of every available backend."""
    return [d for name in registry.available() for d in registry.get(name).devices()]
