"""A run measures the peers that compute on the host CPU once, under its cpu device, and
gives every other device in host memory that figure."""

import dataclasses

import pytest

import hal
from benchmarks.harness import copied_host_peer, host_peers_device
from benchmarks.ort_peer import on_host_cpu, provider
from benchmarks.schema.records import Measurement
from frontends.science import peers


@pytest.fixture
def host_peers_under_cpu():
    peers.measure_host_peers_under("cpu:0")
    yield
    peers.measure_host_peers_under(None)


def test_host_peers_are_left_to_the_cpu_device(host_peers_under_cpu):
    other = hal.device("null")  # tensors in host memory: its numpy peer is the host's
    with pytest.raises(peers.PeerMeasuredElsewhere, match="numpy computes on the host CPU, "
                                                          "measured under cpu:0"):
        peers.place("numpy", other)
    with pytest.raises(peers.PeerMeasuredElsewhere):
        provider(other)
    with pytest.raises(peers.PeerMeasuredElsewhere):
        on_host_cpu(other, "MatMulInteger")
    assert peers.place("numpy", hal.device("cpu")).name == "numpy"
    assert provider(hal.device("cpu")) == "CPUExecutionProvider"


def test_without_a_cpu_device_in_the_run_every_device_measures_them():
    assert peers.place("numpy", hal.device("null")).name == "numpy"
    assert host_peers_device([]) is None and host_peers_device(["opencl:0"]) is None
    assert host_peers_device(["numba:0", "cpu:0", "cpu:1"]) == "cpu:0"


def _record(device: str, **changes) -> Measurement:
    m = Measurement(suite="seed", workload="fft[numpy]", params={"shape": "8"},
                    backend=device.partition(":")[0], device=device, dtype="complex64",
                    samples=[1e-3, 2e-3], stats={"median": 1.5e-3}, facts={"peer": "numpy"})
    return dataclasses.replace(m, **changes)


def test_a_host_peer_left_to_the_cpu_device_gets_its_record():
    ours = _record("cpu:0")
    left = _record("opencl:0", status="skipped", samples=[], stats=None,
                   error="PeerMeasuredElsewhere: peer numpy computes on the host CPU, "
                         "measured under cpu:0 in this run")
    copied = copied_host_peer(left, {ours.key: ours})
    assert (copied.backend, copied.device, copied.status) == ("opencl", "opencl:0", "ok")
    assert copied.samples == ours.samples and copied.median == ours.median
    assert copied.facts == {"peer": "numpy", "measured_under": "cpu:0"}
    assert copied.key == left.key
    # why the cpu device has no figure travels too; without its record the skip stays
    unavailable = _record("cpu:0", status="skipped", error="PeerUnavailable: no numpy")
    assert copied_host_peer(left, {ours.key: unavailable}).error == "PeerUnavailable: no numpy"
    assert copied_host_peer(left, {}) is left
    assert copied_host_peer(ours, {}) is ours
