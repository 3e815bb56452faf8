"""Dispatch: `call` prepares an op and hands it to the innermost interpreter of a stack.

Preparing is the same for every interpreter: the operands' device, dtype promotion,
Python scalars made 0-d constants, and the op's shape/dtype rule (its `meta`). The
stack starts with the eager interpreter (the device's kernel, else the composite's
decomposition, else the op's numpy reference on the CPU under `settings.fallback`);
`observe()` pushes an interpreter that reports every op to a callback (autodiff), and
`hal.trace` pushes one that records ops and returns symbolic values. An interpreter may
hand an op on to the one below it (`Interpreter.process`), as JAX's traces do.

The stack is a `contextvars.ContextVar`: each thread (and asyncio task) has its own, so
a trace in one thread never records another's ops. Every CPU fallback is counted, and a
`placement()` recorder sees where each op ran and how many bytes crossed to the host;
code that runs ops without `call` (a compiled graph) tells it with `record`.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

from . import ops
from .ops import shapes
from .runtime import dtypes as dt
from .runtime.errors import (
    FallbackRefused,
    FallbackWarning,
    HalError,
    KernelError,
    ShapeError,
    UnsupportedDType,
    UnsupportedOp,
)
from .runtime.registry import default_device
from .runtime.settings import FALLBACK_POLICIES, settings
from .tensor import Tensor

_decompositions: dict[str, Callable] = {}
_accepts: dict[str, frozenset] = {s.name: frozenset(s.dtypes) for s in ops.specs()}
recorders: list[Placement] = []  # the open placement() blocks (changed in place, never rebound)
_warned: set[tuple] = set()
fallback_counts: Counter = Counter()  # (op, device, dtype) -> CPU fallbacks since start


def decomposition(name: str) -> Callable:
    """Decorator: the default decomposition of an op into other ops (on hal Tensors)."""
    ops.spec(name)

    def register(fn: Callable) -> Callable:
        _decompositions[name] = fn
        return fn

    return register


def decomposition_of(name: str) -> Callable | None:
    """The op's default decomposition (a function of hal Tensors), or None if it has none."""
    return _decompositions.get(name)


# -- interpreters ---------------------------------------------------------------------------
class Interpreter:
    """A level of the dispatch stack. `call` hands each prepared op to the innermost one.

    `process` returns (value, how): how is "kernel", "decomposed" or "fallback" from the
    eager interpreter, or the interpreter's own word (the tracer's is "traced"). The
    default hands the op to the interpreter below. `enter` is told, outermost first,
    when a composite is about to run as its decomposition: the ops that follow until the
    composite is processed belong to it.
    """

    below: Interpreter | None = None

    def process(self, spec: ops.OpSpec, device, args: tuple, params: dict,
                out: tuple) -> tuple[Tensor, str]:
        """Run (or record) one op; out is the (shape, dtype) its meta rule computed."""
        return self.below.process(spec, device, args, params, out)

    def enter(self, spec: ops.OpSpec, args: tuple, params: dict) -> None:
        """A composite starts running as its decomposition (default: nothing to do)."""


class Eager(Interpreter):
    """The bottom of the stack: runs each op now, on its device."""

    def process(self, spec, device, args, params, out):
        """The device's kernel, else the decomposition, else the CPU fallback."""
        if spec.domain is not None:  # operand values outside the op's domain (int ** -1)
            spec.domain(*args, **params)
        key_dtype = args[spec.key].dtype
        kernel = device.kernels.get((spec.name, key_dtype))
        if kernel is None:
            return _without_kernel(spec, device, key_dtype, args, params)
        if out[1] is not key_dtype and out[1] != key_dtype:  # a result the device cannot hold
            device.check_dtype(out[1], spec.name)
        if recorders:
            record(spec.name, device.name, key_dtype.name, "kernel")
        if getattr(kernel, "takes_meta", False):
            params = {**params, "out_shape": out[0], "out_dtype": out[1]}
        try:
            if len(args) == 1:
                native = kernel(args[0].native, **params)
            elif len(args) == 2 and args[1] is not None:
                native = kernel(args[0].native, args[1].native, **params)
            else:
                native = kernel(*[None if a is None else a.native for a in args], **params)
            shape, dtype = native.shape, native.dtype
        except HalError:
            raise
        except Exception as e:
            raise _kernel_raised(spec, device, args, e) from e
        if (shape != out[0] and tuple(shape) != out[0]) or dtype != out[1]:
            raise KernelError(
                f"{_where(spec, device, args)}: the kernel returned {getattr(dtype, 'name', dtype)}"
                f"{tuple(shape)}, the op's rule says {out[1].name}{out[0]}; fix the kernel's "
                "output (it must have the shape and dtype dispatch passes as out_shape/out_dtype)"
            )
        return Tensor.wrap(native, device), "kernel"


