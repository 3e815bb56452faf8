"""Fused groups on the CPU: each group becomes one compiled loop (numba), or numpy's own ufunc.

An elementwise group becomes ONE numpy ufunc built by `numba.vectorize` from source
generated out of the body (each node's expression from the op set's Python table,
hal/ops/expressions/python.py), with the body's input dtypes as its only signature. numpy then
does what a hand-written loop would have to: broadcasting (0-d operands, size-1 axes),
strides and `out=`. The function handed back is the ufunc itself (its `.ufunc`: numba's
DUFunc wrapper costs ~1.5 us more per call), so a call costs a numpy ufunc call. Against
node-by-node numpy with preallocated outputs (2-core EPYC, shared, medians): a 6-op
float64 chain at 1e3 elements 9-13 -> 1.5-1.9 us, at 1e6 5.2-6.2 -> 1.2-2.1 ms; a 5-op
complex128 ETDRK4-style update at 129 elements 4.9-8.9 -> 1.8-2.5 us. numba's exp, sin...
are scalar libm calls, as numpy's float64 ones are without AVX-512: such chains gain less.

The generated source depends on ops, dtypes and constants, not on shapes: it is cached
in-process and on disk by a hash of itself, so one compile serves every shape of a group.
On disk it is `settings.cache_dir / "cpu-numba" / "<hash>.py"`, imported as a module so
that numba's `cache=True` keeps the compiled kernel next to it. Costs per process: numba's
import and setup ~0.75 s once, then per group ~0.2-0.4 s cold, ~0.1 s when the kernel
comes from the disk cache (numba rebuilds the ufunc's loop wrapper, which it does not
cache). numba is imported only when a group of two or more nodes is compiled.

A reduce group is its prologue ufunc writing a temporary, then numpy's `ufunc.reduce`:
the pairwise summation of the op's reference, no per-shape loop nest to generate, and
within ~7% of one numba loop (sum(exp(a*b)) over 1e6: 10.0 against 9.3 ms). Its epilogue
(the nodes after the reduction) is a second ufunc over the reduction's result (reduced
into `out=` itself when the dtypes agree) and the inputs the epilogue reads, writing
`out=`. A group of one elementwise node calls numpy's ufunc for the op: nothing to
compile.

Two composites the cpu backend has kernels for are also numba gufuncs here (`composite`:
rope, and rms_norm after numpy's reduction), built and cached the same way: one call
each where numpy makes five to nine, which is most of their cost on the vectors of a
decode step at batch 1.

Semantics are the ops' references: NaN-propagating maximum/minimum, floor division and
remainder as numpy computes them (integer division by zero gives 0, float signs as
`npy_divmod`), complex division by numpy's algorithm, `complex` as `re + 1j * im`, integer
results wrapped to their dtype after every node, erf in float64, casts as numpy's. numba's
vectorised float compares signal on NaN, so a NaN reaching a comparison can raise numpy's
"invalid value" RuntimeWarning where numpy's own loops are silent; values are unaffected.
Declined (None): float16 and bfloat16 anywhere, an integer power whose exponent is not a
constant >= 0 (numpy refuses negative ones, which only the node-by-node path reports),
options (None refs), a second reduction, an epilogue reading the prologue, and numba's
absence.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import sys
import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np

import hal
from hal import dtypes as dt
from hal.compile.graph import REDUCTIONS, Graph, Node
from hal.ops.expressions import python

from . import cpu_erf

_compiled: dict[str, Callable | None] = {}  # body.key() -> function, None when declined
_ufuncs: dict[str, np.ufunc | None] = {}  # hash of the generated source -> its ufunc

_MAX_OPERANDS = 32  # numpy ufuncs take at most 64 arguments; groups this wide are rare


def compile_body(body: Graph) -> Callable | None:
    """The function computing one fused group into `out=` (required: it has takes_out), or
    None to decline the group."""
    key = body.key()
    if key not in _compiled:
        _compiled[key] = _compile(body)
    return _compiled[key]


def _compile(body: Graph) -> Callable | None:
    if not _supported(body):
        return None
    r = _reduction_index(body)
    if r is None:
        return _elementwise(body, body.outputs[0], body.nodes[-1])
    reduced = _reducing(body, body.nodes[r])
    if reduced is None or r == len(body.nodes) - 1:
        return reduced
    return _with_epilogue(body, r, reduced)


def _reduction_index(body: Graph) -> int | None:
    """The index of the body's (first) reduction node, or None."""
    return next((k for k, n in enumerate(body.nodes) if n.op in REDUCTIONS), None)


