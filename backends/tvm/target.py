"""The TVM targets of this machine: the host CPU (its mcpu and core count) and, where the
installed TVM runtime was built with them, CUDA and OpenCL devices.

TVM 0.27 refuses option strings ("llvm -mcpu=..."); targets are dicts, and meta_schedule
needs `num-cores`. Plain "llvm" compiles for generic x86-64 (4x slower), so the mcpu is
read from the host through LLVM.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

from hal import host as host_facts


@dataclass(frozen=True)
class TargetInfo:
    """One device a TVM build can run on: its kind, index and the target to compile for."""

    kind: str  # "llvm", "cuda" or "opencl"
    index: int  # the TVM device index within the kind
    config: tuple  # the target dict's items (hashable)

    @property
    def target(self):
        """The tvm.target.Target to compile for."""
        from tvm.target import Target

        return Target(dict(self.config))

    @property
    def key(self) -> str:
        """A file-name-safe identity of the target (kind, mcpu or arch, cores)."""
        conf = dict(self.config)
        parts = [conf["kind"], conf.get("mcpu") or conf.get("arch") or "generic"]
        if "num-cores" in conf:
            parts.append(f"{conf['num-cores']}c")
        return "-".join(str(p) for p in parts)

    def tvm_device(self):
        """The tvm runtime device (tvm.cpu(0), tvm.cuda(i), ...)."""
        import tvm

        return {"llvm": tvm.cpu, "cuda": tvm.cuda, "opencl": tvm.opencl}[self.kind](self.index)


def cores() -> int:
    """Cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def has_vnni() -> bool:
    """True if the CPU has AVX-512 VNNI (vpdpbusd: u8 x s8 dot products into int32)."""
    return "avx512_vnni" in host_facts.cpu_flags()


@functools.cache
def host() -> TargetInfo:
    """The host CPU target: LLVM with the detected mcpu and this process's core count."""
    import tvm
    from tvm.target.detect_target import detect_target_from_device

    mcpu = str(detect_target_from_device(tvm.cpu()).attrs.get("mcpu", "")) or None
    config = {"kind": "llvm", "num-cores": cores()}
    if mcpu:
        config["mcpu"] = mcpu
    return TargetInfo("llvm", 0, tuple(sorted(config.items())))


@functools.cache
def available() -> tuple[TargetInfo, ...]:
    """Every device the installed TVM can compile for and run on: the host first."""
    import tvm

    found = [host()]
    for kind, make in (("cuda", tvm.cuda), ("opencl", tvm.opencl)):
        if not tvm.runtime.enabled(kind):
            continue
        index = 0
        while make(index).exist:
            config = {"kind": kind}
            if kind == "cuda":
                config["arch"] = f"sm_{make(index).compute_version.replace('.', '')}"
            found.append(TargetInfo(kind, index, tuple(sorted(config.items()))))
            index += 1
    return tuple(found)


def missing() -> dict[str, str]:
    """Targets the installed TVM runtime was built without: kind -> why."""
    import tvm

    return {kind: f"the installed TVM runtime was built without {kind}"
            for kind in ("cuda", "opencl") if not tvm.runtime.enabled(kind)}
