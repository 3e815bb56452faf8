"""Tensor parallelism on real ranks: placements, redistribution, propagation, annotations.

Every check compares the distributed program with the same single-device program on the
global tensors (float64, rtol 1e-10) and counts the collectives it ran.
"""

from __future__ import annotations

import pytest

from frontends.parallel.placement import Partial, Replicate, Shard

COMMON = '''
import numpy as np
import hal
from frontends import nn
from frontends.autograd import value_and_grad
from frontends.parallel.annotate import forward, parallel, parallelize, placements
from frontends.parallel.distribute import distribute
from frontends.parallel.dtensor import DTensor, redistribute
from frontends.parallel.mesh import Mesh
from frontends.parallel.placement import Partial, Replicate, Shard

def collectives(records):
    """{op: calls} of the collective ops among hal.placement() records."""
    found = {}
    for op, *_ in records:
        if op in hal.collectives.OPS:
            found[op] = found.get(op, 0) + 1
    return found

def shard_of(full, placement, ranks, rank):
    """This rank's part of a global numpy array under a placement."""
    if isinstance(placement, Shard):
        return np.split(full, ranks, axis=placement.dim)[rank]
    return full

def rel(a, b):
    """max |a - b| relative to max |b| (to 1e-3 where b is ~0, e.g. a key bias's gradient)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-3)) if a.size else 0.0
'''

MODELS = '''
class MLPBlock(nn.Layer):
    """x + fc2(gelu(fc1(LN(x)))): Megatron's column then row split."""
    def __init__(self, dim, hidden, seed):
        super().__init__()
        self.norm = nn.LayerNorm(dim, dtype=hal.float64)
        self.fc1 = parallel(nn.Linear(dim, hidden, activation="gelu", dtype=hal.float64,
                                      seed=seed), split_dim=1)
        self.fc2 = parallel(nn.Linear(hidden, dim, dtype=hal.float64, seed=seed + 1),
                            split_dim=0)
    def forward(self, x):
        return x + self.fc2(self.fc1(self.norm(x)))

class Block(nn.Layer):
    """A pre-LN transformer layer with its attention and MLP split."""
    def __init__(self, dim, heads, hidden, seed):
        super().__init__()
        self.norm = nn.LayerNorm(dim, dtype=hal.float64)
        self.attention = nn.MultiHeadAttention(dim, heads, dtype=hal.float64, seed=seed)
        for name, split in (("query", 1), ("key", 1), ("value", 1), ("out", 0)):
            parallel(getattr(self.attention, name), split_dim=split)
        self.mlp = MLPBlock(dim, hidden, seed + 7)
    def forward(self, x):
        return self.mlp(x + self.attention(self.norm(x)))
'''


def _script(body: str) -> str:
    return COMMON + MODELS + body


@pytest.mark.mpi
@pytest.mark.parametrize("ranks", [1, 2, 4])
def test_tensor_parallel_training_equals_one_device(run_ranks, ranks):
    out = run_ranks(ranks, _script(f'''
mesh = Mesh(({ranks},), ("tp",))
rng = np.random.default_rng(0)
model = nn.Sequential(Block(16, 4, 32, 1), Block(16, 4, 32, 2))
x = hal.asarray(rng.standard_normal((2, 6, 16)))
target = hal.asarray(rng.standard_normal((2, 6, 16)))
tp = parallelize(model, mesh)
where = placements(tp)

def single(p):
    return hal.mean((model.call_with(p, x) - target) ** 2)

def split(p):
    return hal.mean((forward(tp, p, x) - target) ** 2)

params, local = model.parameters(), tp.parameters()
worst = 0.0
losses = []
for step in range(3):  # SGD: the parameters stay equal step after step
    l1, g1 = value_and_grad(single)(params)
    l2, g2 = value_and_grad(split)(local)
    losses.append((float(l1.numpy()), float(l2.numpy())))
    for n in params:
        worst = max(worst, rel(g2[n].numpy(), shard_of(g1[n].numpy(), where[n], {ranks},
                                                        mesh.rank)))
    params = {{n: params[n] - 0.1 * g1[n] for n in params}}
    local = {{n: local[n] - 0.1 * g2[n] for n in local}}
emit({{"losses": losses, "worst": worst,
       "sharded": sorted(n for n, p in where.items() if isinstance(p, Shard))}})
'''))
    for rank in out:
        for single, split in rank["losses"]:
            assert split == pytest.approx(single, rel=1e-10)
        assert rank["worst"] < 1e-10
        assert "0.attention.query.weight" in rank["sharded"]
        assert "0.norm.weight" not in rank["sharded"]


