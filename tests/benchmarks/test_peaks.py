"""One bandwidth peak per memory: the host's measured once and shared by every device on
host memory, in-cache workloads without a % of it, the reason of any figure above 100."""

from pathlib import Path

import pytest
from rich.progress import Progress

import hal
from benchmarks import bandwidth
from benchmarks.harness import HOST_MEMORY, Outcome, _Recorder, load_cached_peaks
from benchmarks.peaks import (
    IN_CACHE,
    REAL_PART,
    measures_peak,
    own_peaks,
    percent_of_peak,
    with_memory_peak,
)
from benchmarks.plan import Config, plan
from benchmarks.schema.environment import new_run, with_device_libraries
from benchmarks.schema.files import ResultWriter
from benchmarks.schema.records import DeviceRecord, Measurement

HOST_CAPS = {"memory": "host"}
GPU_CAPS = {"memory": None, "extra": {"l2_cache_bytes": 50 * 2**20}}
HOST = {"memory": "host", "gbps": 20.0, "kernel": "numpy copy (memcpy), 1 thread",
        "cache_bytes": 32 * 2**20, "array_bytes": 2**28, "load": 0.5, "run": "earlier"}


def _cache_index(root: Path, cpu: int, index: int, level: int, kind: str, size: str,
                 shared: str) -> None:
    d = root / f"cpu{cpu}" / "cache" / f"index{index}"
    d.mkdir(parents=True)
    for name, text in {"level": str(level), "type": kind, "size": size,
                       "shared_cpu_list": shared}.items():
        (d / name).write_text(text + "\n")


def test_last_level_cache_sums_the_top_level_over_its_instances(tmp_path):
    for cpu, socket in ((0, "0-1"), (1, "0-1"), (2, "2-3"), (3, "2-3")):
        _cache_index(tmp_path, cpu, 0, 1, "Data", "48K", str(cpu))
        _cache_index(tmp_path, cpu, 1, 1, "Instruction", "64K", str(cpu))
        _cache_index(tmp_path, cpu, 2, 2, "Unified", "2048K", str(cpu))
        _cache_index(tmp_path, cpu, 3, 3, "Unified", "32M", socket)
    assert bandwidth.last_level_cache_bytes(tmp_path) == 2 * 32 * 2**20  # two sockets' L3


def test_arrays_hold_four_times_the_cache_within_the_available_memory():
    gib = 2**30
    assert bandwidth.array_bytes(3 * gib, None) == 4 * gib  # 3 arrays: 12 GiB = 4x 3 GiB
    assert bandwidth.array_bytes(None, None) == bandwidth.MIN_ARRAY_BYTES
    assert bandwidth.array_bytes(3 * gib, 16 * gib) == 2 * gib  # an eighth of 16 GiB


def test_host_bandwidth_is_the_best_rate_of_its_kernels(monkeypatch):
    monkeypatch.setattr(bandwidth, "MIN_ARRAY_BYTES", 2**20)
    monkeypatch.setattr(bandwidth, "last_level_cache_bytes", lambda: 3 * 2**18)
    found = bandwidth.measure_host_bandwidth(repeats=2, threads=2)
    assert found["array_bytes"] == 2**20 and found["cache_bytes"] == 3 * 2**18
    kernels = found["kernels"]
    assert {"numpy copy (memcpy), 1 thread", "numpy copy (memcpy), 2 threads",
            "numba copy, 2 threads", "numba triad, 2 threads"} == set(kernels)
    assert found["gbps"] == max(k["best"] for k in kernels.values())
    assert kernels[found["kernel"]]["best"] == found["gbps"]
    assert all(k["best"] >= k["median"] > 0 for k in kernels.values())


def test_cpu_opencl_tvm_and_onnxruntime_devices_say_they_are_on_host_memory():
    assert hal.device("cpu").capabilities.memory == "host"
    on_cpu = {"opencl": lambda d: d.is_cpu, "tvm": lambda d: d.info.kind == "llvm",
              "onnxruntime": lambda d: d.provider == "CPUExecutionProvider"}
    for name, is_cpu in on_cpu.items():  # PoCL, llvm and the CPU provider here
        backend = hal.backend(name)
        if backend.is_available() and backend.device_count():
            device = hal.device(name)
            assert device.capabilities.memory == ("host" if is_cpu(device) else None), name


