"""hal.jit: trace a function once per input signature, compile the graph, replay it.

    @hal.jit                                   # or hal.to_static
    def step(v, c):
        return c["E"] * v + c["Q"] * hal.fft.rfft(hal.fft.irfft(v, 256) ** 2)

    step(v, c)                                 # traces, compiles for v's device, runs
    step(v2, c)                                # same shapes and dtypes: replays
    print(step.graph(v, c))                    # the traced graph as text (as a jaxpr)

Arguments may be Tensors and nested tuples, lists and dicts of them. Python numbers,
strings and None among them, and the arguments named in `static_argnums` /
`static_argnames`, are static: part of the cache key, baked into the graph. The cache is
keyed by (input shapes, dtypes, devices, static values), holds `cache_size` entries and
warns (`RetraceWarning`) when a function is traced again and again.

Donation: `hal.jit(f, donate_argnums=(2,))` hands the Tensors of argument 2 to the graph
with each call. An op that can update its operand in place (dynamic_update_slice) then
writes into a donated input's memory instead of a copy, where the graph reads that input
nowhere else; the caller's donated Tensors are spent (any later use raises a HalError
naming the argument: use what the call returned). Memory the donated tensor shares (a
numpy array it was made from on the host, a tensor it is a view of) may be written too.
Under an interpreter (below) nothing is donated.

The function is traced once per key: Python side effects (printing, appending to a
list, reading a global that later changes) happen at trace time only, and random values
drawn while tracing are baked in as constants. Python control flow on a traced value,
`.numpy()`, `float()` or `bool()` of one is a HalError naming the op and source line.

Under an interpreter (autodiff's levels, another trace) the graph runs op by op through
dispatch, so `ag.grad(hal.jit(f))` differentiates it and `hal.jit(ag.grad(f))` traces
the backward pass into the graph: one graph for training and inference.
"""

from __future__ import annotations

import functools
import itertools
import warnings
from collections.abc import Callable

from .. import dispatch
from ..dispatch import interpret
from ..runtime.errors import HalError
from ..runtime.registry import default_device
from ..tensor import Tensor
from . import passes, pipeline
from .executable import Executable
from .graph import Graph
from .trace import Trace


class RetraceWarning(UserWarning):
    """A jitted function was traced again for new shapes, dtypes or static values many times."""


_STATIC = (bool, int, float, complex, str, bytes, type(None))


def jit(fn: Callable | None = None, *, static_argnums=(), static_argnames=(),
        donate_argnums=(), cache_size: int = 64, retrace_warning: int = 8,
        capture: bool = True):
    """`fn` traced into a graph and compiled per input signature (usable as a decorator);
    `donate_argnums` hands those arguments' Tensors to the graph (see Donation above);
    `capture=False` keeps its graphs from being recorded as device graphs (capture.py)."""
    if fn is None:
        return functools.partial(jit, static_argnums=static_argnums,
                                 static_argnames=static_argnames,
                                 donate_argnums=donate_argnums, cache_size=cache_size,
                                 retrace_warning=retrace_warning, capture=capture)
    if donate_argnums != ():
        return Donating(fn, static_argnums, static_argnames, cache_size, retrace_warning,
                        capture, donate_argnums)
    return Jitted(fn, static_argnums, static_argnames, cache_size, retrace_warning, capture)


to_static = jit


