"""The Python table: each elementwise op as a Python expression that numba compiles (the cpu
backend's fused groups), in a module that imports `math`, `numba` and `numpy as np`.

A template's placeholders are the operands {0}, {1}, {2} and {N}, the dtype's name
(helpers are named per dtype). Integer results wrap because the generated code casts each
node's value to its dtype; the helpers are numpy's algorithms (floor division and
remainder, Smith's complex division, integer powers by squaring), each an
`@numba.njit(error_model="numpy")` function.

    text, helpers = python.render("floor_divide", ["a0", "a1"], np.dtype("float64"), ...)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...runtime import dtypes as dt
from ...runtime.errors import UnsupportedOp
from . import Expression, kind_of


def _numpy(fn: str) -> Expression:
    return Expression(float=f"np.{fn}({{0}})", complex=f"np.{fn}({{0}})")


def _same(template: str) -> Expression:
    return Expression(float=template, complex=template)


def _pick(compare: str) -> Expression:
    """maximum/minimum: a NaN in the first operand wins, one in the second loses (numpy)."""
    return Expression(float=f"{{0}} if {{0}} {compare} {{1}} or {{0}} != {{0}} else {{1}}",
                      integer=f"{{0}} if {{0}} {compare} {{1}} else {{1}}")


def _division(op: str) -> Expression:
    return Expression(float=f"{op}_{{N}}({{0}}, {{1}})",
                      integer=f"{op}_int(np.int64({{0}}), np.int64({{1}}))",
                      helpers={"float": (op,), "integer": (f"{op}_int",)})


TABLE: dict[str, Expression] = {
    "negative": _same("-{0}"),
    "abs": Expression(float="abs({0})", unsigned="{0}", complex="abs({0})"),
    **{fn: _numpy(fn) for fn in ("exp", "log", "sqrt", "sin", "cos", "tanh")},
    "erf": Expression(float="math.erf(np.float64({0}))"),
    "real": Expression(complex="{0}.real"),
    "imag": Expression(complex="{0}.imag"),
    "conj": Expression(complex="{0}.conjugate()"),
    # the reference's re + 1j * im (an infinite imaginary part makes the real part NaN)
    "complex": Expression(float="{0} + 1j * {1}"),
    "add": _same("{0} + {1}"),
    "subtract": _same("{0} - {1}"),
    "multiply": _same("{0} * {1}"),
    "divide": Expression(float="{0} / {1}", complex="complex_divide_{N}({0}, {1})",
                         helpers={"complex": ("complex_divide",)}),
    "power": Expression(float="np.power({0}, {1})", complex="np.power({0}, {1})",
                        integer="integer_power(np.int64({0}), np.int64({1}))",
                        helpers={"integer": ("integer_power",)}),
    "maximum": _pick(">="),
    "minimum": _pick("<="),
    "equal": _same("{0} == {1}"),
    "less": Expression(float="{0} < {1}"),
    "greater": Expression(float="{0} > {1}"),
    "floor_divide": _division("floor_divide"),
    "remainder": _division("remainder"),
    "where": _same("{1} if {0} else {2}"),
    # the rest of the Array API's elementwise functions (real floating; complex falls back)
    **{name: Expression(float=f"np.{fn}({{0}})") for name, fn in (
        ("asin", "arcsin"), ("acos", "arccos"), ("atan", "arctan"), ("tan", "tan"),
        ("sinh", "sinh"), ("cosh", "cosh"), ("asinh", "arcsinh"), ("acosh", "arccosh"),
        ("atanh", "arctanh"), ("expm1", "expm1"), ("log1p", "log1p"), ("log2", "log2"),
        ("log10", "log10"), ("signbit", "signbit"), ("sign", "sign"))},
    **{fn: Expression(float=f"np.{fn}({{0}})", integer="{0}")
       for fn in ("floor", "ceil", "trunc")},
    "round": Expression(float="np.rint({0})", integer="{0}"),  # half to even, as numpy
    **{name: Expression(float=f"np.{fn}({{0}}, {{1}})") for name, fn in (
        ("atan2", "arctan2"), ("hypot", "hypot"), ("copysign", "copysign"),
        ("logaddexp", "logaddexp"))},
    "bitwise_and": Expression(integer="{0} & {1}"),
    "bitwise_or": Expression(integer="{0} | {1}"),
    "bitwise_xor": Expression(integer="{0} ^ {1}"),
    "bitwise_invert": Expression(integer="~{0}"),
    "logical_and": Expression(integer="{0} and {1}"),
    "logical_or": Expression(integer="{0} or {1}"),
    "logical_xor": Expression(integer="{0} != {1}"),
}
"""Op name -> its Python expression. `astype` converts by the node's cast (`render`)."""