def test_host_devices_share_the_host_figure_and_drop_their_own():
    own = {"gflops": {"float32": 100.0}, "gbps": 7.0}
    peaks = with_memory_peak(own, HOST_CAPS, "tvm:0", HOST)
    assert peaks["gbps"] == 20.0 and peaks["gflops"] == {"float32": 100.0}
    assert peaks["memory"]["name"] == "host" and peaks["memory"]["cache_bytes"] == 32 * 2**20
    assert with_memory_peak(own, HOST_CAPS, "tvm:0", None) == {"gflops": {"float32": 100.0}}
    assert own_peaks(peaks, HOST_CAPS) == {"gflops": {"float32": 100.0}}
    gpu = with_memory_peak(own, GPU_CAPS, "cuda:0", HOST)
    assert gpu["gbps"] == 7.0 and gpu["memory"] == {"name": "cuda:0", "cache_bytes": 50 * 2**20}
    assert own_peaks(gpu, GPU_CAPS)["gbps"] == 7.0


def test_stream_measures_a_peak_only_on_memory_of_the_devices_own():
    assert measures_peak("gflops", HOST_CAPS) and measures_peak("gflops", GPU_CAPS)
    assert not measures_peak("gbps", HOST_CAPS) and measures_peak("gbps", GPU_CAPS)
    assert not measures_peak(None, GPU_CAPS)


def test_percent_of_peak_in_cache_above_and_flops():
    peaks = with_memory_peak({"gflops": {"float32": 50.0}}, HOST_CAPS, "cpu:0", HOST)
    assert percent_of_peak({"gbps": 60.0}, 2**20, "float64", peaks) == (None, IN_CACHE)
    pct, note = percent_of_peak({"gbps": 10.0}, 2**30, "float64", peaks)
    assert pct == pytest.approx(50.0) and note == ""
    pct, note = percent_of_peak({"gbps": 30.0}, 2**30, "float64", peaks)
    assert pct == pytest.approx(150.0) and "above the host bandwidth peak (20 GB/s" in note
    pct, note = percent_of_peak({"gflops": 25.0, "gbps": 60.0}, 2**20, "float32", peaks)
    assert pct == pytest.approx(50.0) and note == ""  # a FLOP rate is held against FLOP/s
    pct, note = percent_of_peak({"gflops": 50.0 * (1 + 1e-15)}, None, "float32", peaks)
    assert note == ""  # the peak's own workload, up to rounding
    pct, note = percent_of_peak({"gflops": 75.0}, None, "float32", peaks)
    assert pct == pytest.approx(150.0) and "best GEMM rate" in note
    assert percent_of_peak({"gbps": 10.0}, 2**30, "float64", {}) == (None, "")


def _recorder(tmp_path, run, writer, host):
    outcome = Outcome(tmp_path / "r.jsonl", run.id, 0, 1)
    return _Recorder(run, writer, "fp", tmp_path / "cache", Progress(), outcome, {}, host)