class Observe(Interpreter):
    """Hands each op on, then reports it to a callback (the hook autodiff builds on)."""

    def __init__(self, observer: Callable):
        self.observer = observer

    def process(self, spec, device, args, params, out):
        """Run the op below, then call observer(spec, args, params, value, how)."""
        value, how = self.below.process(spec, device, args, params, out)
        self.observer(spec, args, params, value, how)
        return value, how


EAGER = Eager()
ALONE = (EAGER,)  # the stack when nothing observes or traces: always this very tuple
_stack: contextvars.ContextVar[tuple[Interpreter, ...]] = contextvars.ContextVar(
    "hal_interpreters", default=ALONE)


# interpreters(): the dispatch stack of this thread (or task), outermost first: ALONE
# when nothing observes or traces the ops (the ContextVar's own get: no frame per call)
interpreters: Callable[[], tuple[Interpreter, ...]] = _stack.get


@contextlib.contextmanager
def interpret(interpreter: Interpreter) -> Iterator[Interpreter]:
    """Make `interpreter` the innermost level of the dispatch stack inside the block."""
    interpreter.below = _stack.get()[-1]
    _stack.set((*_stack.get(), interpreter))
    try:
        yield interpreter
    finally:  # by identity (interpreters need not be comparable), whatever exits first
        rest = tuple(i for i in _stack.get() if i is not interpreter)
        _stack.set(ALONE if len(rest) == 1 and rest[0] is EAGER else rest)


@contextlib.contextmanager
def observe(observer: Callable) -> Iterator[None]:
    """Call `observer(spec, args, params, out, how)` after every op inside the block.

    args are the operands as the op received them (promoted, scalars made tensors); how
    is "kernel", "decomposed" or "fallback" (or "traced" under a tracer). A decomposed
    composite is reported after the ops of its decomposition, which are reported too.
    Observers are called in the order they were added (an outer block's first), so
    tracers nest. This is the hook that tracing frontends (autodiff) build on.
    """
    with interpret(Observe(observer)):
        yield


# -- placement and fallback policy -----------------------------------------------------------
@dataclass(eq=False)  # a recorder is itself: nested blocks each remove their own
class Placement:
    """Where ops ran while recording: (op, device, dtype, how); how: kernel/decomposed/fallback."""

    records: list[tuple[str, str, str, str]] = field(default_factory=list)
    fallbacks: int = 0
    bytes_moved: int = 0

    def counts(self) -> Counter:
        """Calls per (op, device, how)."""
        return Counter((op, device, how) for op, device, _, how in self.records)

    def to_dict(self) -> dict:
        """A JSON-ready summary: op -> {device:how: calls}, fallbacks and bytes moved."""
        ops_: dict[str, dict[str, int]] = {}
        for (op, device, how), n in self.counts().items():
            ops_.setdefault(op, {})[f"{device}:{how}"] = n
        return {"ops": ops_, "fallbacks": self.fallbacks, "bytes_moved": self.bytes_moved}


@contextlib.contextmanager
def placement() -> Iterator[Placement]:
    """Record where every op runs inside the block."""
    record = Placement()
    recorders.append(record)
    try:
        yield record
    finally:
        recorders.remove(record)


@contextlib.contextmanager
def fallback_policy(policy: str) -> Iterator[None]:
    """Set the CPU-fallback policy (error/warn/allow) inside the block."""
    if policy not in FALLBACK_POLICIES:
        raise HalError(f"fallback policy {policy!r} is not one of {', '.join(FALLBACK_POLICIES)}")
    before, settings.fallback = settings.fallback, policy
    try:
        yield
    finally:
        settings.fallback = before


def recording() -> bool:
    """True inside a `placement()` block: then whatever runs ops without `call` (a compiled
    graph's executable) reports each one with `record`."""
    return bool(recorders)


