"""Each elementwise op's expression for the code generators, written once per language.

`c.py` holds the C table (OpenCL C and CUDA C++ share it: a backend supplies a `c.Dialect`
saying how its language spells types and complex functions; `complex_c.py` the complex
functions whose special values numpy fixes, in C for both) and `python.py` the Python
table numba compiles (the cpu backend's fused groups). An entry is an `Expression`: a
template per kind of the operands' dtype over the placeholders {0}, {1}, {2}, and the
helper functions it calls. The op set's numpy references are the semantics every entry
follows (NaN-propagating maximum, numpy's floor division, integer arithmetic wrapping).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...runtime import dtypes as dt
from ...runtime.errors import UnsupportedDType


@dataclass(frozen=True)
class Expression:
    """One op in one language, by the kind of its key operand's dtype.

    `float` serves real floating dtypes; `integer` signed integers and bool (default:
    `float`); `unsigned` unsigned integers (default: `integer`); `complex` complex dtypes
    (none by default). `helpers` names, per kind, the helper functions the template calls.
    """

    float: str | None = None
    integer: str | None = None
    unsigned: str | None = None
    complex: str | None = None
    helpers: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def for_kind(self, kind: str) -> str | None:
        """The template for a kind of dtype (see `kind_of`), or None."""
        if kind == "complex":
            return self.complex
        if kind == "unsigned":
            return self.unsigned or self.integer or self.float
        return self.integer or self.float if kind == "integer" else self.float

    def template(self, op: str, d: np.dtype) -> str:
        """The template for operands of dtype d; UnsupportedDType when the op has none."""
        found = self.for_kind(kind_of(d))
        if found is None:
            raise UnsupportedDType(f"{op}: no generated expression for {d.name} operands")
        return found

    def helpers_for(self, d: np.dtype) -> tuple[str, ...]:
        """The helper functions the template for dtype d calls."""
        kind = kind_of(d)
        if kind == "unsigned" and kind not in self.helpers:
            kind = "integer"
        return self.helpers.get(kind, ())


def kind_of(d: np.dtype) -> str:
    """complex, float (real floating), unsigned, or integer (signed integers and bool)."""
    if dt.is_complex(d):
        return "complex"
    if dt.is_floating(d):
        return "float"
    return "unsigned" if d.kind == "u" else "integer"