def _supported(body: Graph) -> bool:
    """True when every node, dtype and operand of the group can be compiled here: at most
    one reduction, and an epilogue after it that reads no node before it."""
    if not body.nodes or not 0 < len(body.inputs) <= _MAX_OPERANDS:
        return False
    if list(body.outputs) != [("node", len(body.nodes) - 1)]:
        return False
    typed = [d for _, d in body.inputs] + [n.dtype for n in body.nodes]
    if any(d in (dt.float16, dt.bfloat16) for d in typed + [c.dtype for c in body.constants]):
        return False
    r = _reduction_index(body)
    elementwise = [n for k, n in enumerate(body.nodes) if k != r]
    if r is not None and any(ref is not None and ref[0] == "node" and ref[1] < r
                             for n in body.nodes[r + 1:] for ref in n.inputs):
        return False  # the epilogue sees the reduction's result, not the prologue's values
    for node in elementwise:
        if any(ref is None for ref in node.inputs) or \
                not python.has(node.op, body.meta(node.inputs[-1])[1]):
            return False
        if node.op == "power" and dt.is_integer(node.dtype) and not _safe_exponent(body, node):
            return False  # numpy refuses negative integer exponents: node by node says so
    return True


def _safe_exponent(body: Graph, node: Node) -> bool:
    """An integer power's exponent is unsigned or a constant >= 0."""
    kind, i = node.inputs[1]
    return node.dtype.kind == "u" or (kind == "const" and body.constant_value(i) >= 0)


# -- elementwise groups --------------------------------------------------------------------
def _elementwise(body: Graph, ref, node: Node) -> Callable | None:
    """The function writing the value `ref` names (a node of the body) into `out`."""
    nodes = body.nodes[: ref[1] + 1]
    ufunc = _numpy_ufunc(node) if len(nodes) == 1 else None
    refs = node.inputs
    if ufunc is None:
        ufunc = _numba_ufunc(body, nodes)
        refs = tuple(("input", i) for i in range(len(body.inputs)))
    if ufunc is None:
        return None
    if refs == tuple(("input", i) for i in range(len(body.inputs))):
        fused = functools.partial(ufunc)  # the ufunc itself, with room for takes_out
    else:  # a lambda with the constants in place: a comprehension per call costs ~2 us
        names = [f"a{i}" for i in range(len(body.inputs))]
        call = ", ".join(f"a{i}" if k == "input" else f"c{i}" for k, i in refs)
        scope = {"ufunc": ufunc, **{f"c{i}": body.constant_value(i)
                                    for k, i in refs if k == "const"}}
        fused = eval(f"lambda {', '.join([*names, '*', 'out'])}: ufunc({call}, out=out)",
                     scope)
    fused.takes_out = True
    return fused


def _numpy_ufunc(node: Node) -> Callable | None:
    """numpy's ufunc (scipy's erf in float64, `cpu_erf` in float32) computing the node's op
    as its reference does, if any."""
    if node.op == "erf" and node.dtype == dt.float32:
        return cpu_erf.erf
    if node.op == "erf":
        from scipy.special import erf

        return erf if node.dtype == dt.float64 else None
    return _NUMPY_UFUNCS.get(node.op)


_NUMPY_UFUNCS = {
    "negative": np.negative, "abs": np.absolute, "exp": np.exp, "log": np.log,
    "sqrt": np.sqrt, "sin": np.sin, "cos": np.cos, "tanh": np.tanh, "conj": np.conjugate,
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "power": np.power, "maximum": np.maximum, "minimum": np.minimum, "equal": np.equal,
    "less": np.less, "greater": np.greater, "floor_divide": np.floor_divide,
    "remainder": np.remainder,
}


