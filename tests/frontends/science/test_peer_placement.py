"""Peers placed on the device under test: device kinds, skips with reasons, a GPU peer
through a fake cupy, a vendor's peer through the `hal.peers` entry point, ORT's provider."""

from __future__ import annotations

import contextlib
import sys
import types
from importlib import metadata

import numpy as np
import pytest

import hal
from benchmarks import ort_peer
from benchmarks.suites import science
from benchmarks.timing import TimingOptions, measure
from frontends.science import peers

TINY = TimingOptions(warmup=1, min_samples=2, max_samples=2, sample_time=0.0, budget=0.0)


def _fft_record(name: str, device: str = "cpu"):
    return measure(science.fft_peer("fft", (4, 64), name), "science", "complex128",
                   hal.device(device), TINY)


def test_a_device_is_its_backend_and_the_host_cpu_where_its_memory_is_the_hosts(cpu, null):
    assert peers.device_kinds(cpu) == ("cpu",)
    assert peers.device_kinds(null) == ("null", "cpu")


def test_a_peer_of_another_kind_is_skipped_naming_both_kinds():
    record = _fft_record("cupy")
    assert record.status == "skipped"
    assert record.error == "PeerNotHere: peer cupy runs on cuda devices; cpu:0 is cpu"
    record = _fft_record("pyvkfft")
    assert record.error == "PeerNotHere: peer pyvkfft runs on opencl devices; cpu:0 is cpu"


def _fake_cupy() -> types.ModuleType:
    """cupy over numpy: its fft is numpy's, its arrays host arrays, one device 'FakeGPU'."""
    cupy = types.ModuleType("cupy")
    cupy.__version__ = "99.1"
    cupy.fft = np.fft
    cupy.asarray, cupy.asnumpy, cupy.from_dlpack = np.asarray, np.asarray, np.from_dlpack
    synced = []
    stream = types.SimpleNamespace(synchronize=lambda: synced.append(True))
    runtime = types.SimpleNamespace(runtimeGetVersion=lambda: 12040,
                                    getDeviceProperties=lambda i: {"name": b"FakeGPU"})
    cupy.cuda = types.SimpleNamespace(Device=lambda i: contextlib.nullcontext(),
                                      get_current_stream=lambda: stream, runtime=runtime)
    cupy.synced = synced
    return cupy


def test_a_cuda_peer_is_placed_on_a_cuda_device_and_names_its_build_and_device(monkeypatch):
    cupy = _fake_cupy()
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setitem(sys.modules, "cupy.fft", np.fft)
    monkeypatch.setattr(peers, "device_kinds", lambda device: ("cuda",))
    peers._loaded.cache_clear()
    try:
        record = _fft_record("cupy")
    finally:
        peers._loaded.cache_clear()
    assert record.status == "ok", record.error
    assert record.facts == {"peer": "cupy 99.1 (CUDA 12.4, cuFFT, cuBLAS)",
                            "peer_device": "cpu:0 (FakeGPU)"}
    assert cupy.synced  # each call ends when the GPU's work is done
    assert _fft_record("numpy").error == "PeerNotHere: peer numpy runs on cpu devices; " \
                                         "cpu:0 is cuda"


def test_a_missing_peer_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy raises ImportError
    monkeypatch.setattr(peers, "device_kinds", lambda device: ("cuda",))
    peers._loaded.cache_clear()
    try:
        record = _fft_record("cupy")
    finally:
        peers._loaded.cache_clear()
    assert record.status == "skipped"
    assert record.error.startswith("PeerUnavailable: peer cupy is not importable")
    assert "pip install cupy-cuda12x" in record.error


def _vendor_fft(device: hal.Device) -> peers.Peer:
    """A vendor's native FFT (numpy's here) on its own backend's devices."""
    return peers.Peer("mychip-fft", "1.0 (native)", np.fft, np.asarray, np.asarray,
                      device=f"{device.name} (MyChip)")


def test_a_vendor_registers_its_native_stack_through_the_entry_point(monkeypatch):
    spec = peers.PeerSpec("mychip-fft", "numpy", {"null": _vendor_fft},
                          "pip install mychip-sdk")
    entry = metadata.EntryPoint("mychip-fft", "mychip_hal.peer:PEER", peers.ENTRY_POINT_GROUP)
    monkeypatch.setattr(entry.__class__, "load", lambda self: spec)
    real = metadata.entry_points
    monkeypatch.setattr(metadata, "entry_points", lambda **kw: (
        [entry] if kw.get("group") == peers.ENTRY_POINT_GROUP else real(**kw)))
    peers.registered.cache_clear()
    try:
        assert peers.vendor_names() == ("mychip-fft",)
        assert "mychip-fft" in peers.fft_names()
        names = {w.name for w in science.workloads()}
        assert {"fft[mychip-fft]", "fft2[mychip-fft]"} <= names
        record = _fft_record("mychip-fft", "null")
        assert record.status == "ok", record.error
        assert record.facts["peer_device"] == "null:0 (MyChip)"
        assert record.params["peer"] == f"mychip-fft {np.__version__}"
        assert _fft_record("mychip-fft").error == \
            "PeerNotHere: peer mychip-fft runs on null devices; cpu:0 is cpu"
    finally:
        peers.registered.cache_clear()
        peers._loaded.cache_clear()


