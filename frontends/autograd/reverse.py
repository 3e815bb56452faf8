"""Reverse mode: a tape of the ops that depend on the inputs, walked backwards with VJP rules.

`vjp`, `grad`, `value_and_grad`, `elementwise_grad` and `jacrev`. Every rule is written
in hal ops, so the backward pass is itself observed by enclosing levels and can be
differentiated again to any order. Complex convention: see `frontends.autograd`.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence

import numpy as np

import hal
from hal import HalError, Tensor
from hal import dtypes as dt

from . import vjp_composites, vjp_conv  # noqa: F401  (register the composite and conv rules)
from .pytree import flatten, unflatten
from .trace import (
    Blocked,
    Level,
    active,
    blocked_output,
    check_flow,
    check_input,
    followed,
    fresh,
)
from .vjp_rules import RULES, SAVES


class Operand:
    """What a node keeps of an operand whose value its rule does not read: shape and dtype."""

    __slots__ = ("device", "dtype", "ndim", "shape", "size")

    def __init__(self, t: Tensor) -> None:
        self.shape, self.dtype, self.device = t.shape, t.dtype, t.device
        self.ndim, self.size = t.ndim, t.size


class Node:
    """One recorded op: what its rule reads, and the nodes that produced its operands."""

    __slots__ = ("args", "marks", "out", "params", "parents", "seq", "spec")

    def __init__(self, spec, args, params, out, parents, marks, seq: int) -> None:
        self.spec, self.args, self.params, self.out = spec, args, params, out
        self.parents, self.marks, self.seq = parents, marks, seq


class Tape(Level):
    """A reverse-mode level: a graph of the ops that depend on its inputs.

    Each followed tensor maps (weakly) to the node that produced it; a node keeps the
    operand values its rule reads (`vjp_rules.SAVES`), the others' shapes and dtypes,
    and its operands' producer nodes. As in PyTorch's graph, a node lives while its
    result or a node that consumed it does, so memory holds what the backward pass
    reads and dead branches are freed as they die.
    """

    def __init__(self) -> None:
        super().__init__()
        self.entries: dict[int, tuple[weakref.ref, Node, object]] = {}
        self.count = 0

    def _follow(self, t: Tensor, node: Node, mark) -> None:
        key, entries = id(t), self.entries
        entries[key] = (weakref.ref(t, lambda _, key=key: entries.pop(key, None)), node, mark)

    def _entry(self, t):
        if t is None:
            return None
        entry = self.entries.get(id(t))
        return entry if entry is not None and entry[0]() is t else None

    def watch(self, x: Tensor) -> None:
        """Follow x (an input of the level)."""
        self._follow(x, Node(None, (), {}, None, (), (), -1), True)

    def mark(self, t):
        """True or a Blocked marker for a followed tensor, None otherwise."""
        entry = self._entry(t)
        return None if entry is None else entry[2]

    def record(self, spec, args, params, out) -> None:
        """Add a node for the op if one of its operands is followed."""
        entries = [self._entry(a) for a in args]
        marks = [None if e is None else e[2] for e in entries]
        if not followed(spec, marks):
            return
        reads, reads_out = SAVES.get(spec.name, (True, True))
        kept = tuple(a if a is None or reads is True or (reads and i in reads) else Operand(a)
                     for i, a in enumerate(args))
        parents = tuple(None if e is None else e[1] for e in entries)
        self.count += 1
        node = Node(spec, kept, params, out if reads_out else None, parents, marks, self.count)
        self._follow(out, node, blocked_output(spec, args, out, marks) or True)

    def backward(self, outputs: Sequence[Tensor], cotangents: Sequence[Tensor],
                 inputs: Sequence[Tensor], mode: str, release: bool = False) -> list:
        """Cotangents of `inputs` (None where none reached them) given those of `outputs`.

        With release, each node lets go of what it kept once its rule has run (as
        PyTorch's backward without retain_graph): memory falls during the pass, and the
        tape cannot be walked again.
        """
        grads: dict[int, Tensor] = {}
        roots = []
        for o, c in zip(outputs, cotangents, strict=True):
            entry = self._entry(o)
            if entry is None:
                continue
            if isinstance(entry[2], Blocked):
                raise entry[2].error(mode)
            k = id(entry[1])
            grads[k] = c if k not in grads else grads[k] + c
            roots.append(entry[1])
        for node in _reachable(roots):
            g = grads.pop(id(node), None) if node.spec is not None else None
            if g is None:
                continue
            check_flow(node.spec, node.marks, mode)
            rule = RULES.get(node.spec.name)
            if rule is None:
                raise HalError(f"{mode}: op {node.spec.name} has no VJP rule; it cannot be "
                               "differentiated in reverse mode (use forward mode: jvp)")
            needs = [bool(m) for m in node.marks]
            with self.own_work():
                cts = rule(g, node.args, node.params, node.out, needs)
                for parent, need, c in zip(node.parents, needs, cts, strict=True):
                    if need and c is not None:
                        k = id(parent)
                        grads[k] = c if k not in grads else grads[k] + c
            if release:
                node.args = node.out = None
            del g, cts
        leaves = [self._entry(x) for x in inputs]
        return [None if e is None else grads.get(id(e[1])) for e in leaves]


def _reachable(roots: list[Node]) -> list[Node]:
    """The nodes the roots depend on, latest first (a reverse topological order)."""
    seen: dict[int, Node] = {}
    stack = list(roots)
    while stack:
        node = stack.pop()
        if id(node) not in seen:
            seen[id(node)] = node
            stack.extend(p for p in node.parents if p is not None)
    return sorted(seen.values(), key=lambda n: -n.seq)


def vjp(f: Callable, *primals, has_aux: bool = False):
    """(f(*primals), vjp_fn) with vjp_fn(cotangent) -> cotangents shaped like primals.

    primals and f's result may be Tensors or tuple/list/dict pytrees of Tensors; with
    has_aux, f returns (output, aux) and the result is (output, vjp_fn, aux). vjp_fn
    may be called any number of times.
    """
    result, pull, aux = _trace(f, primals, has_aux)

    def vjp_fn(cotangent):
        return pull(cotangent, False)

    return (result, vjp_fn, aux) if has_aux else (result, vjp_fn)


def _trace(f: Callable, primals: tuple, has_aux: bool):
    """(result, pull(cotangent, release), aux): f run on a tape, and its backward pass."""
    leaves, structure = flatten(primals, "primal")
    for x in leaves:
        check_input(x, "vjp", "primal")
    xs = [fresh(x) for x in leaves]
    tape = Tape()
    for x in xs:
        tape.watch(x)
    with active(tape):
        result = f(*unflatten(structure, xs))
    aux = None
    if has_aux:
        if not (isinstance(result, (tuple, list)) and len(result) == 2):
            raise HalError("vjp: with has_aux=True the function must return (output, aux)")
        result, aux = result
    outs, _ = flatten(result, "output of the function")

    def pull(cotangent, release: bool):
        cts, _ = flatten(cotangent, "cotangent")
        if len(cts) != len(outs):
            raise HalError(f"vjp: {len(cts)} cotangents for {len(outs)} outputs; pass one "
                           "per output, in the output's structure")
        for o, c in zip(outs, cts, strict=True):
            if tuple(c.shape) != tuple(o.shape) or c.dtype != o.dtype:
                raise HalError(
                    f"vjp: cotangent {c.dtype.name}{list(c.shape)} does not match output "
                    f"{o.dtype.name}{list(o.shape)}; give it the output's shape and dtype"
                )
        grads = tape.backward(outs, cts, xs, "vjp", release)
        filled = [hal.zeros_like(x) if g is None else g for x, g in zip(xs, grads, strict=True)]
        return tuple(unflatten(structure, filled))

    return result, pull, aux


def normalize_argnums(fn: str, argnums, nargs: int) -> tuple[int, ...]:
    """argnums (an int or a tuple) as a tuple of non-negative indices; HalError if out of range."""
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for i in nums:
        if not isinstance(i, int) or not -nargs <= i < nargs:
            raise HalError(f"{fn}: argnums {argnums!r} out of range for {nargs} arguments")
    return tuple(i % nargs for i in nums)


def fix_others(f: Callable, args, nums) -> Callable:
    """f as a function of args[nums] only, the other arguments fixed."""
    def g(*diff):
        full = list(args)
        for i, d in zip(nums, diff, strict=True):
            full[i] = d
        return f(*full)

    return g


def value_and_grad(f: Callable, argnums=0, has_aux: bool = False) -> Callable:
    """A function returning (f(*args), gradient of f with respect to args[argnums]).

    f must return a real scalar (shape ()); argnums may be a tuple, giving a tuple of
    gradients. With has_aux, f returns (value, aux) and the result is ((value, aux), grad).
    For complex inputs the gradient is df/dx - i df/dy (JAX's convention).
    """
    def wrapped(*args):
        nums = normalize_argnums("grad", argnums, len(args))
        value, pull, aux = _trace(fix_others(f, args, nums), tuple(args[i] for i in nums),
                                  has_aux)
        if not isinstance(value, Tensor) or value.shape != ():
            what = (f"a {value.dtype.name} tensor of shape {tuple(value.shape)}"
                    if isinstance(value, Tensor) else type(value).__name__)
            raise HalError(
                f"grad: the function returned {what}; grad needs a scalar (shape ()). Reduce "
                "it (hal.sum) or use vjp, jacrev or elementwise_grad for other outputs"
            )
        if not dt.is_floating(value.dtype):
            raise HalError(
                f"grad: the function returned a {value.dtype.name} scalar; grad needs a real "
                "floating output (take hal.real or hal.abs of a complex one, or use vjp)"
            )
        grads = pull(hal.ones_like(value), True)
        out = grads[0] if isinstance(argnums, int) else grads
        return ((value, aux) if has_aux else value), out

    return wrapped


def grad(f: Callable, argnums=0, has_aux: bool = False) -> Callable:
    """The gradient of a real scalar function (see value_and_grad); nests to any order."""
    vg = value_and_grad(f, argnums, has_aux)

    def wrapped(*args):
        value, g = vg(*args)
        return (g, value[1]) if has_aux else g

    return wrapped


def elementwise_grad(f: Callable) -> Callable:
    """x -> the vjp of f at x with a cotangent of ones: f'(x) for an elementwise f."""
    def wrapped(x):
        out, pull, _ = _trace(f, (x,), False)
        return pull(hal.ones_like(out), True)[0]

    return wrapped


def jacrev(f: Callable, argnums=0) -> Callable:
    """The Jacobian by reverse mode: one forward pass, one backward pass per output element.

    f returns one Tensor; the Jacobian has shape out.shape + arg.shape (a tuple of them
    when argnums is a tuple).
    """
    def wrapped(*args):
        nums = normalize_argnums("jacrev", argnums, len(args))
        out, fn = vjp(fix_others(f, args, nums), *[args[i] for i in nums])
        if not isinstance(out, Tensor):
            raise HalError("jacrev: the function must return one Tensor")
        rows = [fn(unit(out, i)) for i in range(out.size)]
        jac = []
        for j, i in enumerate(nums):
            x = args[i]
            if rows:
                stacked = hal.stack([r[j] for r in rows], axis=0)
            else:
                stacked = hal.zeros((0, *x.shape), dtype=x.dtype, device=x.device)
            jac.append(hal.reshape(stacked, (*out.shape, *x.shape)))
        return jac[0] if isinstance(argnums, int) else tuple(jac)

    return wrapped


def unit(like: Tensor, i: int) -> Tensor:
    """The i-th unit tensor of like's shape, dtype and device."""
    host = np.zeros(like.size, dtype=like.dtype)
    host[i] = 1
    return hal.asarray(host.reshape(like.shape), device=like.device)