def test_a_host_stream_beyond_the_cache_raises_every_host_devices_peak(tmp_path):
    run = new_run("now")
    cpu = DeviceRecord("cpu:0", "cpu")
    ocl = DeviceRecord("opencl:0", "opencl")
    run.devices = [cpu, ocl]
    with ResultWriter(tmp_path / "r.jsonl") as writer:
        recorder = _recorder(tmp_path, run, writer, dict(HOST))
        recorder.opened(cpu, {"memory": "host"})
        recorder.opened(ocl, {"memory": "host"})
        assert cpu.peaks["gbps"] == ocl.peaks["gbps"] == 20.0
        gemm = plan(Config(suites=["peak"], dtypes=["float32"]), ["cpu:0"])[0]
        recorder.measured(cpu, gemm, Measurement("peak", "gemm", "cpu", "cpu:0", "float32",
                                                 metrics={"gflops": 100.0}))
        assert cpu.peaks["gflops"] == {"float32": 100.0} and cpu.peaks["gbps"] == 20.0
        tasks = plan(Config(suites=["peak"], dtypes=["float64"]), ["opencl:0"])
        task = next(t for t in tasks if t.workload.name == "stream_triad")
        small = Measurement("peak", "stream_add", "opencl", "opencl:0", "float64",
                            bytes=2**20, metrics={"gbps": 90.0})
        recorder.measured(ocl, task, small)  # in cache: no memory's peak
        assert cpu.peaks["gbps"] == 20.0 and "gbps" not in own_peaks(ocl.peaks, HOST_CAPS)
        big = Measurement("peak", "stream_triad", "opencl", "opencl:0", "float64",
                          bytes=2**30, metrics={"gbps": 25.0})
        recorder.measured(ocl, task, big)
    assert cpu.peaks["gbps"] == ocl.peaks["gbps"] == 25.0
    assert cpu.peaks["memory"]["kernel"] == "stream_triad on opencl:0"
    cached = load_cached_peaks(tmp_path / "cache", "fp")
    assert cached[HOST_MEMORY]["gbps"] == 25.0 and cached[HOST_MEMORY]["run"] == "now"
    assert "opencl:0" not in cached  # no peak of its own was measured
    assert cached["cpu:0"] == {"gflops": {"float32": 100.0}, "run": "now"}  # not the host's


def test_a_complex_rate_is_held_against_its_real_parts_flop_peak():
    peaks = {"gflops": {"float32": 200.0, "float64": 100.0}}
    pct, note = percent_of_peak({"gflops": 50.0, "gbps": 10.0}, 2**30, "complex64", peaks)
    assert pct == pytest.approx(25.0) and note == "of the float32 peak (real FLOPs)"
    pct, note = percent_of_peak({"gflops": 150.0}, None, "complex128", peaks)
    assert pct == pytest.approx(150.0)
    assert note.startswith("of the float64 peak (real FLOPs); above the best GEMM rate")
    own = {"gflops": {"complex64": 80.0, "float32": 200.0}}
    assert percent_of_peak({"gflops": 40.0}, None, "complex64", own) == (
        pytest.approx(50.0), "")


def test_the_gpu_suite_measures_a_peak_for_every_gemm_fft_and_bandwidth_row():
    from benchmarks.workload import suite_workloads

    ws = suite_workloads("gpu")
    gemm_dtypes = {d for w in ws if w.name == "gemm" for d in w.dtypes}
    assert all(w.peak == "gflops" for w in ws if w.name == "gemm")
    assert gemm_dtypes == {"float32", "bfloat16", "float16"}
    ffts = [w for w in ws if w.name in ("fft", "fft2")]
    assert ffts and all(REAL_PART[d] in gemm_dtypes for w in ffts for d in w.dtypes)
    (add,) = [w for w in ws if w.name == "add"]
    assert add.peak == "gbps" and set(add.dtypes) == {"float32", "float16", "bfloat16"}
    assert measures_peak(add.peak, {"memory": None}) and not measures_peak(add.peak, HOST_CAPS)


def test_an_opened_device_names_the_library_the_metadata_missed(tmp_path):
    run = new_run("now")
    run.libraries = {**run.libraries, "cupy": None}
    cuda = DeviceRecord("cuda:0", "cuda")
    run.devices = [cuda]
    with ResultWriter(tmp_path / "r.jsonl") as writer:
        recorder = _recorder(tmp_path, run, writer, None)
        recorder.opened(cuda, {"memory": None, "extra": {"cupy": "13.6.0", "sm_count": 132}})
    assert run.libraries["cupy"] == "13.6.0" and "sm_count" not in run.libraries
    assert with_device_libraries({"cupy": "13.0"}, {"extra": {"cupy": "14"}}) == {"cupy": "13.0"}
