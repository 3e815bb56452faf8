"""Propagation rules: how an op on DTensors runs as local ops and collectives.

`propagate(spec, args, params, out)` is called by the `Distribute` interpreter for an op
with a DTensor operand (plain Tensors count as replicated). Each rule picks the operand
placements it can compute from, redistributes the others, calls the op on the local
tensors and returns the result with its placement:

- elementwise (unary, binary, where, cast, clip, the nn activations): one shard axis
  carries through; replicated operands are sliced to it (`split_to_group`) or, where they
  broadcast, used whole. Partial operands stay partial through add/subtract of partials,
  negative, astype, multiply by a replicated value and division of a partial by one;
  anything else sums them first: into the shard of the other operands when they share
  one (P -> S, a reduce_scatter: a row-parallel output added to a sequence-sharded
  residual), else whole (P -> R).
- matmul / linear: R x S(n) -> S(n) (column), S(k) x S(k) -> P (row), a shard of a batch
  axis carries through, P x R -> P; row-parallel linear with a bias or activation sums
  first (one all_reduce, then bias and activation on the whole; with sequence parallelism
  a reduce_scatter along the sequence axis, the second to last, then bias and activation
  on the shard; a sequence that does not divide over the ranks is summed whole).

Sequence parallelism (Megatron): the residual stream between tensor-parallel blocks lies
sharded along the sequence (S(1) of (batch, seq, dim)). It follows from the rules above
and one switch (`distribute(sequence_parallel=True)`): a row-parallel output is
reduce-scattered to S(1) instead of all-reduced; layer_norm and elementwise ops
(residual adds, dropout's mask) run on the sequence shard; a column-parallel linear
gathers its S(1) input (`gather_to_group`, S -> R), whose backward reduce-scatters the
ranks' parts of that input's cotangent back to the shard (Megatron's conjugate: the
backward of sequence parallelism is its forward with all_gather and reduce_scatter
swapped).
- reductions: a sum or mean over the shard axis -> P; over other axes the shard stays;
  max/min/var/... over the shard axis gather first.
- layer_norm, softmax, log_softmax: need their axis whole; other shard axes carry through.
- scaled_dot_product_attention: a shard of a batch axis (heads) carries through.
- reshape follows the shard axis where a chunk stays a chunk (heads split and merged);
  permute_dims permutes it.
- everything else: every operand replicated, the op run whole on every rank.

Megatron's f: wherever a replicated operand feeds a result that is not replicated, its
cotangent from that use is only this rank's part, so it enters through `copy_to_group`,
whose VJP all-reduces (the conjugate of the P -> R all_reduce, whose VJP is the identity).
"""

from __future__ import annotations

import math

import hal
from hal import HalError, shapes
from hal.dispatch import call

from .dtensor import DTensor, gathered_for_split, redistribute, size, used_whole
from .dtensor import enter as enter_group
from .placement import Partial, Replicate, Shard

R, P = Replicate(), Partial()

ELEMENTWISE = frozenset(("unary", "binary", "where", "cast", "clip"))
NN_ELEMENTWISE = frozenset(("gelu", "silu", "sigmoid", "relu"))
LINEAR_IN_PARTIAL = frozenset(("negative", "astype"))
SUM_LIKE = frozenset(("sum", "mean"))
WHOLE_LAST_AXIS = frozenset(("layer_norm",))
WHOLE_AXIS = frozenset(("softmax", "log_softmax"))
ACTIVATIONS = {
    "relu": hal.nn.relu, "gelu": hal.nn.gelu, "silu": hal.nn.silu,
    "sigmoid": hal.nn.sigmoid, "tanh": hal.tanh,
    "gelu_tanh": lambda y: hal.nn.gelu(y, approximate="tanh"),
}


def propagate(spec, args: tuple, params: dict, out: tuple, *,
              sequence_parallel: bool = False) -> DTensor:
    """Run one op on DTensor operands (see the module); the result is a DTensor."""
    group = _group(spec, args)
    ds = tuple(None if a is None else a if type(a) is DTensor else DTensor.make(a, R, group)
               for a in args)
    result = _rule(spec, ds, params, out, sequence_parallel)
    if result.shape != tuple(out[0]) or result.dtype != out[1]:
        raise HalError(f"{spec.name}: the distributed rule made {result!r}; the op's rule says "
                       f"{out[1].name}{tuple(out[0])} (a bug in frontends/parallel/rules.py)")
    return result


