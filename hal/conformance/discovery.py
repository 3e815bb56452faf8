"""The discover and open layers: the backend's plugin loads and says whether it is
available, then one of its devices opens and describes its capabilities."""

from __future__ import annotations

from ..runtime import registry as plugins
from ..runtime.device import Device
from ..runtime.errors import HalError
from .records import Layer


def open_device(name: str, index: int) -> tuple[list[Layer], Device | None]:
    """(the discover and open layers, the opened device or None) for device `index` of
    backend `name`; a plugin or device that fails is a failed layer, not an exception."""
    layers = []
    stage = "discover"
    try:
        backend = plugins.registry.get(name)  # read at call time: the registry may be replaced
        reason = backend.why_unavailable()
        layers.append(Layer(stage, reason is None,
                            reason or f"{backend.device_count()} device(s)"))
        if reason is not None:
            return layers, None
        stage = "open"
        device = backend.open(index)
        caps = device.capabilities
        ok = bool(caps.name) and bool(caps.dtypes)
        layers.append(Layer(stage, ok, f"{caps.name}; dtypes {', '.join(caps.dtypes)}"))
    except Exception as e:  # a plugin or device that fails is a finding, not a crash of the kit
        layers.append(Layer(stage, False, str(e) if isinstance(e, HalError) else
                            f"{type(e).__name__}: {e}"))
        return layers, None
    return layers, device
