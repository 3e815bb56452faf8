"""Elementwise kernels: unary and binary ops with numpy broadcasting, where, casts, and the
elementwise composites (gelu, silu, sigmoid, relu) as one kernel each.

floor_divide and remainder follow numpy: Python's floor division and modulo (the remainder
takes the divisor's sign), an integer division by zero gives 0, and floats are computed as
numpy's divmod does (from fmod, so that floor_divide(1, 0.1) is 9 as in numpy, not 10).

Half precision (float16, bfloat16) computes in float32 and rounds once, as the reference
does. Integer power has no kernel (numpy's overflow and negative-exponent rules are not
worth a TE expression); it falls back.
"""

from __future__ import annotations

from tvm import te, tirx

from hal import dtypes as dt

from . import te_util as tu
from .table import kernels

UNARY = ("negative", "abs", "exp", "log", "sqrt", "sin", "cos", "tanh", "erf", "asin", "acos",
         "atan", "tan", "sinh", "cosh", "asinh", "acosh", "atanh", "log2", "log10", "log1p",
         "floor", "ceil", "trunc", "round", "sign", "bitwise_invert")
"""Unary ops with an element expression (`unary_value`)."""
COMPARISONS = ("equal", "less", "greater")
BINARY = ("add", "subtract", "multiply", "divide", "maximum", "minimum", *COMPARISONS,
          "floor_divide", "remainder", "power", "atan2", "hypot", "copysign", "logaddexp",
          "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
          "bitwise_right_shift", "logical_and", "logical_or", "logical_xor")
"""Binary ops with an element expression (`binary_value`); power has kernels for floats."""




def _unary_expr(name: str, x):
    if name == "negative":  # 0 - x: TVM writes -x as x * -1, which uint8 cannot hold
        return tirx.const(0, tu.dtype_of(x)) - x
    if name == "abs":
        return te.abs(x)
    if name == "tanh":
        return tu.tanh(x)
    if name in ("floor", "ceil", "trunc", "round") and "float" not in tu.dtype_of(x):
        return x  # an integer is its own rounding
    if name == "round":
        return tirx.nearbyint(x)  # half to even, as numpy
    if name == "log1p":
        return tirx.log1p(x)
    if name == "bitwise_invert":
        return tirx.bitwise_not(x)
    if name == "sign":  # numpy's: 0 for +-0, NaN stays NaN
        d = tu.dtype_of(x)
        zero = tirx.const(0, d)
        if d.startswith("uint"):
            return tirx.Select(x > zero, tirx.const(1, d), zero)
        return tirx.Select(x > zero, tirx.const(1, d), tirx.Select(
            x < zero, tirx.const(-1, d), tirx.Select(x == zero, zero, x)))
    return getattr(te, name)(x)


def unary_value(op: str, x):
    """A unary op of one element expression, in the element's dtype."""
    d = tu.dtype_of(x)
    return _unary_expr(op, tu.lift(x, d)).astype(d)


def unary(x: te.Tensor, *, op: str) -> te.Tensor:
    """A unary op over every element."""
    return te.compute(x.shape, lambda *i: unary_value(op, x(*i)), name="out")


def _pick(a, b, larger: bool):
    """numpy's maximum/minimum: a NaN in either operand wins."""
    chosen = te.max(a, b) if larger else te.min(a, b)
    if "float" not in tu.dtype_of(a):
        return chosen
    return tirx.Select(tu.isnan(a), a, tirx.Select(tu.isnan(b), b, chosen))


def _int_divmod(a, b, name: str):
    """numpy's integer floor_divide or remainder: x // 0 and x % 0 are 0, MIN // -1 is MIN."""
    d = tu.dtype_of(a)
    zero, one = tirx.const(0, d), tirx.const(1, d)
    special = b == zero
    if not d.startswith("uint"):  # MIN // -1 overflows (a hardware trap): negate by hand
        minus_one = b == tirx.const(-1, d)
        special = tirx.Or(special, minus_one)
    safe = tirx.Select(special, one, b)  # Select computes both sides: never divide by 0
    if name == "remainder":
        return tirx.Select(special, zero, tirx.floormod(a, safe))
    quotient = tirx.Select(b == zero, zero, tirx.floordiv(a, safe))
    if d.startswith("uint"):
        return quotient
    lowest = tirx.min_value(d)  # -MIN overflows: numpy wraps it onto MIN itself
    negated = tirx.Select(a == lowest, lowest, zero - a)
    return tirx.Select(minus_one, negated, quotient)


