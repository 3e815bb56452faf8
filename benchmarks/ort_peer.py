"""ONNX Runtime as a peer on the device under test: the execution provider for its kind.

On the host CPU (the cpu backend and devices on host memory) ORT runs its CPU provider;
on an NVIDIA GPU its CUDA provider, where `onnxruntime-gpu` is installed; elsewhere it is
skipped with the reason (`frontends.science.peers` places the array libraries alike).
"""

from __future__ import annotations

from importlib import metadata

import hal
from frontends.science import peers

CPU, CUDA = "CPUExecutionProvider", "CUDAExecutionProvider"


def available_providers() -> list[str]:
    """The execution providers of the installed onnxruntime (PeerUnavailable without it)."""
    try:
        import onnxruntime
    except ImportError as exc:
        raise peers.PeerUnavailable(f"peer onnxruntime is not importable ({exc}); "
                                    "pip install onnxruntime (GPUs: onnxruntime-gpu)") from None
    return list(onnxruntime.get_available_providers())


def provider(device: hal.Device) -> str:
    """ORT's execution provider on `device`: CPU on the host CPU, CUDA on an NVIDIA GPU;
    PeerUnavailable where that provider is not installed, PeerNotHere on other kinds."""
    kinds = peers.device_kinds(device)
    if "cpu" in kinds:
        peers.on_host(device, "peer onnxruntime")
        return CPU
    if "cuda" in kinds:
        found = available_providers()
        if CUDA not in found:
            raise peers.PeerUnavailable(
                f"peer onnxruntime {_version()} has no {CUDA} here (providers: "
                f"{', '.join(found)}); pip install onnxruntime-gpu to measure it on "
                f"{device.name}")
        return CUDA
    raise peers.PeerNotHere(f"peer onnxruntime runs on cpu and cuda devices; {device.name} is "
                            f"{' and '.join(kinds)}")


def on_host_cpu(device: hal.Device, what: str) -> None:
    """Refuse (PeerNotHere) a peer written for the host CPU on a device not on it, and
    (PeerMeasuredElsewhere) where the run measures the host CPU's peers under another."""
    kinds = peers.device_kinds(device)
    if "cpu" not in kinds:
        raise peers.PeerNotHere(f"{what} runs on the host CPU; {device.name} is "
                                f"{' and '.join(kinds)}")
    peers.on_host(device, what)


def facts(device: hal.Device) -> dict[str, str]:
    """A peer workload's facts: ORT's version and provider, and where it computed."""
    chosen = provider(device)
    where = "host CPU" if chosen == CPU else device.name
    return {"peer": f"onnxruntime {_version()} ({chosen})", "peer_device": where}


def _version() -> str:
    try:
        return metadata.version("onnxruntime-gpu")
    except metadata.PackageNotFoundError:
        try:
            return metadata.version("onnxruntime")
        except metadata.PackageNotFoundError:
            return "(not installed)"