def record(op: str, device: str, dtype: str, how: str, moved: int = 0) -> None:
    """Tell every open `placement()` that `op` ran on the device named `device` for the
    dtype named `dtype`, and how ("kernel", "compiled", a session's name, ...); a
    "fallback" also counts the bytes `moved` to and from the host."""
    for r in recorders:
        r.records.append((op, device, dtype, how))
        if how == "fallback":
            r.fallbacks += 1
            r.bytes_moved += moved


# -- preparing a call ------------------------------------------------------------------------
_SCALARS = (bool, int, float, complex, np.generic)


# (op, then device, dtype, shape of each operand, then the parameters' (name, value) pairs)
# -> (kernel, result shape, result dtype, name of the key dtype): calls of one or two Tensor
# operands and no parameters, or one Tensor operand and parameters, that ran
# the device's kernel eagerly once, checked, so that the same call again skips operand
# checks, promotion, the meta rule and the result check. Keys hold everything these
# depend on (a device's kernel table is read once per key); the rest of what could change
# their outcome is looked at on every call (an interpreter watching, a placement
# recording). Ops with a domain check read values, so they are never bound.
_bound: dict[tuple, tuple] = {}
_BOUND_MAX = 4096


def call(spec: ops.OpSpec, *args, **params) -> Tensor:
    """Run an op on its operands' device (Tensors, Python scalars, or None for absent options)."""
    if not params and 1 <= len(args) <= 2:  # the calls that may be bound: `unary`, `binary`
        fn = _functions.get((spec.name, len(args)))
        if fn is None:
            fn = _functions[spec.name, len(args)] = (unary, binary)[len(args) - 1](spec)
        return fn(*args)
    if len(args) == 1 and type(args[0]) is Tensor and len(_stack.get()) == 1:
        x = args[0]  # one operand and parameters (an FFT, a reduction): bound with them
        try:
            hit = _bound.get((spec.name, x.device, x.dtype, x.shape, *params.items(),
                              *map(type, params.values())))
        except TypeError:  # an unhashable parameter (a list): never bound
            hit = None
        if hit is not None:
            return _run_bound(hit, spec, x.device, args, x.native)
    return _call(spec, args, params)


_functions: dict[tuple[str, int], Callable] = {}  # (op, operands) -> unary(spec)/binary(spec)


def unary(spec: ops.OpSpec) -> Callable[[object], Tensor]:
    """`call(spec, x)` as a function, with the hot path written out (one Python frame per
    call: what operators and `hal.exp`-style functions are)."""
    name = spec.name

    def fn(x, /):
        if type(x) is Tensor and len(_stack.get()) == 1:
            device = x.device
            hit = _bound.get((name, device, x.dtype, x.shape))
            if hit is not None:  # _run_bound, inlined: a frame is a fifth of the call
                kernel, shape, dtype, key_dtype = hit
                if recorders:
                    record(name, device.name, key_dtype, "kernel")
                try:
                    native = kernel(x.native)
                except HalError:
                    raise
                except Exception as e:
                    raise _kernel_raised(spec, device, (x,), e) from e
                t = _new(Tensor)
                t.native = native
                t.device = device
                t.shape = shape
                t.dtype = dtype
                return t
        return _call(spec, (x,), {})

    return fn


def binary(spec: ops.OpSpec) -> Callable[[object, object], Tensor]:
    """`call(spec, x1, x2)` as a function, with the hot path written out (see `unary`)."""
    name = spec.name

    def fn(x1, x2, /):
        if type(x1) is Tensor and type(x2) is Tensor and len(_stack.get()) == 1:
            device = x1.device
            hit = _bound.get((name, device, x1.dtype, x1.shape, x2.device, x2.dtype, x2.shape))
            if hit is not None:  # as in unary
                kernel, shape, dtype, key_dtype = hit
                if recorders:
                    record(name, device.name, key_dtype, "kernel")
                try:
                    native = kernel(x1.native, x2.native)
                except HalError:
                    raise
                except Exception as e:
                    raise _kernel_raised(spec, device, (x1, x2), e) from e
                t = _new(Tensor)
                t.native = native
                t.device = device
                t.shape = shape
                t.dtype = dtype
                return t
        if len(_stack.get()) == 1:  # a tensor and a number: the number is in the key
            if type(x1) is Tensor and type(x2) in _NUMBERS:
                hit = _bound.get((name, x1.device, x1.dtype, x1.shape, type(x2), x2, 1))
                if hit is not None:
                    return _run_bound(hit, spec, x1.device, (x1, x2), x1.native)
            elif type(x2) is Tensor and type(x1) in _NUMBERS:
                hit = _bound.get((name, x2.device, x2.dtype, x2.shape, type(x1), x1, 0))
                if hit is not None:
                    return _run_bound(hit, spec, x2.device, (x1, x2), x2.native)
        return _call(spec, (x1, x2), {})

    return fn