class Jitted:
    """A jitted function: call it like the original; `.graph(*args)` shows what it runs."""

    def __init__(self, fn: Callable, static_argnums, static_argnames, cache_size: int,
                 retrace_warning: int, capture: bool = True, donate_argnums=()):
        if not callable(fn):
            raise HalError(f"hal.jit: {fn!r} is not callable")
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.static_argnums = _ints("static_argnums", static_argnums)
        self.donate_argnums = _ints("donate_argnums", donate_argnums)
        both = sorted(self.donate_argnums & self.static_argnums)
        if both:
            raise HalError(f"hal.jit({_name(fn)}): arguments {both} are both static and "
                           "donated; a static argument has no memory to donate")
        self.static_argnames = frozenset(
            (static_argnames,) if isinstance(static_argnames, str) else static_argnames)
        if cache_size < 1 or retrace_warning < 1:
            raise HalError("hal.jit: cache_size and retrace_warning must be at least 1")
        self.cache_size, self.retrace_warning = cache_size, retrace_warning
        self.capture = capture
        self._cache: dict[tuple, _Entry] = {}  # oldest first
        self.traces = 0  # how many times fn was traced

    def __call__(self, *args, **kwargs):
        try:  # the hot path: Tensor arguments of a signature seen before, nothing watching
            if kwargs:
                raise AttributeError
            if len(args) == 1:  # _plain_key, written out for one and two arguments
                a = args[0]
                entry = self._cache[a.shape, a.dtype, a.device]
            elif len(args) == 2:
                a, b = args
                entry = self._cache[a.shape, a.dtype, a.device, b.shape, b.dtype, b.device]
            else:
                entry = self._cache[_plain_key(args)]
            ready = entry.ready
        except (AttributeError, KeyError):
            return self._call(args, kwargs)
        if ready is None or _recorders or _interpreters() is not _ALONE:
            return self._call(args, kwargs)
        try:  # the executable's generated function, called here without its frame
            return entry.rebuild(ready(*args))
        except HalError:
            raise
        except Exception as e:
            raise entry.executable.failure(e) from e

    def _call(self, args: tuple, kwargs: dict):
        """A call off the hot path: arguments checked, traced or compiled where new, run op
        by op under an interpreter, or through the executable's checked way."""
        key, tensors = self._key(args, kwargs)
        entry = self._cache.get(key) or self._trace(key, args, kwargs, tensors)
        return self._run(entry, args, tensors)

    def _run(self, entry: _Entry, args: tuple, tensors: list[Tensor]):
        """The entry's graph on the argument Tensors: op by op under an interpreter, else
        its executable (compiled at the first call)."""
        if _interpreters() is not _ALONE:  # autodiff or a trace watching: op by op
            return entry.rebuild(entry.graph.run(*tensors))
        if entry.executable is None:
            entry.compile(self.capture)
        outputs = entry.executable(*tensors)
        if tensors is args:  # hal's Executable's generated function, once it has one
            entry.ready = getattr(entry.executable, "ready", None)
        return entry.rebuild(outputs)

    def graph(self, *args, **kwargs) -> Graph:
        """The graph fn traces to for these arguments (constants folded, dead code and
        common subexpressions removed; before device-specific lowering and fusion)."""
        key, tensors = self._key(args, kwargs)
        entry = self._cache.get(key) or self._trace(key, args, kwargs, tensors)
        return entry.graph

    def compiled(self, *args, **kwargs) -> Executable:
        """The executable these arguments run (`Backend.compile`'s in a
        `pipeline.BackendExecutable`, else hal's, whose `.graph` is lowered and fused for the
        device); `.counts()` says how its nodes run."""
        key, tensors = self._key(args, kwargs)
        entry = self._cache.get(key) or self._trace(key, args, kwargs, tensors)
        if entry.executable is None:
            entry.compile(self.capture)
        return entry.executable

    def _donated(self, args: tuple) -> dict[int, int]:
        """Position among the graph's inputs -> argument, of the donated arguments' Tensors."""
        found, n = {}, 0
        for i, a in enumerate(args):
            if _is(i, self.static_argnums, len(args)):
                continue
            count = len(_tensors(a))
            if _is(i, self.donate_argnums, len(args)):
                found.update(dict.fromkeys(range(n, n + count), i))
            n += count
        return found

    # -- keys and tracing --------------------------------------------------------------
    def _key(self, args: tuple, kwargs: dict) -> tuple[tuple, list[Tensor]]:
        if not kwargs and not self.static_argnums and all(isinstance(a, Tensor) for a in args):
            return _plain_key(args), args
        tensors: list[Tensor] = []
        parts = []
        for i, a in enumerate(args):
            static = _is(i, self.static_argnums, len(args))
            parts.append(_static_key(self, f"argument {i}", a) if static
                         else _leaf_key(self, i, a, tensors))
        for name in sorted(kwargs):
            a = kwargs[name]
            parts.append((name, _static_key(self, name, a) if name in self.static_argnames
                          else _leaf_key(self, name, a, tensors)))
        return ("general", *parts), tensors

    def _trace(self, key: tuple, args: tuple, kwargs: dict, tensors: list[Tensor]) -> _Entry:
        self.traces += 1
        if self.traces > 1 and (self.traces - 1) % self.retrace_warning == 0:
            warnings.warn(
                f"hal.jit: {_name(self.fn)} was traced {self.traces} times (new input shapes, "
                "dtypes, devices or static values each time); pass the same shapes, mark fewer "
                "arguments static, or call the function without hal.jit",
                RetraceWarning, stacklevel=3)
        recorder = Trace()
        symbolic = iter([recorder.input(t.shape, t.dtype, t.device) for t in tensors])
        args_s = [a if _is(i, self.static_argnums, len(args)) else _rebuild(a, symbolic)
                  for i, a in enumerate(args)]
        kwargs_s = {k: v if k in self.static_argnames else _rebuild(v, symbolic)
                    for k, v in kwargs.items()}
        with interpret(recorder):
            result = self.fn(*args_s, **kwargs_s)
        leaves: list[Tensor] = []
        out_tree = _flatten_out(self.fn, result, leaves)
        device = tensors[0].device if tensors else None
        if device is None:
            device = default_device()
        graph = passes.optimize(recorder.graph(leaves))
        entry = _Entry(graph, out_tree, device, self._donated(args))
        self._cache[key] = entry
        if len(self._cache) > self.cache_size:
            del self._cache[next(iter(self._cache))]
        return entry


