"""The LM's training written three ways, to count the code the annotations save.

    python -m frontends.parallel.train --examples          # the two scripts side by side

`SINGLE_DEVICE` and `PARALLEL` are the same training as two scripts, `FOUR_D` the same
over data, pipeline, tensor and sequence parallelism, and `MANUAL` the parallel one with
Megatron's tensor parallelism written by hand (process groups, weight shards, a forward
with the collectives, the gradient mean); `annotation_lines()` and `four_d_lines()` count
the lines in which they (and the model's source) differ.
"""

from __future__ import annotations

import difflib
import inspect

from .language_model import Block, CausalSelfAttention

SINGLE_DEVICE = '''\
import hal
from frontends import autograd as ag
from frontends import optim
from frontends.parallel import LanguageModel, batches, cross_entropy

model = LanguageModel(256, dim=64, heads=4, layers=2, seq=32, seed=0)


def loss(params, ids, targets):
    return cross_entropy(model.call_with(params, ids), targets)


step = hal.jit(ag.value_and_grad(loss))
opt = optim.AdamW(1e-3)
params = model.trainable()
for ids, targets in batches(steps=20, batch=8, seq=32):
    value, grads = step(params, ids, targets)
    params = opt.step(params, grads)
    print(float(value))
'''
"""Training the LM on one device (run it with python)."""

PARALLEL = '''\
import hal
from frontends import autograd as ag
from frontends import optim
from frontends.parallel import DataParallel, Mesh, parallelize
from frontends.parallel import LanguageModel, batches, cross_entropy

mesh = Mesh((1, 2), ("dp", "tp"))
model = parallelize(LanguageModel(256, dim=64, heads=4, layers=2, seq=32, seed=0), mesh)
dp = DataParallel(mesh, "dp")


def loss(params, ids, targets):
    return cross_entropy(model.call_with(params, ids), targets)


step = hal.jit(ag.value_and_grad(loss))
opt = optim.AdamW(1e-3)
params = model.trainable()
for ids, targets in batches(steps=20, batch=8, seq=32, part=mesh.coords["dp"], parts=1):
    value, grads = step(params, ids, targets)
    params = opt.step(params, dp.sync(grads))
    print(float(value))
'''
"""The same training over a (dp, tp) = (1, 2) mesh (mpiexec -n 2; Mesh((d, t)) and
parts=d for other layouts): each rank prints its part's loss."""

FOUR_D = '''\
from frontends import optim
from frontends.parallel import DataParallel, Mesh, pipeline
from frontends.parallel import LanguageModel, batches, cross_entropy

mesh = Mesh((1, 2, 2), ("dp", "pp", "tp"))
model = LanguageModel(256, dim=64, heads=4, layers=2, seq=32, seed=0)
stage = pipeline(model, mesh, sequence_parallel=True)
dp = DataParallel(mesh, "dp")


opt = optim.AdamW(1e-3)
params = {n: p for n, p in stage.model.trainable().items() if n in stage.names}
for ids, targets in batches(steps=20, batch=8, seq=32, part=mesh.coords["dp"], parts=1):
    value, grads = stage.step(params, ids, targets, cross_entropy, microbatches=4)
    params = opt.step(params, dp.sync(grads))
    if stage.last:
        print(value)
'''
"""The same training in four dimensions: data, pipeline (1F1B over 4 microbatches), tensor
and sequence parallel over a (dp, pp, tp) = (1, 2, 2) mesh (mpiexec -n 4); the last
stage's ranks print the loss."""

