"""NCCL through cupy (backends/cuda/nccl.py) on one GPU: a communicator of one rank runs
each collective for every dtype (the views, widenings and narrowings around NCCL's types),
and a group whose transport is NCCL carries hal's collective ops on cuda tensors through
it, counted. One GPU cannot exchange anything between ranks (NCCL refuses two ranks on one
GPU): tests/frontends/parallel/test_parallel_nccl.py does that on 2 GPUs. Everything here
skips without a GPU and cupy's NCCL; nothing stands in for cupy."""

from __future__ import annotations

import numpy as np
import pytest

import hal
from hal import dtypes as dt

pytestmark = pytest.mark.gpu
SUMMED = [d.name for d in dt.NUMERIC]  # what all_reduce and reduce_scatter accept
GATHERED = ["bool", "int16", "uint16"]  # and the others gathers move as bytes


@pytest.fixture(scope="module")
def dev():
    backend = hal.backend("cuda")
    why = backend.why_unavailable()
    if why is not None:
        pytest.skip(f"needs a GPU and cupy with NCCL: {why}")
    device = hal.device("cuda:0")
    transport = backend.collectives_transport(device)
    if transport != "nccl":
        pytest.skip(f"needs cupy with NCCL: {transport}")
    return device


@pytest.fixture(scope="module")
def alone(dev):
    from backends.cuda.nccl import NcclCollectives

    return NcclCollectives(dev, 1, 0, lambda make: make())


def operand(dtype: str) -> np.ndarray:
    rng = np.random.default_rng(3)
    x = rng.integers(-50, 50, (4, 6)) + (1j * rng.integers(-50, 50, (4, 6))
                                         if dtype.startswith("complex") else 0)
    return (x > 0 if dtype == "bool" else x).astype(dt.dtype(dtype))


@pytest.mark.parametrize("dtype", SUMMED + GATHERED)
def test_one_rank_collectives_return_their_operand(dev, alone, dtype):
    import cupy

    x = operand(dtype)
    native = cupy.asarray(x)
    sums = (alone.all_reduce(native), alone.reduce_scatter(native, 1)) if dtype in SUMMED else ()
    for got in (*sums, alone.all_gather(native, 0), alone.all_gather(native, 1)):
        got = cupy.asnumpy(got)
        assert got.dtype == x.dtype and got.shape == x.shape
        np.testing.assert_array_equal(got, x)


def test_a_group_on_nccl_carries_hals_collectives_counted(dev, alone):
    from mpi4py import MPI

    from frontends.parallel.mesh import MPIGroup

    group = MPIGroup(MPI.COMM_SELF.Dup(), "nccl-alone", transport="nccl", collectives=alone)
    hal.collectives.register_group(group.name, group)
    try:
        x = operand("float32")
        t = hal.asarray(x, device=dev)
        C = hal.collectives
        for out in (C.all_reduce(t, group=group.name), C.reduce_scatter(t, group=group.name),
                    C.gather_to_group(t, group=group.name, axis=-1)):
            assert out.device == dev
            np.testing.assert_array_equal(out.numpy(), x)
        assert dict(group.counts) == {"all_reduce": 1, "reduce_scatter": 1, "all_gather": 1}
        assert group.last.detail == "axis=1"
    finally:
        hal.collectives.unregister_group(group.name)
        group.close()
        group.comm.Free()
