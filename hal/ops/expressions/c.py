"""The C table: each elementwise op (and activation) as a C expression, for OpenCL C and CUDA C++.

A template's placeholders are the operands {0}, {1}, {2} and names the backend's `Dialect`
fills in: {T} the C type arithmetic on the key operand's dtype uses, {U} the unsigned type
of its width (integer arithmetic wraps through it, as numpy's does, with no overflow in
signed C arithmetic), {R} the real type of a complex dtype, {N} the dtype's name (helper
functions are named per dtype), and for complex dtypes the generic complex functions
{cnew} (from real and imaginary parts), {creal}, {cimag}, {cadd}, {csub}, {cmul},
{cdiv}, {cpow}, {cneg}, {cabs}, {cconj}, {cexp}, {clog}, {csqrt}, {csin}, {ccos},
{ctanh}, which a dialect maps to its own (pyopencl-complex.h or cupy's complex<T>) and, for
exp, sin, cos, tanh, sqrt, division and power, to complex_c.py's numpy-exact functions.
Helper functions (integer powers, numpy's floor division) are C templates here too, in the
dialect's qualifier.

    text, helpers = c.render("maximum", ["a0", "a1"], dt.float32, dt.bool_, dialect)
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Protocol

import numpy as np

from ...runtime import dtypes as dt
from ...runtime.errors import UnsupportedOp
from . import Expression, kind_of


class Dialect(Protocol):
    """How a C-like language spells what the C table leaves open."""

    qualifier: str  # of helper functions: "inline" (OpenCL C), "__device__" (CUDA C++)
    rounded_by_store: frozenset  # dtypes whose values the store rounds (a cast leaves them)
    overrides: Mapping[tuple[str, str], str]  # (op, kind) -> the template this language needs

    def type(self, d: np.dtype) -> str:
        """The C type arithmetic on dtype d uses."""

    def unsigned(self, d: np.dtype) -> str:
        """The unsigned C type of integer dtype d's width."""

    def complex_names(self, d: np.dtype) -> Mapping[str, str]:
        """The generic complex functions ({cadd}, ...) as this language spells them for d."""

    def complex_helpers(self, d: np.dtype, used: frozenset[str]) -> str:
        """Source that the generic complex functions `used` ({"cexp", ...}) need for dtype d
        before they are called ('' if none)."""


def _wrapping(sign: str) -> str:
    return "(({T})(({U}){0} " + sign + " ({U}){1}))"


_NEGATE = "(({T})(({U})0 - ({U}){0}))"


def _math(fn: str) -> Expression:
    return Expression(float=f"{fn}({{0}})", complex=f"{{c{fn}}}({{0}})")


def _predicate(fn: str, join: str, integer: str) -> Expression:
    return Expression(float=f"{fn}({{0}})", integer=integer,
                      complex=f"({fn}({{creal}}({{0}})) {join} {fn}({{cimag}}({{0}})))")


def _pick(compare: str) -> Expression:
    """maximum/minimum: a NaN in the first operand wins; one in the second loses the
    comparison, so the NaN is returned either way, as numpy's."""
    return Expression(float=f"(({{0}} {compare} {{1}} || {{0}} != {{0}}) ? {{0}} : {{1}})",
                      integer=f"(({{0}} {compare} {{1}}) ? {{0}} : {{1}})")


def _division(op: str) -> Expression:
    call = f"hal_{op}_{{N}}({{0}}, {{1}})"
    return Expression(float=call, integer=call,
                      helpers={"float": ("float_division",), "integer": ("integer_division",),
                               "unsigned": ("unsigned_division",)})