def test_ort_runs_its_cpu_provider_on_the_host_and_its_cuda_one_where_installed(
        cpu, monkeypatch):
    assert ort_peer.provider(cpu) == ort_peer.CPU
    assert ort_peer.facts(cpu) == {
        "peer": f"onnxruntime {metadata.version('onnxruntime')} (CPUExecutionProvider)",
        "peer_device": "host CPU"}
    monkeypatch.setattr(peers, "device_kinds", lambda device: ("cuda",))
    monkeypatch.setattr(ort_peer, "available_providers", lambda: [ort_peer.CPU])
    with pytest.raises(peers.PeerUnavailable, match="pip install onnxruntime-gpu"):
        ort_peer.provider(cpu)
    monkeypatch.setattr(ort_peer, "available_providers", lambda: [ort_peer.CUDA, ort_peer.CPU])
    assert ort_peer.provider(cpu) == ort_peer.CUDA
    assert ort_peer.facts(cpu)["peer_device"] == "cpu:0"
    monkeypatch.setattr(peers, "device_kinds", lambda device: ("opencl",))
    with pytest.raises(peers.PeerNotHere, match="onnxruntime runs on cpu and cuda devices"):
        ort_peer.provider(cpu)


def test_the_gpu_suites_gemm_runs_in_a_device_peer_and_not_on_the_host(monkeypatch):
    from benchmarks.suites import gpu

    def gemm(name):
        return measure(gpu.gemm_peer("float32", name, size=64), "gpu", "float32",
                       hal.device("cpu"), TINY)

    record = gemm("cupy")
    assert record.error == "PeerNotHere: peer cupy runs on cuda devices; cpu:0 is cpu"
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy())
    monkeypatch.setitem(sys.modules, "cupy.fft", np.fft)
    monkeypatch.setattr(peers, "device_kinds", lambda device: ("cuda",))
    peers._loaded.cache_clear()
    try:
        record = gemm("cupy")
    finally:
        peers._loaded.cache_clear()
    assert record.status == "ok", record.error
    assert record.workload == "gemm[cupy]" and record.params["M"] == 64
    assert record.facts["peer_device"] == "cpu:0 (FakeGPU)"
    assert record.metrics["gflops"] > 0
    monkeypatch.setattr(peers, "device_kinds", lambda device: ("cpu",))
    monkeypatch.setitem(sys.modules, "torch", None)
    assert gemm("torch").error.startswith("PeerUnavailable: peer torch is not importable")
    torch = types.ModuleType("torch")  # a CPU torch over numpy
    torch.__version__, torch.fft, torch.from_numpy = "9.9", np.fft, np.asarray
    torch.set_num_threads = lambda n: None
    monkeypatch.setitem(sys.modules, "torch", torch)
    peers._loaded.cache_clear()
    try:
        assert "torch would run on the host CPU here" in gemm("torch").error
    finally:
        peers._loaded.cache_clear()
    names = {(w.name, w.dtypes[0]) for w in gpu.peer_workloads()}
    assert {("gemm[cupy]", "float16"), ("gemm[pyclblast]", "float32"),
            ("fft[cupy]", "complex64"), ("fft2[pyvkfft]", "complex64")} <= names


def _fake_opencl_libraries(monkeypatch) -> None:
    """pyvkfft and pyclblast over numpy: each computes on the host from the pyopencl arrays
    it is given and writes its result into the output array, as the real ones do."""
    class VkFFTApp:
        def __init__(self, shape, dtype, queue, ndim, inplace, norm):
            self.axes = tuple(range(-ndim, 0))

        def fft(self, src, dst):
            dst.set(np.fft.fftn(src.get(), axes=self.axes).astype(src.dtype))

        def ifft(self, src, dst):
            dst.set(np.fft.ifftn(src.get(), axes=self.axes).astype(src.dtype))

    def gemm(queue, m, n, k, a, b, c, a_ld, b_ld, c_ld):
        assert (a_ld, b_ld, c_ld) == (k, n, n)  # row-major, contiguous
        c.set(a.get() @ b.get())

    vkfft = types.ModuleType("pyvkfft")
    vkfft.__version__ = "0.fake"
    opencl = types.ModuleType("pyvkfft.opencl")
    opencl.VkFFTApp = VkFFTApp
    clblast = types.ModuleType("pyclblast")
    clblast.gemm = gemm
    for name, module in (("pyvkfft", vkfft), ("pyvkfft.opencl", opencl), ("pyclblast", clblast)):
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setattr(peers, "_installed", lambda distribution: "0.fake")


def test_vkfft_and_clblast_run_on_the_opencl_device_on_its_own_arrays(monkeypatch):
    from benchmarks.suites import gpu

    if "opencl" not in hal.available_backends():
        pytest.skip("no OpenCL device here")
    _fake_opencl_libraries(monkeypatch)
    peers._loaded.cache_clear()
    try:
        fft = measure(science.fft_peer("fft2", (16, 32), "pyvkfft"), "science", "complex64",
                      hal.device("opencl"), TINY)
        gemm = measure(gpu.gemm_peer("float32", "pyclblast", size=32), "gpu", "float32",
                       hal.device("opencl"), TINY)
    finally:
        peers._loaded.cache_clear()
    assert fft.status == "ok", fft.error
    assert fft.facts["peer"] == "pyvkfft 0.fake (VkFFT, OpenCL)"
    assert fft.facts["peer_device"].startswith("opencl:0 (")
    assert gemm.status == "ok", gemm.error
    assert gemm.facts["peer"] == "pyclblast 0.fake (CLBlast, OpenCL)"