HELPERS: dict[str, str] = {
    "floor_divide_int": '''
def floor_divide_int(x, y):
    """numpy: by zero 0; by -1 a wrapping negation (no overflow trap)."""
    if y == 0:
        return 0
    if y == -1:
        return -x
    return x // y
''',
    "remainder_int": '''
def remainder_int(x, y):
    """numpy: by zero (and by -1) 0; the sign of the divisor."""
    if y == 0 or y == -1:
        return 0
    return x % y
''',
    "integer_power": '''
def integer_power(base, exponent):
    """By squaring, wrapping as numpy's integer power (exponent >= 0)."""
    result = 1
    while exponent > 0:
        if exponent & 1:
            result *= base
        base *= base
        exponent >>= 1
    return result
''',
    "floor_divide": '''
def floor_divide_{N}(a, b):
    """numpy's npy_floor_divide, in the operands' precision."""
    if b == 0:
        return a / b
    mod = np.fmod(a, b)
    div = (a - mod) / b
    if mod != 0 and (b < 0) != (mod < 0):
        div -= {T}(1)
    if div == 0:
        return np.copysign({T}(0), a / b)
    floordiv = np.floor(div)
    if div - floordiv > {T}(0.5):
        floordiv += {T}(1)
    return floordiv
''',
    "remainder": '''
def remainder_{N}(a, b):
    """numpy's npy_remainder: the sign of the divisor, a signed zero."""
    mod = np.fmod(a, b)
    if b == 0:
        return mod
    if mod == 0:
        return np.copysign({T}(0), b)
    if (b < 0) != (mod < 0):
        mod += b
    return mod
''',
    "complex_divide": '''
def complex_divide_{N}(a, b):
    """numpy's complex division (Smith's algorithm; by zero inf/nan, never an error)."""
    ar, ai, br, bi = a.real, a.imag, b.real, b.imag
    abs_br, abs_bi = abs(br), abs(bi)
    if abs_br >= abs_bi:
        if abs_br == 0 and abs_bi == 0:
            return complex(ar / abs_br, ai / abs_br)
        rat = bi / br
        scl = {T}(1) / (br + bi * rat)
        return complex((ar + ai * rat) * scl, (ai - ar * rat) * scl)
    rat = br / bi
    scl = {T}(1) / (bi + br * rat)
    return complex((ar * rat + ai) * scl, (ai * rat - ar) * scl)
''',
}
"""Helper functions by name: {N} the dtype's name, {T} its real numpy type (np.float64)."""


def render(op: str, operands: Sequence[str], d: np.dtype,
           out: np.dtype) -> tuple[str, dict[str, str]]:
    """(the Python expression of `op` over operand names, {helper name: its numba source})
    for key operand dtype d and result dtype out; `astype` leaves the conversion to the
    node's cast but for bool, which numpy computes as `!= 0`."""
    if op == "astype":
        return (f"{operands[0]} != 0" if out == dt.bool_ else operands[0]), {}
    expression = TABLE.get(op)
    if expression is None:
        raise UnsupportedOp(f"{op}: no Python expression in hal.ops.expressions.python.TABLE")
    text = expression.template(op, d).format(*operands, N=d.name)
    real = dt.real_dtype(d) if dt.is_complex(d) else d
    helpers = {}
    for name in expression.helpers_for(d):
        source = HELPERS[name].format(N=d.name, T=f"np.{real.name}")
        helpers[source.split("(", 1)[0].split()[-1]] = (
            '@numba.njit(error_model="numpy")\n' + source.strip())
    return text, helpers


def has(op: str, d: np.dtype) -> bool:
    """True when the Python table computes `op` for operands of dtype d."""
    if op == "astype":
        return True
    expression = TABLE.get(op)
    return expression is not None and expression.for_kind(kind_of(d)) is not None