MANUAL = '''\
import numpy as np
from mpi4py import MPI

import hal
from frontends import autograd as ag
from frontends import optim
from frontends.parallel import LanguageModel, batches, cross_entropy
from frontends.parallel.mesh import MPIGroup
from hal import collectives

dp, tp, heads, layers = 1, 2, 4, 2
world = MPI.COMM_WORLD
dp_rank, tp_rank = divmod(world.rank, tp)
collectives.register_group("tp", MPIGroup(world.Split(dp_rank, tp_rank), "tp"))
collectives.register_group("dp", MPIGroup(world.Split(tp_rank, dp_rank), "dp"))
model = LanguageModel(256, dim=64, heads=heads, layers=layers, seq=32, seed=0)
COLUMNS = ("query.weight", "key.weight", "value.weight", "fc1.weight")
ROWS = ("query.bias", "key.bias", "value.bias", "fc1.bias", "out.weight", "fc2.weight")


def shard(name, w):
    axis = 1 if name.endswith(COLUMNS) else 0 if name.endswith(ROWS) else None
    if axis is None:
        return w
    return hal.asarray(np.split(w.numpy(), tp, axis=axis)[tp_rank])


def attention(p, name, x):
    x = collectives.copy_to_group(x, group="tp")
    batch, t, _ = x.shape
    q, k, v = (hal.permute_dims(hal.reshape(hal.nn.linear(
        x, p[f"{name}.{n}.weight"], p[f"{name}.{n}.bias"]), (batch, t, heads // tp, -1)),
        (0, 2, 1, 3)) for n in ("query", "key", "value"))
    context = hal.nn.scaled_dot_product_attention(q, k, v, causal=True)
    context = hal.reshape(hal.permute_dims(context, (0, 2, 1, 3)), (batch, t, -1))
    out = collectives.all_reduce(context @ p[f"{name}.out.weight"], group="tp")
    return out + p[f"{name}.out.bias"]


def mlp(p, name, x):
    x = collectives.copy_to_group(x, group="tp")
    h = hal.nn.linear(x, p[f"{name}.fc1.weight"], p[f"{name}.fc1.bias"], activation="gelu")
    return collectives.all_reduce(h @ p[f"{name}.fc2.weight"], group="tp") + p[f"{name}.fc2.bias"]


def norm(p, name, x):
    return hal.nn.layer_norm(x, p[f"{name}.weight"], p[f"{name}.bias"])


def forward(p, ids):
    t = ids.shape[-1]
    x = hal.take(p["tokens.weight"], ids, axis=0) + p["positions.weight"][:t]
    for i in range(layers):
        b = f"blocks.{i}"
        x = x + attention(p, f"{b}.attention", norm(p, f"{b}.attention_norm", x))
        x = x + mlp(p, f"{b}.mlp", norm(p, f"{b}.mlp_norm", x))
    return hal.nn.linear(norm(p, "norm", x), p["head.weight"], p["head.bias"])


def loss(params, ids, targets):
    return cross_entropy(forward(params, ids), targets)


step = hal.jit(ag.value_and_grad(loss))
opt = optim.AdamW(1e-3)
params = {name: shard(name, w) for name, w in model.trainable().items()}
for ids, targets in batches(steps=20, batch=8, seq=32, part=dp_rank, parts=dp):
    value, grads = step(params, ids, targets)
    grads = {n: collectives.all_reduce(g, group="dp") / dp for n, g in grads.items()}
    params = opt.step(params, grads)
    print(float(value))
'''
"""The same training with Megatron's tensor parallelism written by hand (mpiexec -n 2): the
process groups, the weight shards, a forward with the collectives where Megatron puts them,
and the data-parallel gradient mean. The baseline the annotations are measured against."""


def _differing(script: str) -> int:
    """Code lines of `script` that are not in SINGLE_DEVICE (added or changed, by difflib)."""
    single, other = SINGLE_DEVICE.splitlines(), script.splitlines()
    matcher = difflib.SequenceMatcher(a=single, b=other, autojunk=False)
    return sum(1 for tag, _, _, j1, j2 in matcher.get_opcodes() if tag != "equal"
               for line in other[j1:j2] if line.strip())


def annotation_lines() -> dict:
    """How much each parallel version differs from SINGLE_DEVICE: the code lines of each
    script, those of PARALLEL and of MANUAL not in SINGLE_DEVICE, and the model's annotation
    lines (`parallel(...)` in the layers' source, inert on one device)."""
    code = lambda text: sum(1 for line in text.splitlines() if line.strip())  # noqa: E731
    model = "".join(inspect.getsource(cls) for cls in (CausalSelfAttention, Block))
    return {"single_device_lines": code(SINGLE_DEVICE), "parallel_lines": code(PARALLEL),
            "lines_differing": _differing(PARALLEL),
            "model_annotation_lines": sum("parallel(" in line for line in model.splitlines()),
            "manual_lines": code(MANUAL), "manual_lines_differing": _differing(MANUAL)}


def four_d_lines() -> dict:
    """The code lines of SINGLE_DEVICE and FOUR_D, and those of FOUR_D not in SINGLE_DEVICE
    (the model's annotations are annotation_lines')."""
    code = lambda text: sum(1 for line in text.splitlines() if line.strip())  # noqa: E731
    return {"single_device_lines": code(SINGLE_DEVICE), "four_d_lines": code(FOUR_D),
            "four_d_lines_differing": _differing(FOUR_D)}


def side_by_side() -> str:
    """SINGLE_DEVICE and PARALLEL in two columns, '|' marking the lines that differ."""
    single, parallel_ = SINGLE_DEVICE.splitlines(), PARALLEL.splitlines()
    width = max(map(len, single))
    rows = []
    matcher = difflib.SequenceMatcher(a=single, b=parallel_, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        left, right = single[i1:i2], parallel_[j1:j2]
        for k in range(max(len(left), len(right))):
            a = left[k] if k < len(left) else ""
            b = right[k] if k < len(right) else ""
            rows.append(f"{a:{width}} {' ' if tag == 'equal' else '|'} {b}")
    counts = annotation_lines()
    rows.append(f"\n{counts['lines_differing']} of {counts['parallel_lines']} lines differ; "
                f"the model has {counts['model_annotation_lines']} annotation lines")
    return "\n".join(rows)