def _float_divmod(a, b, name: str):
    """numpy's float floor_divide or remainder (its npy_divmod, NaN and inf included)."""
    d = tu.dtype_of(a)
    zero = tirx.const(0, d)
    # TVM has no LLVM lowering of tirx.fmod: call the C library's (fmodf for float32)
    mod = tirx.call_pure_extern(d, "fmodf" if d == "float32" else "fmod", a, b)
    # a nonzero remainder whose sign differs from the divisor's moves by one divisor
    fix = tirx.Or(tirx.And(b < zero, mod > zero), tirx.And(b > zero, mod < zero))
    if name == "remainder":  # for b == 0, fmod's NaN is numpy's answer
        return tirx.Select(mod == zero, tirx.copysign(zero, b),
                           tirx.Select(fix, mod + b, mod))
    div = (a - mod) / b
    div = tirx.Select(fix, div - tirx.const(1, d), div)
    floor = te.floor(div)
    floor = tirx.Select(div - floor > tirx.const(0.5, d), floor + tirx.const(1, d), floor)
    quotient = tirx.Select(div == zero, tirx.copysign(zero, a / b), floor)
    return tirx.Select(b == zero, a / b, quotient)


def _shift(a, b, left: bool):
    """numpy's shifts: a count of the width or more shifts every bit out (0, or -1 for a
    negative value shifted right); LLVM leaves those counts undefined."""
    d = tu.dtype_of(a)
    zero = tirx.const(0, d)
    out_of_range = b >= tirx.const(int(d.removeprefix("u").removeprefix("int")), d)
    safe = tirx.Select(out_of_range, zero, b)
    if left:
        return tirx.Select(out_of_range, zero, tirx.shift_left(a, safe))
    spilled = tirx.Select(a < zero, tirx.const(-1, d), zero) if d.startswith("int") else zero
    return tirx.Select(out_of_range, spilled, tirx.shift_right(a, safe))


def _logaddexp(a, b):
    """numpy's npy_logaddexp: log(exp(a) + exp(b)) without overflow; equal infinities stay."""
    d = tu.dtype_of(a)
    zero = tirx.const(0, d)
    diff = a - b
    return tirx.Select(a == b, a + tirx.const(0.6931471805599453, d), tirx.Select(
        diff > zero, a + tirx.log1p(te.exp(zero - diff)), tirx.Select(
            diff <= zero, b + tirx.log1p(te.exp(diff)), diff)))


_BITWISE = {"bitwise_and": tirx.bitwise_and, "bitwise_or": tirx.bitwise_or,
            "bitwise_xor": tirx.bitwise_xor, "logical_and": tirx.bitwise_and,
            "logical_or": tirx.bitwise_or, "logical_xor": tirx.bitwise_xor}
"""Bitwise ops; the logical ones on bool operands, which compute as int8 0 and 1."""


def _binary_expr(name: str, a, b):
    if name == "add":
        return a + b
    if name == "subtract":
        return a - b
    if name == "multiply":
        return a * b
    if name == "divide":
        return a / b
    if name == "power":
        return te.power(a, b)
    if name in ("maximum", "minimum"):
        return _pick(a, b, name == "maximum")
    if name in ("floor_divide", "remainder"):
        divmod_ = _float_divmod if "float" in tu.dtype_of(a) else _int_divmod
        return divmod_(a, b, name)
    if name in ("atan2", "hypot", "copysign"):
        return getattr(tirx, name)(a, b)
    if name == "logaddexp":
        return _logaddexp(a, b)
    if name in _BITWISE:
        return _BITWISE[name](a, b)
    if name in ("bitwise_left_shift", "bitwise_right_shift"):
        return _shift(a, b, name == "bitwise_left_shift")
    return {"equal": a == b, "less": a < b, "greater": a > b}[name]