TABLE: dict[str, Expression] = {
    "negative": Expression(float="(-{0})", integer=_NEGATE, complex="{cneg}({0})"),
    "abs": Expression(float="fabs({0})", integer=f"({{0}} < 0 ? {_NEGATE} : {{0}})",
                      unsigned="{0}", complex="{cabs}({0})"),
    **{fn: _math(fn) for fn in ("exp", "log", "sqrt", "sin", "cos", "tanh")},
    "erf": Expression(float="erf({0})"),
    "real": Expression(complex="{creal}({0})"),
    "imag": Expression(complex="{cimag}({0})"),
    "conj": Expression(complex="{cconj}({0})"),
    "add": Expression(float="({0} + {1})", integer=_wrapping("+"), complex="{cadd}({0}, {1})"),
    "subtract": Expression(float="({0} - {1})", integer=_wrapping("-"),
                           complex="{csub}({0}, {1})"),
    "multiply": Expression(float="({0} * {1})", integer=_wrapping("*"),
                           complex="{cmul}({0}, {1})"),
    "divide": Expression(float="({0} / {1})", complex="{cdiv}({0}, {1})"),
    "power": Expression(float="pow({0}, {1})", integer="hal_ipow_{N}({0}, {1})",
                        complex="{cpow}({0}, {1})", helpers={"integer": ("ipow",)}),
    "maximum": _pick(">"),
    "minimum": _pick("<"),
    "equal": Expression(float="({0} == {1})", complex="({creal}({0}) == {creal}({1}) && "
                                                        "{cimag}({0}) == {cimag}({1}))"),
    "less": Expression(float="({0} < {1})"),
    "greater": Expression(float="({0} > {1})"),
    "floor_divide": _division("floor_divide"),
    "remainder": _division("remainder"),
    "where": Expression(float="({0} ? {1} : {2})", complex="({0} ? {1} : {2})"),
    # the reference's re + 1j * im: an infinite or NaN imaginary part makes the real part NaN
    "complex": Expression(float="{cnew}({0} + (({T})0) * {1}, {1})"),
    "isnan": _predicate("isnan", "||", "0"),
    "isinf": _predicate("isinf", "||", "0"),
    "isfinite": _predicate("isfinite", "&&", "1"),
    # the rest of the Array API's elementwise functions (real floating; complex falls back)
    **{fn: Expression(float=f"{fn}({{0}})") for fn in (
        "asin", "acos", "atan", "tan", "sinh", "cosh", "asinh", "acosh", "atanh", "expm1",
        "log1p", "log2", "log10")},
    "floor": Expression(float="floor({0})", integer="{0}"),
    "ceil": Expression(float="ceil({0})", integer="{0}"),
    "trunc": Expression(float="trunc({0})", integer="{0}"),
    "round": Expression(float="rint({0})", integer="{0}"),  # half to even, as numpy
    "atan2": Expression(float="atan2({0}, {1})"),
    "hypot": Expression(float="hypot({0}, {1})"),
    "copysign": Expression(float="copysign({0}, {1})"),
    "logaddexp": Expression(float="hal_logaddexp_{N}({0}, {1})",
                            helpers={"float": ("logaddexp",)}),
    # numpy's sign: 0 for +-0, NaN for NaN
    "sign": Expression(float="(({0} > 0) ? (({T})1) : (({0} < 0) ? (({T})-1) : "
                             "(({0} == 0) ? (({T})0) : {0})))",
                       integer="(({0} > 0) ? (({T})1) : (({0} < 0) ? (({T})-1) : (({T})0)))"),
    "signbit": Expression(float="(signbit({0}) != 0)"),
    "bitwise_and": Expression(integer="(({T})({0} & {1}))"),
    "bitwise_or": Expression(integer="(({T})({0} | {1}))"),
    "bitwise_xor": Expression(integer="(({T})({0} ^ {1}))"),
    "bitwise_invert": Expression(integer="(({T})(~{0}))"),
    # numpy: a count of the width or more shifts every bit out (0, or -1 for a negative
    # value shifted right); C leaves those counts undefined
    "bitwise_left_shift": Expression(
        integer="(({1}) >= (({T})(8 * sizeof({T}))) ? (({T})0) : (({T})(({U}){0} << {1})))"),
    "bitwise_right_shift": Expression(
        integer="(({1}) >= (({T})(8 * sizeof({T}))) ? (({0} < 0) ? (({T})-1) : (({T})0)) "
                ": (({T})({0} >> {1})))",
        unsigned="(({1}) >= (({T})(8 * sizeof({T}))) ? (({T})0) : (({T})({0} >> {1})))"),
    "logical_and": Expression(integer="({0} && {1})"),
    "logical_or": Expression(integer="({0} || {1})"),
    "logical_xor": Expression(integer="(({0} != 0) != ({1} != 0))"),
    # activations (hal.ops.ACTIVATIONS): composites that a kernel computes in one pass
    "relu": Expression(float="(({0} > 0 || {0} != {0}) ? {0} : (({T})0))",
                       integer="(({0} > 0) ? {0} : (({T})0))"),
    "sigmoid": Expression(float="((({T})1) / ((({T})1) + exp(-{0})))"),
    "silu": Expression(float="({0} / ((({T})1) + exp(-{0})))"),
    "gelu": Expression(float="((({T})0.5) * {0} * ((({T})1) + erf({0} * "
                             "(({T})0.7071067811865476))))"),
    # 0.5 (1 + tanh(u)) as 1 / (1 + exp(-2u)): exactly 0 at u = -inf, where 1 + tanh(u)
    # cancels to rounding noise
    "gelu_tanh": Expression(float="({0} / ((({T})1) + exp((({T})-2) * ((({T})0.7978845608028654)"
                                  " * ({0} + (({T})0.044715) * {0} * {0} * {0})))))"),
}
"""Op (or activation) name -> its C expression. `astype` is `cast`, by source and target."""


