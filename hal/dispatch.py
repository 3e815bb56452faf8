"""Dispatch: an op call -> the device's kernel, else the composite's decomposition, else the CPU.

The CPU fallback runs the op's numpy reference on host copies under the policy in
`settings.fallback` (HAL_FALLBACK=error|warn|allow). Every fallback is counted, and a
`placement()` recorder sees where each op ran and how many bytes crossed to the host.
"""

from __future__ import annotations

import contextlib
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

from . import dtypes as dt
from . import ops
from .errors import FallbackRefused, FallbackWarning, HalError, UnsupportedDType, UnsupportedOp
from .settings import FALLBACK_POLICIES, settings
from .tensor import Tensor

_decompositions: dict[str, Callable] = {}
_accepts: dict[str, frozenset] = {s.name: frozenset(s.dtypes) for s in ops.specs()}
_recorders: list[Placement] = []
_observers: list[Callable] = []
_warned: set[tuple] = set()
fallback_counts: Counter = Counter()  # (op, device, dtype) -> CPU fallbacks since start


def decomposition(name: str) -> Callable:
    """Decorator: the default decomposition of an op into other ops (on hal Tensors)."""
    ops.spec(name)

    def register(fn: Callable) -> Callable:
        _decompositions[name] = fn
        return fn

    return register


@dataclass
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
    _recorders.append(record)
    try:
        yield record
    finally:
        _recorders.remove(record)


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


@contextlib.contextmanager
def observe(observer: Callable) -> Iterator[None]:
    """Call `observer(spec, args, params, out, how)` after every op inside the block.

    args are the operands as the op received them (promoted, scalars made tensors); how
    is "kernel", "decomposed" or "fallback". A decomposed composite is reported after
    the ops of its decomposition, which are reported too. Observers are called in the
    order they were added (an outer block's first), so tracers nest. This is the hook
    that tracing frontends (autodiff, graph capture) build on.
    """
    _observers.append(observer)
    try:
        yield
    finally:
        _observers.remove(observer)


def _notify(spec, args, params, out, how) -> None:
    for o in list(_observers):
        o(spec, args, params, out, how)


def _record(op: str, device, dtype, how: str, moved: int = 0) -> None:
    for r in _recorders:
        r.records.append((op, device.name, dtype.name, how))
        if how == "fallback":
            r.fallbacks += 1
            r.bytes_moved += moved


def call(spec: ops.OpSpec, *args, **params) -> Tensor:
    """Run an op on its operands' device (Tensors, Python scalars or None for absent options)."""
    device = None
    for a in args:
        if type(a) is Tensor:
            if device is None:
                device = a.device
            elif a.device is not device:
                raise HalError(
                    f"{spec.name}: operands live on different devices ({device.name} and "
                    f"{a.device.name}); move one with .to(device) first"
                )
    if device is None:
        from .registry import default_device

        device = default_device()
    if spec.promote:
        if not _uniform(spec.promote, args):
            args = _promote(spec, args, device)
    elif any(a is not None and type(a) is not Tensor for a in args):
        args = tuple(
            a if a is None or type(a) is Tensor else Tensor.from_host(np.asarray(a), device)
            for a in args
        )
    key_dtype = args[spec.key].dtype
    if key_dtype not in _accepts[spec.name]:
        ops.check_dtype(spec.name, key_dtype, spec.dtypes)
    spec.meta(*args, **params)
    kernel = device._kernels.get((spec.name, key_dtype))
    if kernel is not None:
        if _recorders:
            _record(spec.name, device, key_dtype, "kernel")
        if len(args) == 1:
            native = kernel(args[0]._data, **params)
        elif len(args) == 2 and args[1] is not None:
            native = kernel(args[0]._data, args[1]._data, **params)
        else:
            native = kernel(*[None if a is None else a._data for a in args], **params)
        out = Tensor._wrap(native, device)
        if _observers:
            _notify(spec, args, params, out, "kernel")
        return out
    return _without_kernel(spec, device, key_dtype, args, params)


def _uniform(promote: tuple[int, ...], args: tuple) -> bool:
    """True when the operands to promote are all Tensors of one dtype (the hot path)."""
    first = None
    for i in range(len(args)) if promote == (-1,) else promote:
        if i >= len(args) or args[i] is None:
            continue
        a = args[i]
        if type(a) is not Tensor:
            return False
        if first is None:
            first = a.dtype
        elif a.dtype is not first and a.dtype != first:
            return False
    return True


def _promote(spec: ops.OpSpec, args: tuple, device) -> tuple:
    idx = range(len(args)) if spec.promote == (-1,) else spec.promote
    chosen = [args[i] for i in idx if i < len(args) and args[i] is not None]
    tensors = [a.dtype for a in chosen if type(a) is Tensor]
    scalars = [a for a in chosen if type(a) is not Tensor]
    try:
        common = dt.result_type(*tensors, *scalars)
    except UnsupportedDType as e:
        raise UnsupportedDType(f"{spec.name}: {e}") from None
    out = list(args)
    for i in idx:
        if i >= len(out) or out[i] is None:
            continue
        a = out[i]
        if type(a) is Tensor:
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


def _without_kernel(spec: ops.OpSpec, device, dtype, args: tuple, params: dict) -> Tensor:
    why = device.capabilities.unsupported.get(spec.name)
    if why is not None:
        raise UnsupportedOp(f"{spec.name}: {device.name} does not support it ({why}); move the "
                            "operands to a device that does, e.g. .to('cpu')")
    for a in args:
        if a is not None:
            device.check_dtype(a.dtype, spec.name)
    decompose = _decompositions.get(spec.name)
    if decompose is not None:
        if _recorders:
            _record(spec.name, device, dtype, "decomposed")
        out = decompose(*args, **params)
        if _observers:
            _notify(spec, args, params, out, "decomposed")
        return out
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
                      FallbackWarning, stacklevel=4)
    host = [None if a is None else a.numpy() for a in args]
    result = spec.evaluate(*host, **params)
    fallback_counts[(spec.name, device.name, dtype.name)] += 1
    moved = result.nbytes + sum(h.nbytes for h in host if h is not None)
    _record(spec.name, device, dtype, "fallback", moved)
    out = Tensor.from_host(result, device)
    if _observers:
        _notify(spec, args, params, out, "fallback")
    return out


_ASTYPE = ops.spec("astype")