_NUMBERS = frozenset((int, float))  # exact types: a bool or numpy scalar is not bound


def _keyable(value, top: bool = True) -> bool:
    """Whether a parameter value may sit in a `_bound` key (beside its type): every value
    equal to it of its type calls for the same result. None, a string, an int, a bool (not
    inside a tuple, where its type is not keyed), a float other than 0.0 and NaN (whose
    equal -0.0 and unequal self would mislead), or a tuple of these."""
    if type(value) is tuple:
        return all(_keyable(v, False) for v in value)
    if type(value) is float:
        return value == value and value != 0.0
    return value is None or type(value) in (str, int) or (top and type(value) is bool)


def _run_bound(hit: tuple, spec: ops.OpSpec, device, args: tuple, *natives) -> Tensor:
    """A bound call: the kernel on the natives, wrapped as the first call's result was."""
    kernel, shape, dtype, key_dtype = hit
    if recorders:
        record(spec.name, device.name, key_dtype, "kernel")
    try:
        native = kernel(*natives)
    except HalError:
        raise
    except Exception as e:
        raise _kernel_raised(spec, device, args, e) from e
    t = _new(Tensor)
    t.native, t.device, t.shape, t.dtype = native, device, shape, dtype
    return t


def _kernel_raised(spec: ops.OpSpec, device, args: tuple, e: Exception) -> KernelError:
    return KernelError(f"{_where(spec, device, args)}: the kernel raised "
                       f"{type(e).__name__}: {e}")


_new = object.__new__


def _bind(spec: ops.OpSpec, device, given: tuple, args: tuple, out: tuple,
          params: dict) -> None:
    """Remember a call that just ran the device's kernel eagerly (see `_bound`): Tensor
    operands as given, or a Tensor and an int or float (made the constant `args` holds),
    or one Tensor and parameters that a key tells apart (see `_keyable`)."""
    if spec.domain is not None:
        return
    kernel = device.kernels.get((spec.name, args[spec.key].dtype))
    if kernel is None:
        return
    if getattr(kernel, "takes_meta", False):
        kernel = functools.partial(kernel, out_shape=out[0], out_dtype=out[1])
    if params:
        if len(given) != 1 or type(given[0]) is not Tensor or args is not given \
                or not all(_keyable(v) for v in params.values()):
            return
        kernel = specialized(kernel, [(given[0].shape, given[0].dtype)], params)
        x = given[0]
        key = (spec.name, x.device, x.dtype, x.shape, *params.items(),
               *map(type, params.values()))  # True == 1, but axis=True is no axis
    elif args is given:
        if not all(type(a) is Tensor for a in args):
            return
        key = (spec.name, *[x for a in args for x in (a.device, a.dtype, a.shape)])
    else:  # one operand a number: bound with its constant, unless promotion cast the tensor
        if len(given) != 2:
            return
        i = 0 if type(given[0]) is Tensor else 1
        tensor, number = given[i], given[1 - i]
        if type(tensor) is not Tensor or type(number) not in _NUMBERS or args[i] is not tensor \
                or number != number or (type(number) is float and number == 0.0):
            return  # NaN is never equal to itself, and 0.0 == -0.0: keys could not tell
        kernel = _with_constant(kernel, args[1 - i].native, i)
        key = (spec.name, device, tensor.dtype, tensor.shape, type(number), number, 1 - i)
    if len(_bound) >= _BOUND_MAX:
        _bound.clear()
    _bound[key] = (kernel, out[0], out[1], args[spec.key].dtype.name)


