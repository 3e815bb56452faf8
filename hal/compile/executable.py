"""Executables: a graph bound once to a device, replayed without per-op dispatch.

`Executable(graph, device)` binds every node to what runs it: a fused group to the
backend's compiled function (`Backend.compile_fused`), else to its body run node by
node; any other node to the device's kernel with its parameters bound, or to the CPU
fallback (the op's numpy reference, counted and refused as eager does). It then writes
the whole graph as one Python function (one line per node, as torch.fx does) so a call
costs a function call per node and nothing else: no operand checks, promotion, shape
rules or result wrapping. The first call runs node by node and checks every result's
shape and dtype; later calls run the generated function.

Buffers: a compiled group or kernel that writes into a given output (`takes_out`) gets a buffer
preallocated once and shared by liveness with other groups whose values are dead by
then (the result of a movement op, a cast or a complex part may be a view of its
operand, so it keeps the operand's buffer alive); values the graph returns are written
into fresh buffers each call.

Donated inputs (hal.jit's donate_argnums): a node whose op may update an operand in place
(`OpSpec.inplace`) and whose kernel takes `out=` gets that operand itself as `out` when it
is a donated input that no other node reads and the graph does not return.

Capture: an executable made with `capture=True` (hal.jit's, unless HAL_CAPTURE=0) offers
itself to its backend after `capture.WARMUP` calls; once recorded, a call is one replay of
the device graph (`capture.py` has the rules).
"""

from __future__ import annotations

import warnings
from collections import Counter

from .. import dispatch, ops
from ..runtime.errors import FallbackRefused, FallbackWarning, HalError, KernelError, UnsupportedOp
from ..runtime.settings import settings
from ..tensor import Tensor
from .capture import WARMUP, Capture, CaptureRefused, capture
from .graph import FUSED, Graph, Node
from .passes import compiled_group


def label(node: Node) -> str:
    """How placement names a node: its op, or `fused(op,op,...)` for a fused group."""
    if node.op != FUSED:
        return node.op
    return f"fused({','.join(n.op for n in node.params['body'].nodes)})"