HELPERS: dict[str, str] = {
    "ipow": """
{Q} {T} hal_ipow_{N}({T} b, {T} e) {{  /* by squaring, wrapping; e >= 0 (the op's domain) */
  {U} r = 1, x = ({U})b, m = ({U})e;
  while (m) {{ if (m & 1) r *= x; x *= x; m >>= 1; }}
  return ({T})r;
}}
""",
    # Python's floor and the sign of the divisor, as numpy: x // 0 and x % 0 are 0, and
    # MIN // -1 wraps to MIN (C's division would trap)
    "integer_division": """
{Q} {T} hal_floor_divide_{N}({T} a, {T} b) {{
  if (b == 0) return 0;
  if (b == -1) return ({T})(({U})0 - ({U})a);
  const {T} q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}}
{Q} {T} hal_remainder_{N}({T} a, {T} b) {{
  if (b == 0 || b == -1) return 0;
  const {T} r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}}
""",
    "unsigned_division": """
{Q} {T} hal_floor_divide_{N}({T} a, {T} b) {{ return b ? a / b : 0; }}
{Q} {T} hal_remainder_{N}({T} a, {T} b) {{ return b ? a % b : 0; }}
""",
    # numpy's npy_logaddexp: log(exp(a) + exp(b)) without overflow; equal infinities stay
    "logaddexp": """
{Q} {T} hal_logaddexp_{N}({T} a, {T} b) {{
  if (a == b) return a + ({T})0.6931471805599453;
  const {T} d = a - b;
  if (d > 0) return a + log1p(exp(-d));
  if (d <= 0) return b + log1p(exp(d));
  return d;
}}
""",
    # numpy's npy_divmod: the exact fmod, then the quotient rounded to its floor
    "float_division": """
{Q} {T} hal_divmod_{N}({T} a, {T} b, {T} *mod) {{
  {T} m = fmod(a, b);
  if (b == 0) {{ *mod = m; return a / b; }}
  {T} div = (a - m) / b;
  if (m != 0) {{ if ((b < 0) != (m < 0)) {{ m += b; div -= ({T})1; }} }}
  else m = copysign(({T})0, b);
  {T} floordiv;
  if (div != 0) {{
    floordiv = floor(div);
    if (div - floordiv > ({T})0.5) floordiv += ({T})1;
  }}
  else floordiv = copysign(({T})0, a / b);
  *mod = m;
  return floordiv;
}}
{Q} {T} hal_floor_divide_{N}({T} a, {T} b) {{ {T} m; return hal_divmod_{N}(a, b, &m); }}
{Q} {T} hal_remainder_{N}({T} a, {T} b) {{ {T} m; hal_divmod_{N}(a, b, &m); return m; }}
""",
}
"""Helper functions the templates call, by name; placeholders as the templates', {Q} the
dialect's qualifier."""


