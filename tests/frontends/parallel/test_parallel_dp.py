"""Data parallelism on real MPI ranks: bucketed sync, broadcast and ZeRO-1/2 steps equal
training on one rank with the whole batch; bucket order and counts; mismatches refused."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.mpi
CPU = {"HAL_DEVICE": "cpu"}  # float64 throughout; and no probing of the other backends

# A 3-layer float64 MLP, a batch of 8 split evenly over the ranks, and the one-rank
# reference: 3 steps on the whole batch. `relative(a, b)`: the largest normwise relative
# difference over the parameters.
SETUP = '''
import numpy as np
import hal
from frontends import autograd as ag
from frontends.nn.layers import Linear, Sequential
from frontends.optim import SGD, AdamW, clip_grad_norm
from frontends.parallel.data_parallel import DataParallel
from frontends.parallel.mesh import Mesh
from hal import HalError

mesh = Mesh((MPI.COMM_WORLD.Get_size(),), ("dp",))
rng = np.random.default_rng(0)
X, Y = rng.standard_normal((8, 5)), rng.standard_normal((8, 3))
model = Sequential(*(Linear(i, o, activation=a, dtype=hal.float64, seed=s) for i, o, a, s in
                     ((5, 7, "relu", 1), (7, 6, "relu", 3), (6, 3, None, 5))))

def loss(params, x, y):
    return hal.mean((model.call_with(params, hal.asarray(x)) - hal.asarray(y)) ** 2)

def optimizer(kind):
    return (SGD(0.1, momentum=0.9, weight_decay=0.01) if kind == "sgd"
            else AdamW(0.01, weight_decay=0.1))

def reference(kind, max_norm=None):
    params, opt = model.trainable(), optimizer(kind)
    for _ in range(3):
        grads = ag.grad(loss)(params, X, Y)
        if max_norm:
            grads, norm = clip_grad_norm(grads, max_norm)
        params = opt.step(params, grads)
    return params, opt

def train(dp, kind, max_norm=None):
    """3 steps on this rank's part of the batch, from parameters made equal by broadcast."""
    n = 8 // dp.size
    part = slice(dp.rank * n, (dp.rank + 1) * n)
    params = dp.broadcast({k: v + dp.rank for k, v in model.trainable().items()})
    opt = optimizer(kind)
    for _ in range(3):
        grads = ag.grad(loss)(params, X[part], Y[part])
        params = (opt.step(params, dp.sync(grads)) if dp.zero == 0
                  else dp.zero_step(opt, params, grads, max_norm=max_norm))
    return params

def relative(params, expected):
    return max(float(np.abs(params[k].numpy() - v.numpy()).max() / np.abs(v.numpy()).max())
               for k, v in expected.items())
'''


def test_dp2_equals_one_rank_with_buckets_and_zero(run_ranks):
    out = run_ranks(2, SETUP + '''
errors, plans = {}, {}
for kind in ("sgd", "adamw"):
    expected, opt = reference(kind)
    for bucket_bytes in (0, 160, 2**30):
        dp = DataParallel(mesh, bucket_bytes=bucket_bytes)
        before = dp.group.counts["iall_reduce"]
        errors[f"{kind} buckets {bucket_bytes}"] = relative(train(dp, kind), expected)
        plans[bucket_bytes] = [dp.buckets(expected), dp.group.counts["iall_reduce"] - before]
    for zero in (1, 2):
        dp = DataParallel(mesh, bucket_bytes=160, zero=zero)
        errors[f"{kind} zero={zero}"] = relative(train(dp, kind), expected)
full_state = sum(t.nbytes for s in opt.state.values() for t in s.values())  # AdamW's
emit({"errors": errors, "plans": plans, "state": [dp.state_bytes(), full_state]})
''', env=CPU)
    for rank in out:
        assert len(rank["errors"]) == 10
        assert all(e < 1e-10 for e in rank["errors"].values()), rank["errors"]
    # buckets in reverse parameter order; 3 syncs, each one all-reduce per bucket
    names = [f"{layer}.{kind}" for layer in (2, 1, 0) for kind in ("bias", "weight")]
    assert out[0]["plans"] == out[1]["plans"] == {
        "0": [[[n] for n in names], 3 * 6],
        "160": [[names[0:2], names[2:4], names[4:6]], 3 * 3],
        "1073741824": [[names], 3 * 1]}
    # AdamW keeps 2 values per parameter: 111 parameters padded to 112, 56 on each rank
    assert [o["state"] for o in out] == [[56 * 2 * 8, 111 * 2 * 8]] * 2


def test_zero_clipping_dp4_equals_one_rank(run_ranks):
    out = run_ranks(4, SETUP + '''
expected, _ = reference("adamw", max_norm=0.05)
errors = {}
for zero in (1, 2):
    dp = DataParallel(mesh, zero=zero)
    errors[zero] = relative(train(dp, "adamw", max_norm=0.05), expected)
emit({"errors": errors, "norm": dp.last_grad_norm, "state": dp.state_bytes()})
''', env=CPU)
    for rank in out:
        assert all(e < 1e-10 for e in rank["errors"].values()), rank["errors"]
        assert rank["norm"] > 0.05  # the clipping took effect
        assert rank["state"] == 28 * 2 * 8  # 112 / 4 parameters' AdamW moments


def test_bad_input_fails_clearly_on_every_rank(run_ranks):
    out = run_ranks(2, SETUP + '''
grads = ag.grad(loss)(model.trainable(), X, Y)
dp = DataParallel(mesh, bucket_bytes=0)
renamed = {("2.extra" if k == "2.bias" and dp.rank == 1 else k): v for k, v in grads.items()}
reshaped = {k: v[:2] if k == "1.bias" and dp.rank == 0 else v for k, v in grads.items()}
attempts = (lambda: dp.sync(renamed), lambda: dp.sync(reshaped),
            lambda: DataParallel(mesh, zero=3),
            lambda: dp.zero_step(optimizer("sgd"), model.trainable(), grads),
            lambda: DataParallel(mesh, zero=1).zero_step(SGD(0.1, grad_clip=1.0),
                                                         model.trainable(), grads))
messages = []
for attempt in attempts:
    try:
        attempt()
    except HalError as e:
        messages.append(str(e))
mean = dp.sync(grads)  # the ranks are still in step afterwards
emit({"messages": messages, "error": relative(mean, grads)})
''', timeout=60, env=CPU)
    for rank in out:
        renamed, reshaped, zero, plain, clip = rank["messages"]
        assert "'2.bias' float64(3,)" in renamed and "'2.extra'" in renamed
        assert "'1.bias' float64(2,)" in reshaped and "'1.bias' float64(6,)" in reshaped
        assert "zero must be 0" in zero and "zero=0" in plain and "max_norm" in clip
        assert rank["error"] < 1e-15