class Donating(Jitted):
    """A jitted function that donates the Tensors of its `donate_argnums` with each call."""

    def __call__(self, *args, **kwargs):
        if len(_interpreters()) > 1:  # op by op: nothing is written in place
            return super().__call__(*args, **kwargs)
        key, tensors = self._key(args, kwargs)
        entry = self._cache.get(key) or self._trace(key, args, kwargs, tensors)
        if len(set(map(id, tensors))) < len(tensors):
            for j, i in entry.donated.items():
                if sum(t is tensors[j] for t in tensors) > 1:
                    raise HalError(f"hal.jit({_name(self.fn)}): a tensor of donated argument "
                                   f"{i} is passed more than once; pass a copy of it where it "
                                   "is passed again")
        result = self._run(entry, args, tensors)
        why = {i: f"hal.jit({_name(self.fn)}): this tensor of argument {i} was donated "
                  "(donate_argnums) to a call that may have written its memory; use the "
                  "tensor that call returned" for i in set(entry.donated.values())}
        for j, i in entry.donated.items():
            tensors[j].donate(why[i])
        return result


class _Entry:
    """One traced signature: its graph, output structure, donated inputs (position among
    the graph's inputs -> argument) and (once run) executable."""

    __slots__ = ("device", "donated", "executable", "graph", "ready", "rebuild")

    def __init__(self, graph: Graph, out_tree, device, donated: dict[int, int]):
        self.graph, self.device, self.donated = graph, device, donated
        self.executable: Executable | None = None
        self.ready = None  # the executable's `ready` function, once it has one
        self.rebuild = _rebuilder(out_tree)

    def compile(self, capture: bool) -> None:
        """The graph compiled for its device (the backend's executable, else hal's), the
        donated inputs its own to write."""
        self.executable = pipeline.compile(self.graph, self.device, capture=capture,
                                           donated=frozenset(self.donated))


# -- argument and result structure --------------------------------------------------------------
_interpreters = dispatch.interpreters
_ALONE = dispatch.ALONE  # the stack when nothing observes or traces (the very object)
_recorders = dispatch.recorders  # the open placement() blocks (a list changed in place)


def _plain_key(args: tuple) -> tuple:
    """The cache key of Tensor arguments: shape, dtype and device of each, in one flat
    tuple (`Jitted.__call__` writes it out for one and two arguments)."""
    return tuple([x for a in args for x in (a.shape, a.dtype, a.device)])


def _is(i: int, argnums: frozenset, n: int) -> bool:
    """Whether argument i of n is named in argnums (counted from either end)."""
    return i in argnums or i - n in argnums