class Executable:
    """A graph compiled for one device: call it with input Tensors, get output Tensors."""

    def __init__(self, graph: Graph, device, *, capture: bool = False,
                 donated: frozenset[int] = frozenset()):
        self.graph, self.device = graph, device
        self.capture_refused: str | None = None  # why the backend did not record the graph
        self._capture: Capture | None = None
        self._calls_to_capture = WARMUP if capture else -1
        self.how: list[str] = []  # per node: compiled / unfused / kernel / fallback
        self._steps = [self._bind(node) for node in graph.nodes]
        self._labels = [(label(n), n.dtype.name) for n in graph.nodes]
        takes_out = [getattr(s, "takes_out", False) for s in self._steps]
        self.in_place = _in_place(graph, donated, takes_out)  # node -> the input it writes
        self._buffers = _assign_buffers(
            graph, [t and k not in self.in_place for k, t in enumerate(takes_out)], device)
        self._constants = [c.native for c in graph.constants]
        self._code, self._tensors_code = self._generate()
        self._checked = False
        # run_tensors (inputs -> output Tensors) once a call needs nothing more: checked,
        # nothing to capture or replay; callers still look for open placement() blocks
        self.ready = None
        self._all_nodes = all(r[0] == "node" for r in graph.outputs)

    # -- binding -----------------------------------------------------------------------
    def _bind(self, node: Node):
        device, graph = self.device, self.graph
        if node.op == FUSED:
            body = node.params["body"]
            fn = compiled_group(body, device)
            if fn is not None:
                self.how.append("compiled")
                return fn
            inner = Executable(body, device)
            self.how.append("unfused")
            return lambda *natives: inner._call_natives(natives)[0]
        spec = ops.spec(node.op)
        key_dtype = graph.meta(node.inputs[spec.key])[1]
        kernel = device.kernel(node.op, key_dtype)
        if kernel is None:
            return self._fallback(node, spec, key_dtype)
        params = dict(node.params)
        if getattr(kernel, "takes_meta", False):
            params.update(out_shape=node.shape, out_dtype=node.dtype)
        bound = dispatch.specialized(
            kernel, [None if r is None else graph.meta(r) for r in node.inputs], params)
        self.how.append("kernel")
        if spec.domain is None:
            if getattr(kernel, "takes_out", False):
                bound.takes_out = True  # a kernel that writes into `out=` gets a buffer
            return bound

        def checked(*natives):
            spec.domain(*[None if a is None else Tensor.wrap(a, device) for a in natives],
                        **node.params)
            return bound(*natives)

        return checked

    def _fallback(self, node: Node, spec: ops.OpSpec, dtype):
        device = self.device
        why = device.capabilities.unsupported.get(node.op)
        where = f"{node.op} on {device.name} for {dtype.name}"
        if why is not None:
            raise UnsupportedOp(f"{where}: {device.name} does not support it ({why}); run the "
                                "function on a device that does")
        if settings.fallback == "error":
            raise FallbackRefused(
                f"{where}: the backend has no kernel and HAL_FALLBACK=error forbids the CPU "
                "fallback; set HAL_FALLBACK=warn or allow, or use a device that has the op")
        if settings.fallback == "warn":
            warnings.warn(f"{where}: no kernel, this node of the graph runs on the CPU "
                          "(HAL_FALLBACK=warn)", FallbackWarning, stacklevel=4)
        self.how.append("fallback")
        count_key = (node.op, device.name, dtype.name)

        def on_host(*natives):
            host = [None if a is None else device.download(a) for a in natives]
            dispatch.fallback_counts[count_key] += 1
            return device.upload(spec.evaluate(*host, **node.params))

        return on_host

    # -- code generation ---------------------------------------------------------------
    def _generate(self):
        """The graph as two Python functions with one line per node: `run` of the input
        natives returning output natives, and `run_tensors` of the input Tensors returning
        output Tensors (made here, from the graph's shapes and dtypes, which the first,
        checked call confirmed)."""
        graph = self.graph
        inputs = [f"i{i}" for i in range(len(graph.inputs))]
        names = {("input", i): name for i, name in enumerate(inputs)}
        names.update({("const", i): f"c[{i}]" for i in range(len(graph.constants))})
        last = _last_uses(graph)
        scope = {"c": self._constants, "b": self._buffers.fixed, "d": self.device, "T": Tensor,
                 "new": object.__new__, "C": graph.constants}
        for k, node in enumerate(graph.nodes):  # each a name of its own: one lookup per use
            scope.update({f"s{k}": self._steps[k], f"e{k}": self._buffers.fresh.get(k),
                          f"shape{k}": node.shape, f"dtype{k}": node.dtype})
        outputs = set(graph.outputs)
        body = []
        for k, node in enumerate(graph.nodes):
            args = [("None" if r is None else names[r]) for r in node.inputs]
            slot = self._buffers.slot[k]
            if k in self.in_place:
                args.append(f"out=i{self.in_place[k]}")
            elif slot is not None:
                args.append(f"out=b[{slot}]" if slot >= 0 else f"out=e{k}()")
            names[("node", k)] = f"v{k}"
            line = f"    v{k} = s{k}({', '.join(args)})"
            dead = [f"v{j}" for j in last.get(k, ()) if ("node", j) not in outputs]
            body.append(line + (f"; del {', '.join(dead)}" if dead else ""))
        natives = [f"def run({', '.join(inputs)}):", *body,
                   f"    return ({''.join(names[r] + ', ' for r in graph.outputs)})"]
        # run_tensors: the same body lines, a line lower (_failed_step reads them)
        unwrap = "; ".join(f"{i} = t{i}.native" for i in inputs) or "pass"
        wrapped, made = [], []
        for j, r in enumerate(graph.outputs):
            if r[0] == "node":
                made.append(f"o{j} = new(T); o{j}.native = v{r[1]}; o{j}.device = d; "
                            f"o{j}.shape = shape{r[1]}; o{j}.dtype = dtype{r[1]}")
                wrapped.append(f"o{j}")
            else:
                wrapped.append(f"t{names[r]}" if r[0] == "input" else f"C[{r[1]}]")
        tensors = [f"def run_tensors({', '.join('t' + i for i in inputs)}):", f"    {unwrap}",
                   *body, *(f"    {line}" for line in made),
                   f"    return [{', '.join(wrapped)}]"]
        for lines in (natives, tensors):
            exec(compile("\n".join(lines), _FILENAME, "exec"), scope)
        self.source = "\n".join(natives)
        return scope["run"], scope["run_tensors"]

    # -- running -----------------------------------------------------------------------
    def __call__(self, *inputs: Tensor) -> list[Tensor]:
        """Output Tensors for input Tensors (of the graph's input shapes and dtypes)."""
        ready = self.ready
        if ready is not None and not _recorders:
            try:
                return ready(*inputs)
            except HalError:
                raise
            except Exception as e:
                raise self.failure(e) from e
        return self._call(inputs)

    def failure(self, e: Exception) -> KernelError:
        """The KernelError for an exception a generated function raised (naming its node)."""
        k = _failed_step(e)
        return self._error(e, k if k is not None and k < len(self.graph.nodes) else None)

    def _call(self, inputs: tuple) -> list[Tensor]:
        """A call that checks its results, offers the graph for capture, replays a capture
        or records placement; the generated run_tensors becomes `ready` once none is due."""
        natives = [t.native for t in inputs]
        replayed = self._capture is not None
        if replayed:
            natives = self._replay(natives)
            replayed = self._capture is not None  # unless the backend refused it just now
        else:
            natives = self._call_natives(natives)
            self._calls_to_capture -= 1
            if self._calls_to_capture == 0:
                self._offer([t.native for t in inputs])
        if dispatch.recording():
            self._record(replayed)
        if self._checked and self._capture is None and self._calls_to_capture < 0:
            self.ready = self._tensors_code
        wrap, device = Tensor.wrap, self.device
        if self._all_nodes:
            return [wrap(native, device) for native in natives]
        return [inputs[r[1]] if r[0] == "input" else self.graph.constants[r[1]]
                if r[0] == "const" else wrap(native, device)
                for r, native in zip(self.graph.outputs, natives, strict=True)]

    def _call_natives(self, natives) -> tuple:
        if not self._checked:
            result = self._run_checked(natives)
            self._checked = True
            return result
        try:
            return self._code(*natives)
        except HalError:
            raise
        except Exception as e:
            raise self._error(e, _failed_step(e)) from e

    def _offer(self, natives: list) -> None:
        """Offer a call to the backend's capture hook: a Capture, or the reason kept."""
        offered = capture(self.device, self._run_captured, natives)
        if isinstance(offered, str):
            self.capture_refused = offered
        else:
            self._capture = offered

    def _run_captured(self, natives) -> tuple:
        """One call of the generated function, refused where a node runs on the CPU."""
        if "fallback" in self.how:
            k = self.how.index("fallback")
            raise CaptureRefused(f"{self._where(k)} runs on the CPU (no kernel): its host "
                                 "round trip cannot be recorded on the device")
        return self._code(*natives)

    def _replay(self, natives: list) -> tuple:
        try:
            return self._capture(natives)
        except CaptureRefused as e:  # the backend's check at its first replay: run uncaptured
            self._capture, self.capture_refused = None, str(e)
            return self._call_natives(natives)
        except HalError:
            raise
        except Exception as e:
            raise KernelError(
                f"replaying the captured graph of {len(self.graph.nodes)} nodes on "
                f"{self.device.name} ({self.device.backend.name} backend) raised "
                f"{type(e).__name__}: {e}; set HAL_CAPTURE=0 to run it without capture"
            ) from e

    def _run_checked(self, natives: tuple) -> tuple:
        """One call node by node, each result's shape and dtype checked against the graph."""
        values: list = []
        fresh = self._buffers.fresh

        def get(r):
            if r is None:
                return None
            return natives[r[1]] if r[0] == "input" else self._constants[r[1]] \
                if r[0] == "const" else values[r[1]]

        for k, (node, step) in enumerate(zip(self.graph.nodes, self._steps, strict=True)):
            args = [get(r) for r in node.inputs]
            slot = self._buffers.slot[k]
            if k in self.in_place:
                kwargs = {"out": natives[self.in_place[k]]}
            else:
                kwargs = {} if slot is None else {
                    "out": self._buffers.fixed[slot] if slot >= 0 else fresh[k]()}
            try:
                value = step(*args, **kwargs)
            except HalError:
                raise
            except Exception as e:
                raise self._error(e, k) from e
            shape, dtype = tuple(value.shape), value.dtype
            if shape != node.shape or dtype != node.dtype:
                raise KernelError(
                    f"{self._where(k)}: the {self.how[k]} step returned "
                    f"{getattr(dtype, 'name', dtype)}{shape}, the graph says "
                    f"{node.dtype.name}{node.shape}; fix the backend's kernel or compile_fused")
            values.append(value)
        return tuple(get(r) for r in self.graph.outputs)

    def _where(self, k: int) -> str:
        node = self.graph.nodes[k]
        at = f" (traced at {node.where})" if node.where else ""
        return (f"node %{k} {label(node)} -> {node.dtype.name}{node.shape}{at} on "
                f"{self.device.name} ({self.device.backend.name} backend)")

    def _error(self, e: Exception, k: int | None) -> KernelError:
        where = self._where(k) if k is not None else f"a graph on {self.device.name}"
        return KernelError(f"{where}: raised {type(e).__name__}: {e}")

    def _record(self, replayed: bool) -> None:
        suffix = "+captured" if replayed else ""
        for (name, dtype), how in zip(self._labels, self.how, strict=True):
            dispatch.record(name, self.device.name, dtype, how + suffix)

    def counts(self) -> Counter:
        """Nodes per way of running: compiled (fused, by the backend), unfused (a group run
        node by node), kernel, fallback; and, once capture was offered, every node again
        as `captured` (replayed as one device graph) or `capture_refused` (the reason in
        `capture_refused`)."""
        counts = Counter(self.how)
        if self._capture is not None:
            counts["captured"] = len(self.how)
        elif self.capture_refused is not None:
            counts["capture_refused"] = len(self.how)
        return counts