@pytest.mark.mpi
def test_collectives_per_layer_are_megatrons(run_ranks):
    """An MLP: one all_reduce forward (row output) and one backward (the column input's f);
    attention the same; hal.jit graphs carry them."""
    out = run_ranks(2, _script('''
mesh = Mesh((2,), ("tp",))
rng = np.random.default_rng(1)
x = hal.asarray(rng.standard_normal((2, 4, 8)))

def counts(model, fn):
    tp = parallelize(model, mesh)
    loss = lambda p: hal.sum(forward(tp, p, x) ** 2)
    with hal.placement() as fwd:
        loss(tp.parameters())
    with hal.placement() as both:
        value_and_grad(loss)(tp.parameters())
    graph = hal.jit(lambda p: value_and_grad(loss)(p)).graph(tp.parameters())
    in_graph = collectives([(n.op,) for n in graph.nodes])
    f, b = collectives(fwd.records), collectives(both.records)
    return {"forward": f.get("all_reduce", 0),
            "backward": b.get("all_reduce", 0) - f.get("all_reduce", 0),
            "graph": in_graph.get("all_reduce", 0)}

emit({"mlp": counts(MLPBlock(8, 16, 1), None), "block": counts(Block(8, 2, 16, 1), None)})
'''))
    for rank in out:
        assert rank["mlp"] == {"forward": 1, "backward": 1, "graph": 2}
        # attention: out-projection forward, the q/k/v input's f backward; then the MLP's
        assert rank["block"] == {"forward": 2, "backward": 2, "graph": 4}


@pytest.mark.mpi
def test_redistribution_and_its_adjoint(run_ranks):
    """Every redistribution gives the global tensor in the new layout, and its VJP is the
    adjoint: the gradient of sum(w * redistribute(x)) is w's layout moved back."""
    out = run_ranks(2, _script('''
mesh = Mesh((2,), ("tp",))
group, rank = mesh.group("tp"), mesh.rank
rng = np.random.default_rng(2)
full = rng.standard_normal((4, 6))
weight = rng.standard_normal((4, 6))
parts = rng.standard_normal((2, 4, 6))  # the two ranks' partial terms
moves = [(Replicate(), Shard(0)), (Replicate(), Shard(1)), (Shard(0), Replicate()),
         (Shard(1), Replicate()), (Shard(0), Shard(1)), (Shard(1), Shard(0)),
         (Partial(), Replicate()), (Partial(), Shard(0)), (Partial(), Shard(1))]
results = []
for source, target in moves:
    if isinstance(source, Partial):
        local, whole = parts[rank], parts.sum(axis=0)
    else:
        local, whole = shard_of(full, source, 2, rank), full
    def f(local_x):
        with distribute():
            moved = redistribute(DTensor.make(local_x, source, group), target)
            w = DTensor.make(hal.asarray(shard_of(weight, target, 2, rank)), target, group)
            return redistribute(hal.sum(moved * w), Replicate()).local
    x = hal.asarray(local)
    with distribute():
        moved = redistribute(DTensor.make(x, source, group), target)
        value = moved.numpy()
    total, g = value_and_grad(f)(x)
    expected_grad = weight if isinstance(source, Partial) else shard_of(weight, source, 2, rank)
    results.append([str(source), str(target), rel(value, whole),
                    rel(total.numpy(), (whole * weight).sum()), rel(g.numpy(), expected_grad)])
emit(results)
'''))
    for rank in out:
        for source, target, value, total, grad in rank:
            assert value < 1e-12 and total < 1e-12 and grad < 1e-12, (source, target)