def _rule(spec, ds, params, out, sequence_parallel: bool) -> DTensor:
    name, family = spec.name, spec.family
    if family in ELEMENTWISE or name in NN_ELEMENTWISE:
        return _elementwise(spec, ds, params, out)
    if name == "matmul":
        return _matmul(spec, ds, params)
    if name == "linear":
        return _linear(spec, ds, params, sequence_parallel)
    if family == "reduction":
        return _reduction(spec, ds, params, out)
    if name in WHOLE_LAST_AXIS or name in WHOLE_AXIS:
        axis = len(out[0]) - 1 if name in WHOLE_LAST_AXIS else \
            shapes.axis(name, params.get("axis", -1), len(out[0]))
        return _keep_shard_off(spec, ds, params, lambda d: d != axis)
    if name == "scaled_dot_product_attention":
        return _keep_shard_off(spec, ds, params, lambda d: d < len(out[0]) - 2)
    if name == "reshape":
        return _reshape(spec, ds[0], params, out)
    if name == "permute_dims":
        return _permute(spec, ds[0], params)
    return _replicated(spec, ds, params)


# -- helpers ----------------------------------------------------------------------------------
def _group(spec, args) -> str:
    groups = {a.group for a in args if type(a) is DTensor}
    if len(groups) > 1:
        raise HalError(f"{spec.name}: operands are distributed over different groups "
                       f"({', '.join(sorted(groups))}); one op runs over one group")
    return groups.pop()


def _run(spec, ds, params, placement) -> DTensor:
    """The op on the local tensors; replicated operands enter through copy_to_group (f)
    when the result is not replicated."""
    group = next(d.group for d in ds if d is not None)
    enter = not isinstance(placement, Replicate)
    local = [None if d is None else d.local if not isinstance(d.placement, Replicate)
             else enter_group(d.local, group) if enter else used_whole(d.local) for d in ds]
    return DTensor.make(call(spec, *local, **params), placement, group)


def _replicated(spec, ds, params) -> DTensor:
    return _run(spec, [None if d is None else redistribute(d, R) for d in ds], params, R)


def _aligned(d: DTensor, ndim: int) -> int | None:
    """The output axis of d's shard axis under broadcasting to ndim axes (None if not S)."""
    return d.placement.dim + ndim - d.ndim if isinstance(d.placement, Shard) else None


# -- elementwise ------------------------------------------------------------------------------
def _elementwise(spec, ds, params, out) -> DTensor:
    ndim = len(out[0])
    partial = [d for d in ds if d is not None and isinstance(d.placement, Partial)]
    if partial and _stays_partial(spec.name, ds):
        return _run(spec, ds, params, P)
    if partial:
        sharded = {_aligned(d, ndim) for d in ds if d is not None} - {None}
        to = Shard(sharded.pop()) if len(sharded) == 1 else None
        ds = [d if d is None or not isinstance(d.placement, Partial) else
              redistribute(d, R if to is None or d.ndim != ndim else to) for d in ds]
    axes = {_aligned(d, ndim) for d in ds if d is not None} - {None}
    if len(axes) != 1:
        return _replicated(spec, ds, params)
    axis = axes.pop()
    moved = []
    for d in ds:
        if d is None or not isinstance(d.placement, Replicate):
            moved.append(d)
            continue
        own = axis - (ndim - d.ndim)
        moved.append(redistribute(d, Shard(own)) if own >= 0 and d.shape[own] > 1 else d)
    return _run(spec, moved, params, Shard(axis))


def _stays_partial(name: str, ds) -> bool:
    kinds = [None if d is None else type(d.placement) for d in ds]
    if name in LINEAR_IN_PARTIAL or (name in ("add", "subtract")
                                     and all(k is Partial for k in kinds if k)):
        return True
    if name == "multiply":
        return sorted(k.__name__ for k in kinds) == ["Partial", "Replicate"]
    return name == "divide" and kinds[0] is Partial and kinds[1] is Replicate


# -- matmul and linear ------------------------------------------------------------------------
def _matmul(spec, ds, params) -> DTensor:
    a, b = ds
    if a.ndim < 2 or b.ndim < 2:
        return _replicated(spec, ds, params)
    pa, pb = a.placement, b.placement
    ka, kb, n_b, m_a = a.ndim - 1, b.ndim - 2, b.ndim - 1, a.ndim - 2
    if (isinstance(pa, Partial) and isinstance(pb, Replicate)) or \
            (isinstance(pb, Partial) and isinstance(pa, Replicate)):
        return _run(spec, ds, params, P)
    if isinstance(pa, Partial) or isinstance(pb, Partial):
        a, b = redistribute(a, R) if isinstance(pa, Partial) else a, \
            redistribute(b, R) if isinstance(pb, Partial) else b
        pa, pb = a.placement, b.placement
    ndim = max(a.ndim, b.ndim)
    if pa == Shard(ka) and pb == Shard(kb):
        return _run(spec, (a, b), params, P)
    if isinstance(pa, Replicate) and pb == Shard(n_b):
        return _run(spec, (a, b), params, Shard(ndim - 1))
    if pa == Shard(m_a) and isinstance(pb, Replicate):
        return _run(spec, (a, b), params, Shard(ndim - 2))
    batch = {_aligned(d, ndim) for d in (a, b)} - {None}
    if len(batch) == 1 and batch.pop() < ndim - 2:
        return _elementwise_batch(spec, (a, b), params, ndim)
    return _replicated(spec, (a, b), params)


