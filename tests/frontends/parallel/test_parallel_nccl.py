"""Collectives of ranks on GPUs, under mpiexec: on two GPUs a Mesh chooses NCCL and hal's
collective ops on cuda tensors equal the host sums; two ranks on one GPU stage through the
host, saying why. They skip without the GPUs and cupy's NCCL (nothing stands in for cupy);
on a GPU machine run `python -m pytest tests/frontends/parallel/test_parallel_nccl.py`."""

from __future__ import annotations

import pytest

import hal

pytestmark = [pytest.mark.mpi, pytest.mark.gpu]

ON_GPUS = '''
import numpy as np
import hal
from frontends.parallel import Mesh

comm = MPI.COMM_WORLD
rank, P = comm.Get_rank(), comm.Get_size()
dev = hal.device(f"cuda:{rank % DEVICES}")
rng = np.random.default_rng(rank)
x = {"float32": rng.integers(-50, 50, (4, 6)).astype(np.float32),
     "float16": rng.integers(-50, 50, (4, 6)).astype(np.float16),
     "int32": rng.integers(-50, 50, (4, 6)).astype(np.int32),
     "complex64": (rng.integers(-9, 9, (4, 6)) + 1j * rng.integers(-9, 9, (4, 6))
                   ).astype(np.complex64)}
everyone = {k: np.stack(comm.allgather(a)) for k, a in x.items()}
C, wrong = hal.collectives, []
with Mesh((P,), ("dp",), device=dev) as mesh:
    g, group = mesh.group("dp"), mesh.groups["dp"]
    for name, a in x.items():
        t = hal.asarray(a, device=dev)
        total = everyone[name].sum(0).astype(a.dtype)
        want = {"all_reduce": total, "all_gather": np.concatenate(everyone[name], 1),
                "reduce_scatter": np.split(total, P, 0)[rank]}
        got = {"all_reduce": C.all_reduce(t, group=g),
               "all_gather": C.all_gather(t, group=g, axis=1),
               "reduce_scatter": C.reduce_scatter(t, group=g, axis=0)}
        wrong += [f"{name}.{op}" for op in want if got[op].device != dev or not
                  np.array_equal(got[op].numpy(), want[op])]
    emit({"transport": group.transport, "wrong": wrong, "counts": dict(group.counts)})
'''


def gpus() -> int:
    """How many GPUs with cupy's NCCL are here (0 where there are none, or no NCCL)."""
    backend = hal.backend("cuda")
    if backend.why_unavailable() is not None:
        return 0
    usable = backend.collectives_transport(hal.device("cuda:0")) == "nccl"
    return backend.device_count() if usable else 0


def test_ranks_on_two_gpus_sum_through_nccl(run_ranks):
    if gpus() < 2:
        pytest.skip("needs 2 GPUs and cupy with NCCL")
    out = run_ranks(2, ON_GPUS.replace("DEVICES", "2"), timeout=180)
    assert [o["transport"] for o in out] == ["nccl", "nccl"]
    assert [o["wrong"] for o in out] == [[], []]
    assert out[0]["counts"] == {"all_reduce": 4, "all_gather": 4, "reduce_scatter": 4}


def test_two_ranks_on_one_gpu_stage_through_the_host(run_ranks):
    if gpus() < 1:
        pytest.skip("needs a GPU and cupy with NCCL")
    out = run_ranks(2, ON_GPUS.replace("DEVICES", "1"), timeout=180)
    assert [o["transport"] for o in out] == [
        "host (ranks 0 and 1 share cuda:0, and nccl refuses two ranks on one device)"] * 2
    assert [o["wrong"] for o in out] == [[], []]