def _tensors(value) -> list[Tensor]:
    """The Tensor leaves of an argument, in the order _leaf_key reads them."""
    if isinstance(value, Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _tensors(v)]
    if isinstance(value, dict):
        return [t for k in value for t in _tensors(value[k])]
    return []


def _name(fn) -> str:
    return getattr(fn, "__qualname__", None) or repr(fn)


def _ints(what: str, value) -> frozenset:
    nums = (value,) if isinstance(value, int) else tuple(value)
    if not all(isinstance(i, int) for i in nums):
        raise HalError(f"hal.jit: {what} must be ints, got {value!r}")
    return frozenset(nums)


def _static_key(jitted: Jitted, what: str, value):
    try:
        hash(value)
    except TypeError:
        raise HalError(
            f"hal.jit({_name(jitted.fn)}): static {what} of type {type(value).__name__} is not "
            "hashable; pass a tuple instead of a list, or a Tensor instead of an array"
        ) from None
    return ("static", type(value).__name__, value)


def _leaf_key(jitted: Jitted, argument: int | str, value, tensors: list[Tensor]):
    """The key of one argument (its position or name), its Tensors appended to `tensors`:
    a Tensor inside a tuple or list is keyed in place (a KV cache is dozens of them)."""
    if isinstance(value, Tensor):
        tensors.append(value)
        return (value.shape, value.dtype, value.device)
    if isinstance(value, (tuple, list)):
        parts = [type(value).__name__]
        for v in value:
            if isinstance(v, Tensor):
                tensors.append(v)
                parts.append((v.shape, v.dtype, v.device))
            else:
                parts.append(_leaf_key(jitted, argument, v, tensors))
        return tuple(parts)
    if isinstance(value, dict):
        return ("dict", *[(k, _leaf_key(jitted, argument, value[k], tensors)) for k in value])
    if isinstance(value, _STATIC):
        return ("static", type(value).__name__, value)
    raise HalError(
        f"hal.jit({_name(jitted.fn)}): argument {argument!r} is a {type(value).__name__}; "
        "pass hal Tensors (or tuples, lists and dicts of them) and numbers, or name the "
        "argument in static_argnums/static_argnames (it must be hashable)"
    )


def _rebuild(value, symbolic):
    """value with its Tensor leaves replaced by the next tracers (same walk as _leaf_key)."""
    if isinstance(value, Tensor):
        return next(symbolic)
    if isinstance(value, (tuple, list)):
        return type(value)(_rebuild(v, symbolic) for v in value)
    if isinstance(value, dict):
        return {k: _rebuild(v, symbolic) for k, v in value.items()}
    return value


_LEAF = object()  # marks where an output Tensor goes in the result structure


def _flatten_out(fn, value, leaves: list[Tensor]):
    if isinstance(value, Tensor):
        leaves.append(value)
        return _LEAF
    if isinstance(value, (tuple, list)):
        return (type(value), [_flatten_out(fn, v, leaves) for v in value])
    if isinstance(value, dict):
        return (dict, {k: _flatten_out(fn, v, leaves) for k, v in value.items()})
    if isinstance(value, _STATIC):
        return ("value", value)
    raise HalError(f"hal.jit({_name(fn)}): the function returned a {type(value).__name__}; "
                   "return Tensors, numbers, None, or tuples, lists and dicts of them")


def _rebuilder(tree):
    """The function of the flat output Tensors that returns them in the structure `tree`
    (_flatten_out's): one generated expression, so a call costs one call."""
    scope: dict[str, object] = {}
    leaves = itertools.count()

    def held(value) -> str:
        scope[f"k{len(scope)}"] = value
        return f"k{len(scope) - 1}"

    def expression(t) -> str:
        if t is _LEAF:
            return f"o[{next(leaves)}]"
        kind, body = t
        if kind == "value":
            return held(body)
        if kind is dict:
            keys = held(list(body))
            return "{" + "".join(f"{keys}[{n}]: {expression(v)}, "
                                 for n, v in enumerate(body.values())) + "}"
        items = "".join(expression(v) + ", " for v in body)
        return f"[{items}]" if kind is list else f"({items})" if kind is tuple \
            else f"{held(kind)}(({items}))"

    return eval(f"lambda o: {expression(tree)}", scope)