def _elementwise_batch(spec, ds, params, ndim) -> DTensor:
    """A matmul whose operands share a shard of one batch axis: the axis carries through."""
    axis = next(_aligned(d, ndim) for d in ds if isinstance(d.placement, Shard))
    moved = []
    for d in ds:
        own = axis - (ndim - d.ndim)
        if isinstance(d.placement, Replicate) and own >= 0 and d.shape[own] > 1:
            d = redistribute(d, Shard(own))
        elif isinstance(d.placement, Shard) and _aligned(d, ndim) != axis:
            d = redistribute(d, R)
        moved.append(d)
    return _run(spec, moved, params, Shard(axis))


def _linear(spec, ds, params, sequence_parallel: bool = False) -> DTensor:
    x, w, b = ((*tuple(ds), None))[:3]
    activation = params.get("activation")
    last = x.ndim - 1
    sequence = Shard(last - 1) if sequence_parallel and x.ndim >= 3 \
        and x.shape[last - 1] % size(x.group) == 0 else R  # an uneven sequence stays whole
    if w.placement == Shard(1):  # column parallel: whole input, a shard of the outputs
        x = gathered_for_split(x) if isinstance(x.placement, Shard) else redistribute(x, R)
        if b is not None:
            b = redistribute(b, Shard(0))
        return _run(spec, (x, w, b), params, Shard(last))
    if w.placement == Shard(0):  # row parallel: a shard of the inputs, partial outputs
        x = redistribute(x, Shard(last))
        y = _run(spec, (x, w, None), {"activation": None}, P)
        if b is None and activation is None:
            return y
        y = redistribute(y, sequence)
        if b is not None:
            y = y + b
        return ACTIVATIONS[activation](y) if activation else y
    w = redistribute(w, R)
    if b is not None:
        b = redistribute(b, R)
    if isinstance(x.placement, Shard) and x.placement.dim < last:
        return _run(spec, (x, w, b), params, x.placement)
    return _run(spec, (redistribute(x, R), w, b), params, R)


# -- reductions, whole-axis ops, movement -----------------------------------------------------
def _reduction(spec, ds, params, out) -> DTensor:
    x = ds[0]
    reduced = shapes.axes(spec.name, params.get("axis"), x.ndim)
    if isinstance(x.placement, Partial):
        return _run(spec, ds, params, P) if spec.name in SUM_LIKE else \
            _replicated(spec, ds, params)
    if isinstance(x.placement, Replicate):
        return _run(spec, ds, params, R)
    dim = x.placement.dim
    if dim not in reduced:
        kept = dim if params.get("keepdims") else dim - sum(a < dim for a in reduced)
        return _run(spec, ds, params, Shard(kept))
    if spec.name == "sum":
        return _run(spec, ds, params, P)
    if spec.name == "mean":  # the mean of equal chunks' means
        ranks = x.shape[dim] // x.local.shape[dim]
        y = _run(spec, ds, params, P)
        return DTensor.make(y.local * (1.0 / ranks), P, y.group)
    return _replicated(spec, ds, params)


def _keep_shard_off(spec, ds, params, allowed) -> DTensor:
    """Ops that need some axes whole: a shard of an allowed axis shared by the main operands
    carries through; otherwise everything is replicated."""
    moved = [None if d is None else redistribute(d, R) if isinstance(d.placement, Partial) else d
             for d in ds]
    x = moved[0]
    main = [d for d in moved if d is not None and d.ndim == x.ndim]
    if isinstance(x.placement, Shard) and allowed(x.placement.dim) \
            and all(d.placement == x.placement for d in main):
        rest = [d if d is None or d.ndim == x.ndim else redistribute(d, R) for d in moved]
        return _run(spec, rest, params, x.placement)
    return _replicated(spec, moved, params)


def _reshape(spec, x: DTensor, params, out) -> DTensor:
    if not isinstance(x.placement, Shard):
        return _run(spec, (x,), params, x.placement)
    target = tuple(out[0])
    dim, ranks = x.placement.dim, x.shape[x.placement.dim] // x.local.shape[x.placement.dim]
    before = math.prod(x.shape[:dim])
    for j, n in enumerate(target):
        if math.prod(target[:j]) == before and n % ranks == 0 and n >= ranks:
            local = (*target[:j], n // ranks, *target[j + 1:])
            return _run(spec, (x,), {**params, "shape": local}, Shard(j))
    return _replicated(spec, (x,), params)


def _permute(spec, x: DTensor, params) -> DTensor:
    if not isinstance(x.placement, Shard):
        return _run(spec, (x,), params, x.placement)
    axes = shapes.axes("permute_dims", params["axes"], x.ndim, allow_none=False)
    return _run(spec, (x,), params, Shard(list(axes).index(x.placement.dim)))
