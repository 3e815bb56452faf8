"""Elementwise ops as OpenCL C expressions: unary, binary (floor division and remainder as
numpy computes them too), where, casts, complex parts, and fused composites (activations,
the isnan/isinf/isfinite predicates and clip: each chain of primitives one kernel).

An expression is written once per dtype family here; `strided.run` wraps it in a kernel
that broadcasts by strides. `fused(device, expr, *arrays)` is the same engine for any
expression, the backend's answer to chains of elementwise ops such as a*b + c.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from hal import HalError, UnsupportedDType, ops
from hal import dtypes as dt

from . import cltypes, complex_math, strided
from .table import kernels, supported


def _wrapping(d, op, a, b=None):
    """Integer arithmetic that wraps like numpy (through the unsigned type: no C overflow UB)."""
    u = cltypes.UNSIGNED[d]
    if b is None:
        return f"({cltypes.storage(d)})(({u})0 {op} ({u}){a})"
    return f"({cltypes.storage(d)})(({u}){a} {op} ({u}){b})"


def _pick(cmp, d, a="a0", b="a1"):
    """maximum/minimum; for floats a NaN in a wins (a NaN in b loses the comparison)."""
    nan = f" || {a} != {a}" if dt.is_floating(d) else ""
    return f"(({a} {cmp} {b}{nan}) ? {a} : {b})"


PREDICATES = {"isnan": ("isnan", "||", "0"), "isinf": ("isinf", "||", "0"),
              "isfinite": ("isfinite", "&&", "1")}


def unary_expr(name: str, d: np.dtype) -> str:
    """The C expression of a unary op on `a0` of dtype d."""
    if name in PREDICATES:
        fn, join, integer = PREDICATES[name]
        if dt.is_complex(d):
            return f"({fn}(a0.real) {join} {fn}(a0.imag))"
        return integer if dt.is_integer(d) else f"{fn}(a0)"
    if dt.is_complex(d):
        p = cltypes.cprefix(d)
        if name in complex_math.UNARY:
            return f"hal_{p}_{name}(a0)"
        return {"negative": f"{p}_neg(a0)", "abs": f"{p}_abs(a0)", "real": "a0.real",
                "imag": "a0.imag", "conj": f"{p}_conj(a0)"}.get(name, f"{p}_{name}(a0)")
    if name == "negative":
        return _wrapping(d, "-", "a0") if dt.is_integer(d) else "-a0"
    if name == "abs":
        return "abs(a0)" if dt.is_integer(d) else "fabs(a0)"
    return f"{name}(a0)"


def binary_expr(name: str, d: np.dtype) -> str:
    """The C expression of a binary op on `a0`, `a1` of dtype d."""
    if dt.is_complex(d):
        p = cltypes.cprefix(d)
        if name == "equal":
            return "(a0.real == a1.real && a0.imag == a1.imag)"
        if name in complex_math.BINARY:
            return f"hal_{p}_{complex_math.BINARY[name]}(a0, a1)"
        fn = {"subtract": "sub", "multiply": "mul"}.get(name, name)
        return f"{p}_{fn}(a0, a1)"
    if name in ("add", "subtract", "multiply"):
        sym = {"add": "+", "subtract": "-", "multiply": "*"}[name]
        return _wrapping(d, sym, "a0", "a1") if dt.is_integer(d) else f"a0 {sym} a1"
    if name == "divide":
        return "a0 / a1"
    if name == "power":
        return f"ipow_{cltypes.storage(d)}(a0, a1)" if dt.is_integer(d) else "pow(a0, a1)"
    if name in ("maximum", "minimum"):
        return _pick(">" if name == "maximum" else "<", d)
    if name in ("floor_divide", "remainder"):
        return f"hal_{name}_{cltypes.compute(d)}(a0, a1)"
    return "a0 " + {"equal": "==", "less": "<", "greater": ">"}[name] + " a1"


@functools.cache
def ipow_helper(d) -> str:
    """A helper for integer powers by squaring, wrapping as numpy does. Negative exponents
    never get here: dispatch refuses them first (the power op's domain, hal/ops/elementwise.py)."""
    t, u = cltypes.storage(d), cltypes.UNSIGNED[d]
    return (f"inline {t} ipow_{t}({t} b, {t} e) {{\n"
            f"  {u} r = 1, x = ({u})b, m = ({u})e;\n"
            f"  while (m) {{ if (m & 1) r *= x; x *= x; m >>= 1; }}\n"
            f"  return ({t})r;\n}}\n")


@functools.cache
def floor_division_helpers(d) -> str:
    """hal_floor_divide_T and hal_remainder_T: Python's floor division and modulo as numpy
    computes them. Integers: x // 0 and x % 0 are 0, MIN // -1 wraps to MIN (C's division
    would trap). Floats: numpy's npy_divmod (fmod, then the quotient rounded to the floor)."""
    t = cltypes.compute(d)
    if dt.is_integer(d):
        if d == dt.uint8:
            return (f"inline {t} hal_floor_divide_{t}({t} a, {t} b) {{ return b ? a / b : 0; }}\n"
                    f"inline {t} hal_remainder_{t}({t} a, {t} b) {{ return b ? a % b : 0; }}\n")
        neg = _wrapping(d, "-", "a")
        return (f"inline {t} hal_floor_divide_{t}({t} a, {t} b) {{\n"
                f"  if (b == 0) return 0;\n  if (b == -1) return {neg};\n"
                f"  const {t} q = a / b;\n"
                f"  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;\n}}\n"
                f"inline {t} hal_remainder_{t}({t} a, {t} b) {{\n"
                f"  if (b == 0 || b == -1) return 0;\n  const {t} r = a % b;\n"
                f"  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;\n}}\n")
    return (f"inline {t} hal_divmod_{t}({t} a, {t} b, {t} *mod) {{\n"
            f"  {t} m = fmod(a, b);\n"
            f"  if (b == 0) {{ *mod = m; return a / b; }}\n"
            f"  {t} div = (a - m) / b;\n"
            f"  if (m != 0) {{ if ((b < 0) != (m < 0)) {{ m += b; div -= ({t})1; }} }}\n"
            f"  else m = copysign(({t})0, b);\n"
            f"  {t} floordiv;\n"
            f"  if (div != 0) {{\n    floordiv = floor(div);\n"
            f"    if (div - floordiv > ({t})0.5) floordiv += ({t})1;\n  }}\n"
            f"  else floordiv = copysign(({t})0, a / b);\n"
            f"  *mod = m;\n  return floordiv;\n}}\n"
            f"inline {t} hal_floor_divide_{t}({t} a, {t} b) {{ {t} m; "
            f"return hal_divmod_{t}(a, b, &m); }}\n"
            f"inline {t} hal_remainder_{t}({t} a, {t} b) {{ {t} m; "
            f"hal_divmod_{t}(a, b, &m); return m; }}\n")


def cast_expr(src: np.dtype, dst: np.dtype) -> str:
    """The C expression converting `a0` of src to the compute type of dst, as numpy casts."""
    if dst == dt.bool_:
        return "(a0.real != 0 || a0.imag != 0)" if dt.is_complex(src) else "(a0 != 0)"
    if dt.is_complex(dst):
        p, r = cltypes.cprefix(dst), cltypes.real_compute(dst)
        if dt.is_complex(src):
            return f"{p}_new(({r})a0.real, ({r})a0.imag)"
        return f"{p}_new(({r})a0, 0)"
    if dt.is_integer(dst) and dt.is_floating(src):
        return f"({cltypes.storage(dst)})(long)a0"
    if dst == dt.float16:  # vstore_half_rte rounds float and double once, correctly
        return "a0" if dt.is_floating(src) else "(float)a0"
    return f"({cltypes.compute(dst)})a0"


class Mapped:
    """An expression over operands of fixed shapes and dtypes, prepared: `mapped(arrays,
    scalars)` allocates the output, sets each operand's buffer and offset and enqueues."""

    def __init__(self, device, shape: tuple, dtype: np.dtype, launch):
        self.device, self.shape, self.dtype, self.launch = device, shape, dtype, launch

    def __call__(self, arrays, scalars=()):
        out = self.device.empty(self.shape, self.dtype)
        if self.launch is not None:  # out is fresh: element offset 0
            self.launch([(out.base_data, 0),
                         *[(a.base_data, a.offset // a.dtype.itemsize) for a in arrays]],
                        scalars)
        return out


def prepare(device, op: str, expr: str, arrays, out_dtype, *, shape=None, helpers: str = "",
            scalar_types=()) -> Mapped:
    """map_arrays's work for operands of these shapes and dtypes, done once."""
    if shape is None:
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
    shape = tuple(shape)
    if math.prod(shape) == 0:
        return Mapped(device, shape, out_dtype, None)
    strides = (strided.dense_strides(shape),
               *[strided.broadcast_strides(a.shape, shape) for a in arrays])
    dtypes = (np.dtype(out_dtype), *[a.dtype for a in arrays])
    return Mapped(device, shape, out_dtype, strided.prepare(
        device, op, expr, dtypes, strides, shape, tuple(scalar_types), helpers))


def map_arrays(device, op: str, expr: str, arrays, out_dtype, *, shape=None,
               helpers: str = "", scalars=(), scalar_types=()):
    """A new array of out_dtype: expr over the arrays (a0, a1, ...) broadcast to one shape
    (prepared once per shapes and dtypes: device.cache)."""
    key = ("map", op, expr, out_dtype, None if shape is None else tuple(shape),
           tuple([(a.shape, a.dtype) for a in arrays]), tuple(scalar_types), helpers)
    found = device.cache.get(key)
    if found is None:
        found = device.cache[key] = prepare(device, op, expr, arrays, out_dtype, shape=shape,
                                            helpers=helpers, scalar_types=scalar_types)
    return found(arrays, scalars)


def fused(device, expr: str, *arrays, out_dtype=None):
    """One kernel computing a C expression over broadcast device arrays (a0, a1, ...).

    The elementwise chain `a*b + c` is `fused(dev, "a0 * a1 + a2", a, b, c)`: one pass
    over memory instead of one kernel and one temporary per primitive.
    """
    dtypes = {a.dtype for a in arrays}
    if len(dtypes) != 1:
        raise UnsupportedDType(
            f"fused: operands have dtypes {sorted(d.name for d in dtypes)}; cast them to one "
            "dtype first")
    d = dtypes.pop()
    device.check_dtype(d, "fused")
    return map_arrays(device, "fused", expr, arrays, out_dtype or d)


# -- registrations ----------------------------------------------------------------------
def _unary_kernel(name):
    def prepared(device, x):
        helpers = complex_math.helpers(x.dtype) if dt.is_complex(x.dtype) else ""
        return prepare(device, name, unary_expr(name, x.dtype), [x], ops.spec(name).meta(x)[1],
                       helpers=helpers)

    def kernel(device, x):
        key = ("op", name, x.shape, x.dtype)
        found = device.cache.get(key)
        if found is None:
            found = device.cache[key] = prepared(device, x)
        return found((x,))

    return kernel


def _binary_kernel(name):
    def prepared(device, a, b):
        d = a.dtype
        helpers = ""
        if dt.is_complex(d):
            helpers = complex_math.helpers(d)
        elif name == "power" and dt.is_integer(d):
            helpers = ipow_helper(d)
        elif name in ("floor_divide", "remainder"):
            helpers = floor_division_helpers(d)
        return prepare(device, name, binary_expr(name, d), [a, b],
                       ops.spec(name).meta(a, b)[1], helpers=helpers)

    def kernel(device, a, b):
        key = ("op", name, a.shape, a.dtype, b.shape, b.dtype)
        found = device.cache.get(key)
        if found is None:
            found = device.cache[key] = prepared(device, a, b)
        return found((a, b))

    return kernel


for _name in ("negative", "abs", "exp", "log", "sqrt", "sin", "cos", "tanh", "erf",
              "real", "imag", "conj", "isnan", "isinf", "isfinite"):
    kernels.register(_name, supported(_name))(_unary_kernel(_name))

for _name in ("add", "subtract", "multiply", "divide", "power", "maximum", "minimum",
              "equal", "less", "greater", "floor_divide", "remainder"):
    kernels.register(_name, supported(_name))(_binary_kernel(_name))


@kernels.register("where", supported("where"))
def where(device, cond, x, y):
    """Elements of x where cond, else of y, broadcast together."""
    return map_arrays(device, "where", "a0 ? a1 : a2", [cond, x, y], x.dtype)


@kernels.register("clip", supported("clip"))
def clip(device, x, lo=None, hi=None):
    """x limited to [lo, hi] (either may be absent), broadcast; NaN in any operand wins."""
    expr, arrays = "a0", [x]
    for bound, cmp in ((lo, ">"), (hi, "<")):
        if bound is not None:
            arrays.append(bound)
            expr = _pick(cmp, x.dtype, f"({expr})", f"a{len(arrays) - 1}")
    return map_arrays(device, "clip", expr, arrays, x.dtype)


@kernels.register("astype", supported("astype"))
def astype(device, x, *, dtype):
    """x converted to dtype as numpy converts."""
    target = dt.dtype(dtype)
    if target == x.dtype:
        return x
    device.check_dtype(target, "astype")
    return map_arrays(device, "astype", cast_expr(x.dtype, target), [x], target)


@kernels.register("complex")
def complex_(device, re, im):
    """re + 1j*im, broadcast."""
    out = dt.complex_dtype(re.dtype)
    return map_arrays(device, "complex", f"{cltypes.cprefix(out)}_new(a0, a1)", [re, im], out)


# -- fused activations (composites) --------------------------------------------------------
def activation_expr(name: str | None, d: np.dtype, v: str = "a0") -> str:
    """The C expression of an activation on `v` of real dtype d (None: identity)."""
    c = cltypes.literal
    if name is None:
        return v
    if name == "relu":
        if dt.is_integer(d):
            return f"max({v}, ({cltypes.compute(d)})0)"
        return f"(({v} > 0 || {v} != {v}) ? {v} : {c(d, 0)})"
    if name == "sigmoid":
        return f"({c(d, 1)} / ({c(d, 1)} + exp(-{v})))"
    if name == "silu":
        return f"({v} / ({c(d, 1)} + exp(-{v})))"
    if name == "tanh":
        return f"tanh({v})"
    if name == "gelu":
        return f"({c(d, 0.5)} * {v} * ({c(d, 1)} + erf({v} * {c(d, math.sqrt(0.5))})))"
    if name == "gelu_tanh":
        inner = f"{c(d, math.sqrt(2 / math.pi))} * ({v} + {c(d, 0.044715)} * {v} * {v} * {v})"
        # 0.5 * (1 + tanh(u)) as 1 / (1 + exp(-2u)): exactly 0 at u = -inf, where
        # 1 + tanh(u) cancels to rounding noise
        return f"({v} / ({c(d, 1)} + exp({c(d, -2)} * ({inner}))))"
    raise HalError(f"linear: activation {name!r} has no OpenCL expression; use one of "
                   f"relu, sigmoid, silu, tanh, gelu, gelu_tanh")


def _activation_kernel(name):
    def kernel(device, x, **params):
        act = "gelu_tanh" if name == "gelu" and params.get("approximate") == "tanh" else name
        return map_arrays(device, name, activation_expr(act, x.dtype), [x], x.dtype)

    return kernel


for _name in ("relu", "sigmoid", "silu", "gelu"):
    kernels.register(_name, supported(_name))(_activation_kernel(_name))