@pytest.mark.mpi
def test_propagation_rules_match_the_single_device_op(run_ranks):
    """Ops on sharded, partial and replicated operands give the global answer."""
    out = run_ranks(2, _script('''
mesh = Mesh((2,), ("tp",))
group, rank = mesh.group("tp"), mesh.rank
rng = np.random.default_rng(3)
a = rng.standard_normal((4, 6))
b = rng.standard_normal((6, 8))
v = rng.standard_normal(6)
cases = {
    "add S+R": (lambda x, y: x + y, [(a, Shard(1)), (v, Replicate())]),
    "mul P*R": (lambda x, y: x * y, [(a, Partial()), (a, Replicate())]),
    "exp of P": (hal.exp, [(a, Partial())]),
    "add P+R": (lambda x, y: x + y, [(a, Partial()), (v, Replicate())]),
    "add P+P": (lambda x, y: x + y, [(a, Partial()), (a, Partial())]),
    "where P": (lambda x, y: hal.where(x > 0, x, y), [(a, Partial()), (v, Replicate())]),
    "matmul R@S": (hal.matmul, [(a, Replicate()), (b, Shard(1))]),
    "matmul S@S": (hal.matmul, [(a, Shard(1)), (b, Shard(0))]),
    "matmul S0@R": (hal.matmul, [(a, Shard(0)), (b, Replicate())]),
    "sum over shard": (lambda x: hal.sum(x, axis=1), [(a, Shard(1))]),
    "sum keeping shard": (lambda x: hal.sum(x, axis=0), [(a, Shard(1))]),
    "mean over shard": (lambda x: hal.mean(x, axis=1, keepdims=True), [(a, Shard(1))]),
    "max over shard": (lambda x: hal.max(x, axis=1), [(a, Shard(1))]),
    "softmax along shard": (lambda x: hal.nn.softmax(x, axis=1), [(a, Shard(1))]),
    "softmax across shard": (lambda x: hal.nn.softmax(x, axis=0), [(a, Shard(1))]),
    "layer_norm": (hal.nn.layer_norm, [(a, Shard(0))]),
    "reshape split": (lambda x: hal.reshape(x, (4, 2, 3)), [(a, Shard(1))]),
    "reshape merge": (lambda x: hal.reshape(x, (24,)), [(a, Shard(0))]),
    "permute": (lambda x: hal.permute_dims(x, (1, 0)), [(a, Shard(1))]),
    "take (replicated)": (lambda x: hal.take(x, hal.asarray([2, 0]), axis=1), [(a, Shard(1))]),
}
results = {}
for name, (fn, operands) in cases.items():
    expected = fn(*[hal.asarray(o) for o, _ in operands]).numpy()
    locals_ = []
    for array, placement in operands:
        local = array / 2 if isinstance(placement, Partial) else shard_of(array, placement, 2,
                                                                           rank)
        locals_.append(DTensor.make(hal.asarray(local), placement, group))
    with distribute():
        result = fn(*locals_)
        results[name] = [rel(result.numpy(), expected), str(result.placement)]
emit(results)
'''))
    for rank in out:
        for name, (error, _) in rank.items():
            assert error < 1e-12, name
        assert rank["matmul R@S"][1] == "S(1)" and rank["matmul S@S"][1] == "P"
        assert rank["sum over shard"][1] == "P" and rank["sum keeping shard"][1] == "S(0)"
        assert rank["exp of P"][1] == "R" and rank["mul P*R"][1] == "P"
        assert rank["add P+R"][1] == "R" and rank["add P+P"][1] == "P"
        assert rank["reshape split"][1] == "S(1)" and rank["permute"][1] == "S(0)"


@pytest.mark.mpi
def test_uneven_split_is_refused_by_name(run_ranks):
    out = run_ranks(2, _script('''
mesh = Mesh((2,), ("tp",))
model = MLPBlock(6, 9, 1)  # hidden 9 does not split over 2 ranks
try:
    parallelize(model, mesh)
    emit("no error")
except hal.ShapeError as e:
    emit(str(e))
try:
    Mesh((2,), ("tp",), cost="fastest")
    emit("no error")
except hal.HalError as e:
    emit(str(e))
'''))
    for uneven, cost in out:
        assert "fc1.weight" in uneven and "9" in uneven and "tp=2" in uneven
        assert "'calibrate'" in cost and "'fastest'" in cost


def test_placements_print_short():
    assert [repr(p) for p in (Replicate(), Shard(1), Partial())] == ["R", "S(1)", "P"]


@pytest.mark.mpi
def test_a_parallelized_model_is_called_like_the_model(run_ranks):
    """model(x) and model.call_with(params, x) of the parallelized copy run distributed and
    return what the single-device model returns; parallelizing twice is refused."""
    out = run_ranks(2, _script('''
mesh = Mesh((2,), ("tp",))
model = MLPBlock(8, 16, 1)
x = hal.asarray(np.random.default_rng(4).standard_normal((3, 8)))
tp = parallelize(model, mesh)
called = rel(tp(x).numpy(), model(x).numpy())
params = {n: p * 2.0 for n, p in tp.parameters().items()}
doubled = {n: p * 2.0 for n, p in model.parameters().items()}
with_params = rel(tp.call_with(params, x).numpy(), model.call_with(doubled, x).numpy())
try:
    parallelize(tp, mesh)
    twice = "no error"
except hal.HalError as e:
    twice = str(e)
emit({"called": called, "with_params": with_params, "twice": twice,
      "name": type(tp).__name__})
'''))
    for rank in out:
        assert rank["called"] < 1e-12 and rank["with_params"] < 1e-12
        assert "parallelized already" in rank["twice"] and rank["name"] == "MLPBlock"
