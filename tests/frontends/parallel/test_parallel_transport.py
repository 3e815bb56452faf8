"""The transport of a group's collectives (transport.py): the choice from plain places, the
cost figures behind it, and what a Mesh on CPU ranks records. The NCCL path itself is
tested in test_parallel_nccl.py (2 GPUs) and tests/backends/test_cuda_nccl.py (1 GPU)."""

from __future__ import annotations

import pytest

import hal
from frontends.parallel import cost, transport
from frontends.parallel.cost import CostModel
from frontends.parallel.transport import Place, choose

NO_NCCL = "host (cupy finds no NCCL library; pip install nvidia-nccl-cu12)"


def gpus(*devices: str, host: str = "node0", library: str = "nccl") -> list[Place]:
    return [Place(host, d, library) for d in devices]


def test_ranks_on_distinct_gpus_of_one_node_take_the_library():
    assert choose(gpus("cuda:0", "cuda:1")) == "nccl"
    assert choose(gpus("cuda:3", "cuda:0", "cuda:2", "cuda:1")) == "nccl"


def test_one_rank_stages():
    assert choose(gpus("cuda:0")) == "host (one rank: nothing to exchange)"


def test_ranks_sharing_a_gpu_stage_saying_which():
    assert choose(gpus("cuda:0", "cuda:1", "cuda:0")) == (
        "host (ranks 0 and 2 share cuda:0, and nccl refuses two ranks on one device)")


def test_a_rank_without_the_library_or_a_device_stages_with_its_reason():
    places = [Place("n", "cuda:0", "nccl"), Place("n", "cuda:1", NO_NCCL)]
    assert choose(places) == ("host (rank 1 on cuda:1: cupy finds no NCCL library; pip "
                              "install nvidia-nccl-cu12)")
    cpu = Place("n", "cpu:0", "host (the cpu backend has no collectives of its own)")
    assert choose([cpu, cpu]) == (
        "host (rank 0 on cpu:0: the cpu backend has no collectives of its own)")
    nowhere = transport.place(None)
    assert choose([nowhere, nowhere]) == "host (rank 0: no device was given to the Mesh)"


def test_ranks_on_two_nodes_or_two_backends_stage():
    assert choose(gpus("cuda:0", host="a") + gpus("cuda:1", host="b")) == (
        "host (the ranks span the nodes a, b; a device library is used within one node)")
    assert choose([Place("n", "cuda:0", "nccl"), Place("n", "rocm:1", "nccl")]) == (
        "host (the ranks' devices differ in backend or library: cuda:0 nccl, rocm:1 nccl)")


def test_the_cost_model_decides_between_feasible_transports(monkeypatch):
    big, small = 25 << 20, 0
    assert transport.BUCKET_BYTES == big
    # with the assumed figures NCCL wins at every size: staging pays two copies
    assert cost.transport_seconds("nccl", small) < cost.transport_seconds("host", small)
    assert cost.transport_seconds("nccl", big) < cost.transport_seconds("host", big)
    monkeypatch.setitem(cost.ASSUMED_DEVICE_LIBRARIES, "nccl", (1.0, 0.0))  # a slow library
    assert choose(gpus("cuda:0", "cuda:1"), nbytes=1000) == (
        "host (predicted 29 us staged against 1000000 us by nccl for an all_reduce of 1000 "
        "bytes)")


def test_transport_seconds_uses_the_calibrated_mpi_model_for_staging():
    model = CostModel({("all_reduce", "allreduce"): (1e-3, 0.0)})
    copies = 2 * (cost.ASSUMED_STAGING_COPY[0] + cost.ASSUMED_STAGING_COPY[1] * 100)
    assert cost.transport_seconds("host", 100, model) == pytest.approx(1e-3 + copies)
    with pytest.raises(hal.HalError, match="no figures for transport 'rccl'"):
        cost.transport_seconds("rccl", 100)


def test_backends_without_a_library_say_so():
    device = hal.device("cpu:0")
    assert transport.place(device).library == (
        "host (the cpu backend has no collectives of its own)")


@pytest.mark.mpi
def test_a_mesh_records_each_groups_transport(run_ranks):
    out = run_ranks(2, '''
        import hal
        from frontends.parallel import Mesh
        with Mesh((2, 1), ("dp", "tp")) as none_given:
            a = {k: g.transport for k, g in none_given.groups.items()}
        with Mesh((2,), ("dp",), device=hal.device("cpu:0")) as on_cpu:
            x = hal.asarray([1.0, 2.0])
            y = hal.collectives.all_reduce(x, group=on_cpu.group("dp"))
            emit({**a, "cpu": on_cpu.groups["dp"].transport, "sum": y.numpy().tolist()})
    ''')
    assert out[0] == out[1] == {
        "dp": "host (rank 0: no device was given to the Mesh)",
        "tp": "host (one rank: nothing to exchange)",
        "cpu": "host (rank 0 on cpu:0: the cpu backend has no collectives of its own)",
        "sum": [2.0, 4.0]}