def _names(d: np.dtype, out: np.dtype, dialect: Dialect) -> dict[str, str]:
    """The placeholders' values for key dtype d and result dtype out."""
    names = {"T": dialect.type(d), "N": d.name}
    if dt.is_integer(d) or dt.is_bool(d):
        names["U"] = dialect.unsigned(d)
    complex_ = d if dt.is_complex(d) else out if dt.is_complex(out) else None
    if complex_ is not None:
        names["R"] = dialect.type(dt.real_dtype(complex_))
        names.update(dialect.complex_names(complex_))
    return names


def render(op: str, operands: Sequence[str], d: np.dtype, out: np.dtype,
           dialect: Dialect) -> tuple[str, list[str]]:
    """(the C expression of `op` over operand texts, the helper sources it needs) for key
    operand dtype d and result dtype out; `astype` casts to out."""
    if op == "astype":
        used = frozenset(("cnew", "creal", "cimag"))
        return cast(operands[0], d, out, dialect), _complex_source(d, out, used, dialect)
    expression = TABLE.get(op)
    if expression is None:
        raise UnsupportedOp(f"{op}: no C expression in hal.ops.expressions.c.TABLE")
    names = _names(d, out, dialect)
    template = dialect.overrides.get((op, kind_of(d))) or expression.template(op, d)
    text = template.format(*operands, **names)
    helpers = [HELPERS[h].format(Q=dialect.qualifier, **names) for h in
               expression.helpers_for(d)]
    used = frozenset(_COMPLEX_NAME.findall(template))
    return text, helpers + _complex_source(d, out, used, dialect)


_COMPLEX_NAME = re.compile(r"\{(c[a-z]+)\}")


def _complex_source(d: np.dtype, out: np.dtype, used: frozenset[str],
                    dialect: Dialect) -> list[str]:
    """The dialect's source for the complex functions a template uses."""
    if not used:
        return []
    complex_ = [x for x in dict.fromkeys((d, out)) if dt.is_complex(x)]
    return [s for s in (dialect.complex_helpers(x, used) for x in complex_) if s]


def cast(x: str, src: np.dtype, dst: np.dtype, dialect: Dialect) -> str:
    """x of dtype src converted to dtype dst as numpy converts (floats to integers through
    int64, complex to bool by either part)."""
    if dt.is_complex(src):
        part = dialect.complex_names(src)
        re, im = f"{part['creal']}({x})", f"{part['cimag']}({x})"
    if dst == dt.bool_:
        return f"({re} != 0 || {im} != 0)" if dt.is_complex(src) else f"({x} != 0)"
    if dt.is_complex(dst):
        r, new = dialect.type(dt.real_dtype(dst)), dialect.complex_names(dst)["cnew"]
        if dt.is_complex(src):
            return f"{new}(({r}){re}, ({r}){im})"
        return f"{new}(({r}){x}, ({r})0)"
    if dst in dialect.rounded_by_store and dt.is_floating(src):
        return x  # the store rounds once, from the source's precision
    if dt.is_integer(dst) and dt.is_floating(src):
        return f"(({dialect.type(dst)})({dialect.type(dt.int64)}){x})"
    return f"(({dialect.type(dst)}){x})"


def has(op: str, d: np.dtype) -> bool:
    """True when the C table computes `op` for operands of dtype d."""
    if op == "astype":
        return True
    expression = TABLE.get(op)
    return expression is not None and expression.for_kind(kind_of(d)) is not None