_FILENAME = "<hal graph>"
_recorders = dispatch.recorders  # the open placement() blocks (a list changed in place)


def _failed_step(e: Exception) -> int | None:
    """The node whose line of the generated function raised (from the traceback)."""
    tb = e.__traceback__
    line = None
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename == _FILENAME:  # node k is line k + 2 of run, k + 3 of run_tensors
            line = tb.tb_lineno - (3 if code.co_name == "run_tensors" else 2)
        tb = tb.tb_next
    return None if line is None or line < 0 else line


def _last_uses(graph: Graph) -> dict[int, list[int]]:
    """node k -> the node values whose last reader is k (they can be dropped after it)."""
    last: dict[int, int] = {}
    for k, node in enumerate(graph.nodes):
        for r in node.inputs:
            if r is not None and r[0] == "node":
                last[r[1]] = k
    out: dict[int, list[int]] = {}
    for j, k in last.items():
        out.setdefault(k, []).append(j)
    return out


def _in_place(graph: Graph, donated: frozenset[int], takes_out: list[bool]) -> dict[int, int]:
    """node -> donated input it may write its result into: its op's `inplace` operand, read
    by no other node, not an output, of the result's shape and dtype."""
    readers = Counter(r for node in graph.nodes for r in node.inputs if r is not None)
    found = {}
    for k, node in enumerate(graph.nodes):
        operand = None if node.op == FUSED else ops.spec(node.op).inplace
        if operand is None or not takes_out[k]:
            continue
        ref = node.inputs[operand]
        if (ref[0] == "input" and ref[1] in donated and readers[ref] == 1
                and ref not in graph.outputs
                and graph.inputs[ref[1]] == (node.shape, node.dtype)):
            found[k] = ref[1]
    return found