def specialized(kernel: Callable, metas: list, params: dict) -> Callable:
    """kernel with its parameters bound for operands of these (shape, dtype) pairs (None
    for an absent one): the kernel's own `for_shape` function where it offers one."""
    if not params:
        return kernel
    for_shape = getattr(kernel, "for_shape", None)
    if for_shape is not None:
        planned = for_shape(tuple(None if m is None else m[0] for m in metas),
                            tuple(None if m is None else m[1] for m in metas), **params)
        if planned is not None:
            return planned
    return functools.partial(kernel, **params)


def _with_constant(kernel: Callable, constant, tensor_at: int) -> Callable:
    """kernel as a function of the tensor operand alone, the constant in the other place."""
    if tensor_at == 1:
        return functools.partial(kernel, constant)
    return lambda native: kernel(native, constant)


def _call(spec: ops.OpSpec, args: tuple, params: dict) -> Tensor:
    """`call` without a bound entry: check, promote, apply the meta rule, interpret."""
    device = None
    scalars = False
    given = args
    for a in args:
        if isinstance(a, Tensor):
            if device is None:
                device = a.device
            elif a.device is not device:
                raise HalError(
                    f"{spec.name}: operands live on different devices ({device.name} and "
                    f"{a.device.name}); move one with .to(device) first"
                )
        else:
            scalars = True
    if scalars:
        _check_operands(spec, args)
    if len(args) <= spec.key:
        raise ShapeError(f"{spec.name}: needs at least {spec.key + 1} operand(s), got "
                         f"{len(args)}; {_signature(spec)}")
    if device is None:
        device = default_device()
    if spec.promote and len(args) > 1 and (scalars or len(args) > 2 or args[0].dtype
                                           is not args[1].dtype) \
            and not _uniform(spec.promote, args):
        args = _promote(spec, args, device)
    if scalars:
        args = tuple(a if a is None or isinstance(a, Tensor) else
                     _constant(spec, a, dt.default_dtype(a), device) for a in args)
    key_dtype = args[spec.key].dtype
    if key_dtype not in _accepts[spec.name]:
        ops.check_dtype(spec.name, key_dtype, spec.dtypes)
    try:
        out = spec.meta(*args, **params)
    except HalError:
        raise
    except (TypeError, ValueError, AttributeError, IndexError, KeyError) as e:
        why = str(e).split("() ", 1)[-1]  # drop the meta function's own name
        raise HalError(f"{spec.name}: bad arguments ({why}); {_signature(spec)}") from None
    if len(out[0]) > shapes.MAX_RANK:
        shapes.check_rank(spec.name, out[0])
    stack = _stack.get()
    value, how = stack[-1].process(spec, device, args, params, out)
    if how == "kernel" and len(args) <= 2 and len(stack) == 1 and (args is given) is not scalars:
        _bind(spec, device, given, args, out, params)
    return value


def _check_operands(spec: ops.OpSpec, args: tuple) -> None:
    """HalError for an operand that is neither a Tensor, a number, nor an allowed None."""
    for i, a in enumerate(args):
        if a is None:
            if i not in _optional(spec):
                raise HalError(f"{spec.name}: operand {i} is None; pass a tensor or a number")
        elif not isinstance(a, (Tensor, *_SCALARS)):
            raise HalError(
                f"{spec.name}: operand {i} is a {type(a).__name__}; pass a hal Tensor or a "
                "Python number (hal.asarray makes a tensor of other data)"
            )


def _uniform(promote: tuple[int, ...], args: tuple) -> bool:
    """True when the operands to promote are all Tensors of one dtype (the hot path)."""
    first = None
    for i in range(len(args)) if promote == (-1,) else promote:
        if i >= len(args) or args[i] is None:
            continue
        a = args[i]
        if not isinstance(a, Tensor):
            return False
        if first is None:
            first = a.dtype
        elif a.dtype is not first and a.dtype != first:
            return False
    return True


def _promote(spec: ops.OpSpec, args: tuple, device) -> tuple:
    idx = range(len(args)) if spec.promote == (-1,) else spec.promote
    chosen = [args[i] for i in idx if i < len(args) and args[i] is not None]
    tensors = [a.dtype for a in chosen if isinstance(a, Tensor)]
    scalars = [a for a in chosen if not isinstance(a, Tensor)]
    try:
        common = dt.result_type(*tensors, *scalars)
    except UnsupportedDType as e:
        raise UnsupportedDType(f"{spec.name}: {e}") from None
    out = list(args)
    for i in idx:
        if i >= len(out) or out[i] is None:
            continue
        a = out[i]
        if isinstance(a, Tensor):
            if a.dtype != common:
                out[i] = call(_ASTYPE, a, dtype=common)
        else:
            out[i] = _constant(spec, a, common, device)
    return tuple(out)