# -- reduce groups -------------------------------------------------------------------------
def _reducing(body: Graph, reduction: Node) -> Callable | None:
    """Prologue into a temporary, then numpy's reduction of it into `out`."""
    kind, i = reduction.inputs[0]
    if kind == "const":
        return None
    reduce = {"sum": np.add, "max": np.maximum, "min": np.minimum}[reduction.op].reduce
    options = {"axis": reduction.params.get("axis"),
               "keepdims": reduction.params.get("keepdims", False)}
    if reduction.op == "sum" and reduction.dtype == dt.int64:
        options["dtype"] = dt.int64  # integers and bool sum in int64
    if kind == "input":
        def fused(*arrays, out):
            return reduce(arrays[i], out=out, **options)
    else:
        values = body.nodes[i]
        prologue = _elementwise(body, ("node", i), values)
        if prologue is None:
            return None

        def fused(*arrays, out):
            temporary = prologue(*arrays, out=np.empty(values.shape, values.dtype))
            return reduce(temporary, out=out, **options)

    fused.takes_out = True
    return fused


def _with_epilogue(body: Graph, r: int, reduced: Callable) -> Callable | None:
    """The reduction into `out` (a temporary where its shape or dtype differs), then the
    epilogue's ufunc of it into `out`, in place (no input of the group is `out`)."""
    reduction, last = body.nodes[r], body.nodes[-1]
    reads = sorted({i for n in body.nodes[r + 1:] for kind, i in n.inputs if kind == "input"})
    place = {("node", r): ("input", 0)}
    place.update({("input", i): ("input", 1 + k) for k, i in enumerate(reads)})
    place.update({("node", k): ("node", k - r - 1) for k in range(r + 1, len(body.nodes))})
    nodes = [replace(n, inputs=tuple(place.get(ref, ref) for ref in n.inputs))
             for n in body.nodes[r + 1:]]
    tail = Graph([(reduction.shape, reduction.dtype), *(body.inputs[i] for i in reads)],
                 nodes, body.constants, [("node", len(nodes) - 1)])
    epilogue = _elementwise(tail, tail.outputs[0], nodes[-1])
    if epilogue is None:
        return None

    in_place = (reduction.shape, reduction.dtype) == (last.shape, last.dtype)

    def fused(*arrays, out):
        value = reduced(*arrays, out=out if in_place else np.empty(reduction.shape,
                                                                   reduction.dtype))
        return epilogue(value, *[arrays[i] for i in reads], out=out)

    fused.takes_out = True
    return fused


# -- numba code generation -----------------------------------------------------------------
def _numba_ufunc(body: Graph, nodes: list[Node]) -> np.ufunc | None:
    """The ufunc computing the last of `nodes` from the body's inputs (None: declined)."""
    return _ufunc_of(_source(body, nodes))


def _ufunc_of(source: str) -> np.ufunc | None:
    """The ufunc `kernel` of a module's source, compiled once (None: no numba)."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:24]
    if digest not in _ufuncs:
        _ufuncs[digest] = _load(source, digest)
    return _ufuncs[digest]


def composite(name: str) -> np.ufunc | None:
    """The numba gufunc of composite `name` in COMPOSITES (float32 and float64), None
    without numba: the reference's arithmetic (correctly rounded +, *, /, sqrt; no
    contraction) in one call where numpy makes five to nine (~1-2 against 6-9 us at a
    width of 32-256)."""
    return _ufunc_of(f'''"""hal's {name} as a numpy gufunc (generated; do not edit)."""

import numba
import numpy as np
{COMPOSITES[name]}''')


COMPOSITES = {
    # rope, half-split pairs: x (..., n), cos and sin (..., n / 2) -> (..., n)
    "rope": '''