_MAY_ALIAS = frozenset(s.name for s in ops.specs() if s.family in ("movement", "cast", "complex"))


class _Buffers:
    """Output buffers of the steps that write into one: slot[k] is a fixed buffer index,
    -1 for a fresh buffer each call (values that may leave the graph), None for none."""

    def __init__(self):
        self.slot: list[int | None] = []
        self.fixed: list = []
        self.fresh: dict[int, object] = {}


def _assign_buffers(graph: Graph, takes_out: list[bool], device) -> _Buffers:
    """Preallocated buffers shared by liveness (an interval colouring by shape and dtype)."""
    plan = _Buffers()
    n = len(graph.nodes)
    # the buffers each value may live in: its own, or its operands' where a kernel may
    # return a view or the operand itself (movement ops, casts, complex parts)
    alias: list[set[int]] = []
    for k, node in enumerate(graph.nodes):
        if takes_out[k]:
            alias.append({k})
        elif node.op not in _MAY_ALIAS:
            alias.append(set())
        else:
            alias.append(set().union(*[alias[r[1]] for r in node.inputs
                                       if r is not None and r[0] == "node"]))
    end = dict.fromkeys(range(n), -1)
    last = {j: k for k, js in _last_uses(graph).items() for j in js}
    escaping = set()
    for j in range(n):
        for b in alias[j]:
            end[b] = max(end[b], last.get(j, j))
    for r in graph.outputs:
        if r[0] == "node":
            escaping |= alias[r[1]]
    free: dict[tuple, list[int]] = {}
    releases: dict[int, list[tuple[tuple, int]]] = {}
    for k, node in enumerate(graph.nodes):
        for key, slot in releases.pop(k - 1, ()):  # buffers whose values died before node k
            free.setdefault(key, []).append(slot)
        if not takes_out[k]:
            plan.slot.append(None)
            continue
        key = (node.shape, node.dtype)
        if k in escaping:
            plan.slot.append(-1)
            plan.fresh[k] = device.empty_factory(*key)
            continue
        if free.get(key):
            slot = free[key].pop()
        else:
            plan.fixed.append(key)
            slot = len(plan.fixed) - 1
        plan.slot.append(slot)
        releases.setdefault(end[k], []).append((key, slot))
    plan.fixed = [device.empty(shape, dtype) for shape, dtype in plan.fixed]
    return plan
