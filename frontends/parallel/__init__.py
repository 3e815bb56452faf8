"""Auto-parallel training over MPI: meshes, placements, data, tensor, sequence and pipeline
parallelism.

    mesh = Mesh((dp, tp), ("dp", "tp"))              # under mpiexec -n dp*tp
    model = parallelize(model, mesh)                  # the layers annotated parallel(...)
    loss = lambda p, x, y: cross_entropy(model.call_with(p, x), y)   # runs distributed
    value, grads = hal.jit(ag.value_and_grad(loss))(model.trainable(), x, y)
    params = optimizer.step(params, DataParallel(mesh, "dp").sync(grads))

    mesh = Mesh((dp, pp, tp), ("dp", "pp", "tp"))    # under mpiexec -n dp*pp*tp
    stage = pipeline(model, mesh)                     # this rank's run of the model's chain
    loss, grads = stage.step(params, x, y, cross_entropy, microbatches=4, kind="1f1b")

- `mesh`: Mesh (one MPI process group per axis, registered with hal's collective ops),
  MPIGroup (collectives checked across the ranks, a timeout that aborts the job); `abort`:
  a failing rank ends the whole job with its reason; `faults`: fault cases timed to the
  abort (`python -m frontends.parallel.faults`).
- `placement`, `dtensor`, `rules`: Replicate / Shard / Partial, DTensor and the
  propagation rules that turn ops on global tensors into local ops and collectives.
- `annotate`: `parallel(split_dim=...)`, `parallelize` (`sequence_parallel=True`: the
  activations between split layers sharded along the sequence; `partial_grads=True`: the
  replicated parameters' gradients left partial, then `sum_partial_grads` sums them in one
  fused all_reduce), `forward`, `placements`.
- `pipeline`: `pipeline(model, mesh)` cuts a chain of pieces into pp stages; 1F1B and
  GPipe over microbatches, each microbatch's forward and backward as two compiled graphs,
  activations and gradients exchanged with hal's send/recv ops between them.
- `overlap`: `OverlappedStep`, the dp gradient buckets issued during the backward pass,
  each piece's forward and backward as two compiled graphs (`pipeline.SplitVJP`).
- `data_parallel`: DataParallel (reverse-order gradient buckets, ZeRO-1/2).
- `cost`: all-reduce algorithms and the alpha-beta cost model that chooses among them;
  `planner`: projected step time and days to train for dp x pp x tp (x sp) plans (a
  projection).
- `language_model`: LanguageModel (a small transformer over bytes, annotated),
  cross_entropy, generate; `corpus`: the shipped text and its `batches`.
- `trainer`: Trainer and `train`, the LM's training over a dp x pp x tp mesh; `train`: the
  `hal train` command; `training_scripts`: that training written for one device, with the
  annotations and by hand, and the lines they differ in; `stepper`: training steps on
  command, for the `parallel` benchmark suite.
"""

from .annotate import forward, parallel, parallelize, placements, sum_partial_grads
from .corpus import batches
from .data_parallel import DataParallel
from .distribute import distribute
from .dtensor import DTensor, redistribute
from .language_model import LanguageModel, cross_entropy
from .mesh import Mesh, MPIGroup
from .pipeline import pipeline
from .placement import Partial, Replicate, Shard

__all__ = ["DTensor", "DataParallel", "LanguageModel", "MPIGroup", "Mesh", "Partial",
           "Replicate", "Shard", "batches", "cross_entropy", "distribute", "forward",
           "parallel", "parallelize", "pipeline", "placements", "redistribute",
           "sum_partial_grads"]