@numba.guvectorize(["void(float32[:], float32[:], float32[:], float32[:])",
                    "void(float64[:], float64[:], float64[:], float64[:])"],
                   "(n),(h),(h)->(n)", cache=True)
def kernel(x, cos, sin, out):
    h = cos.shape[0]
    for i in range(h):
        a, b = x[i], x[i + h]
        out[i] = a * cos[i] - b * sin[i]
        out[i + h] = b * cos[i] + a * sin[i]
''',
    # rms_norm after its reduction: x (..., n), the sum of x * x (...), eps and weight (n)
    "rms_norm": '''

@numba.guvectorize(["void(float32[:], float32, float32, float32[:], float32[:])",
                    "void(float64[:], float64, float64, float64[:], float64[:])"],
                   "(n),(),(),(n)->(n)", cache=True)
def kernel(x, total, eps, weight, out):
    scale = np.sqrt(total / x.dtype.type(x.shape[0]) + eps)
    for i in range(x.shape[0]):
        out[i] = x[i] / scale * weight[i]
''',
}


def _source(body: Graph, nodes: list[Node]) -> str:
    """Python source of a module defining `kernel`, a numba ufunc of the group."""
    helpers: dict[str, str] = {}
    lines = []
    for i, node in enumerate(nodes):
        operands = [_name(r) for r in node.inputs]
        operand_dtype = body.meta(node.inputs[-1])[1]  # where: its x; else all equal
        text, needed = python.render(node.op, operands, operand_dtype, node.dtype)
        helpers.update(needed)
        lines.append(f"    v{i} = {_cast(node.dtype)}({text})")
    lines.append(f"    return v{len(nodes) - 1}")
    args = ", ".join(f"a{i}" for i in range(len(body.inputs)))
    signature = f"{_numba_type(nodes[-1].dtype)}(" + ", ".join(
        _numba_type(d) for _, d in body.inputs) + ")"
    constants = [_constant_line(i, body.constant_value(i)) for i in range(len(body.constants))]
    header = ('"""One fused group of a hal graph as a numpy ufunc (generated; do not edit)."""'
              "\n\nimport math\n\nimport numba\nimport numpy as np")
    kernel = "\n".join([f'@numba.vectorize(["{signature}"], cache=True)',
                        f"def kernel({args}):", *lines])
    blocks = [header, "\n".join(constants), *helpers.values(), kernel]
    return "\n\n\n".join(b for b in blocks if b) + "\n"


def _load(source: str, digest: str) -> np.ufunc | None:
    """Import the generated module (numba compiles, or loads its cached code)."""
    try:
        import numba
    except ImportError:
        return None
    path = _source_dir() / f"{digest}.py"
    if not path.exists() or path.read_text() != source:
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(source)
        os.replace(partial, path)  # whole files only: another process may be importing it
    name = f"hal_cpu_numba_{digest}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # numba's cache finds the module by name when it loads code
    try:
        spec.loader.exec_module(module)
    except numba.core.errors.NumbaError:
        del sys.modules[name]
        return None
    return module.kernel.ufunc


def _source_dir() -> Path:
    """settings.cache_dir/cpu-numba, or a directory of this process when that is read-only."""
    folder = hal.settings.cache_dir / "cpu-numba"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".probe.{os.getpid()}"
        probe.touch()
        probe.unlink()
        return folder
    except OSError:
        return Path(tempfile.mkdtemp(prefix="hal-cpu-numba-"))


def _name(ref) -> str:
    kind, i = ref
    return {"input": "a", "node": "v", "const": "c"}[kind] + str(i)


def _cast(d: np.dtype) -> str:
    return "np.bool_" if d == dt.bool_ else f"np.{d.name}"


def _numba_type(d: np.dtype) -> str:
    return "boolean" if d == dt.bool_ else d.name


def _constant_line(i: int, value: np.ndarray) -> str:
    raw = np.ascontiguousarray(value).tobytes().hex()
    return f'c{i} = np.frombuffer(bytes.fromhex("{raw}"), "{value.dtype.name}")[0]  # {value}'