def binary_value(op: str, x, y):
    """A binary op of two element expressions of one dtype; comparisons give bool."""
    d = tu.dtype_of(x)
    out = "bool" if op in COMPARISONS else d
    x, y = tu.lift(x, d), tu.lift(y, d)
    if d == "bool":  # TVM 0.27 lowers bool == bool to an fcmp that LLVM rejects
        x, y = x.astype("int8"), y.astype("int8")
    return _binary_expr(op, x, y).astype(out)


def binary(a: te.Tensor, b: te.Tensor, *, op: str) -> te.Tensor:
    """A binary op with numpy broadcasting; comparisons give bool."""
    shape = tu.broadcast_shape(a.shape, b.shape)
    return te.compute(shape, lambda *i: binary_value(op, tu.at(a, i, shape), tu.at(b, i, shape)),
                      name="out")


def where_value(c, x, y):
    """x where the bool expression c else y."""
    return tirx.Select(c, x, y)


def where(c: te.Tensor, x: te.Tensor, y: te.Tensor) -> te.Tensor:
    """x where c else y, broadcast."""
    shape = tu.broadcast_shape(c.shape, x.shape, y.shape)
    return te.compute(shape, lambda *i: where_value(
        tu.at(c, i, shape), tu.at(x, i, shape), tu.at(y, i, shape)), name="out")


def astype_value(v, dtype: str):
    """An element expression cast with numpy's rules for bool (nonzero is True)."""
    src = tu.dtype_of(v)
    if src == "bool":  # (bool != False lowers to an fcmp LLVM rejects)
        return v if dtype == "bool" else v.astype("int8").astype(dtype)
    if dtype == "bool":  # NaN is True, as in numpy (LLVM's ordered != says False)
        nonzero = tirx.NE(v, tirx.const(0, src))
        return tirx.Or(nonzero, tu.isnan(tu.lift(v, src))) if "float" in src else nonzero
    if src in tu.HALF and dtype != "float32":
        v = v.astype("float32")
    return v.astype(dtype)


def astype(x: te.Tensor, *, dtype: str) -> te.Tensor:
    """A cast with numpy's rules for bool (nonzero is True)."""
    return te.compute(x.shape, lambda *i: astype_value(x(*i), dtype), name="out")


def activation(x: te.Tensor, *, op: str, approximate: str = "none") -> te.Tensor:
    """gelu, silu, sigmoid or relu as one kernel."""
    d = str(x.dtype)

    def value(*i):
        v = tu.lift(x(*i), d)
        if op == "gelu":
            return tu.gelu(v, approximate).astype(d)
        return tu.activation(v, op).astype(d)

    return te.compute(x.shape, value, name="out")


def _register_unary(name: str) -> None:
    @kernels.register(name)
    def kernel(device, x):
        return device.run(name, unary, [x], op=name)


def _register_binary(name: str, dtypes=None) -> None:
    @kernels.register(name, dtypes)
    def kernel(device, a, b):
        return device.run(name, binary, [a, b], op=name)


for _name in UNARY:
    _register_unary(_name)
for _name in BINARY:
    _register_binary(_name, dt.REALS if _name == "power" else None)  # integer powers: none


@kernels.register("where")
def _where(device, c, x, y):
    return device.run("where", where, [c, x, y])


@kernels.register("astype")
def _astype(device, x, *, dtype):
    target = dt.dtype(dtype)
    device.check_dtype(target, "astype")  # complex: UnsupportedDType naming the device
    return device.run("astype", astype, [x], dtype=target.name)


def _register_activation(name: str) -> None:
    @kernels.register(name)
    def kernel(device, x, **params):
        return device.run(name, activation, [x], op=name, **params)


for _name in ("gelu", "silu", "sigmoid", "relu"):
    _register_activation(_name)