_constants: dict[tuple, Tensor] = {}  # 0-d tensors of Python scalars; tensors are immutable


def _constant(spec: ops.OpSpec, value, dtype, device) -> Tensor:
    """A 0-d tensor of a Python scalar on the device, cached (uploads cost per call)."""
    exact = value.hex() if isinstance(value, float) else repr(value)  # keeps -0.0 apart from 0.0
    key = (device, dtype, exact)
    tensor = _constants.get(key)
    if tensor is None:
        try:
            if isinstance(value, int) and dt.is_floating(dtype):
                value = float(value)  # ml_dtypes' bfloat16 takes no int beyond int64
            host = np.asarray(value, dtype=dtype)
        except OverflowError:
            raise HalError(
                f"{spec.name}: scalar {value!r} does not fit {dtype.name}; cast the tensor to a "
                "wider dtype first"
            ) from None
        if len(_constants) >= 1024:
            _constants.clear()
        tensor = _constants[key] = Tensor.from_host(host, device)
    return tensor


_optionals: dict[str, frozenset[int]] = {}


def _optional(spec: ops.OpSpec) -> frozenset[int]:
    """Positions of the operands the op may be given as None (its meta rule defaults them)."""
    found = _optionals.get(spec.name)
    if found is None:
        positional = [p for p in inspect.signature(spec.meta).parameters.values()
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        found = _optionals[spec.name] = frozenset(
            i for i, p in enumerate(positional) if p.default is None)
    return found


def _signature(spec: ops.OpSpec) -> str:
    """The op's operands and keyword parameters as its meta rule declares them."""
    return f"it takes {spec.name}{inspect.signature(spec.meta)}"


def _where(spec: ops.OpSpec, device, args: tuple) -> str:
    """'op on device for dtypes shapes': how errors name a call."""
    operands = ", ".join("None" if a is None else f"{a.dtype.name}{tuple(a.shape)}"
                         if isinstance(a, Tensor) else repr(a) for a in args)
    return f"{spec.name} on {device.name} ({device.backend.name} backend) for {operands}"


def _without_kernel(spec: ops.OpSpec, device, dtype, args: tuple, params: dict):
    why = device.capabilities.unsupported.get(spec.name)
    if why is not None:
        raise UnsupportedOp(f"{spec.name}: {device.name} does not support it ({why}); move the "
                            "operands to a device that does, e.g. .to('cpu')")
    for a in args:
        if a is not None:
            device.check_dtype(a.dtype, spec.name)
    decompose = _decompositions.get(spec.name)
    if decompose is not None:
        for interpreter in _stack.get():
            interpreter.enter(spec, args, params)
        if recorders:
            record(spec.name, device.name, dtype.name, "decomposed")
        return decompose(*args, **params), "decomposed"
    policy = settings.fallback
    where = f"{spec.name} on {device.name} for {dtype.name}"
    if policy == "error":
        raise FallbackRefused(
            f"{where}: the backend has no kernel and HAL_FALLBACK=error forbids the CPU "
            "fallback; set HAL_FALLBACK=warn or allow, or use a device that has the op"
        )
    if policy == "warn" and (spec.name, device.name, dtype) not in _warned:
        _warned.add((spec.name, device.name, dtype))
        warnings.warn(f"{where}: no kernel, running on the CPU (HAL_FALLBACK=warn)",
                      FallbackWarning, stacklevel=5)
    host = [None if a is None else a.numpy() for a in args]
    try:
        result = spec.evaluate(*host, **params)
    except HalError:
        raise
    except Exception as e:
        raise KernelError(f"{_where(spec, device, args)}: the CPU fallback (the op's numpy "
                          f"reference) raised {type(e).__name__}: {e}") from e
    fallback_counts[(spec.name, device.name, dtype.name)] += 1
    moved = result.nbytes + sum(h.nbytes for h in host if h is not None)
    record(spec.name, device.name, dtype.name, "fallback", moved)
    return Tensor.from_host(result, device), "fallback"


_ASTYPE = ops.spec("astype")
