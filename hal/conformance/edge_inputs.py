"""A few deterministic edge values that random draws miss: complex `abs` of magnitudes whose
squares overflow or underflow and of inf/NaN mixes, gelu where its erf form and the tanh
approximation part, NaN amid the elements of `max`/`min`. Each op's inputs are a function
registered under its name in `EDGE_INPUTS`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .. import ops
from ..runtime import dtypes as dt
from .inputs import Case

_INF, _NAN = float("inf"), float("nan")


def complex_magnitudes(d: np.dtype) -> list[Case]:
    """|z| where re^2 + im^2 overflows (1e20 + 0j, 3e19 + 4e19j in complex64; 1e200 in
    complex128) or underflows (1e-30, 3e-30 + 4e-30j; 1e-200), and inf/NaN mixes: a part
    that is inf makes |z| inf even beside NaN (C99's hypot), else NaN makes it NaN. A
    naive sqrt(re^2 + im^2) gets the first inf or 0 and the mixes NaN."""
    if not dt.is_complex(d):
        return []
    big, tiny = (1e19, 1e-30) if d == dt.complex64 else (1e199, 1e-200)
    values = [10 * big, 3 * big + 4j * big, -4 * big - 3j * big, tiny, 3 * tiny + 4j * tiny,
              complex(_INF, _NAN), complex(_NAN, -_INF), complex(-_INF, 1), complex(_NAN, 1),
              complex(1, _NAN), complex(_NAN, _NAN), 3 + 4j, 0j]
    return [Case([np.array(values, dtype=d)])]


def gelu_tails(d: np.dtype) -> list[Case]:
    """x in [-5, -2.5], where gelu's erf form and its tanh approximation differ by 3% to
    85% of the result (0.4 to 10 times float16's tolerance, 0.2 to 6 times bfloat16's), so
    a kernel that computes the approximation for approximate='none' fails; the same with
    approximate='tanh' for the converse."""
    if not dt.is_floating(d):
        return []
    x = np.linspace(-5, -2.5, 11).astype(d)
    return [Case([x], {"approximate": form}) for form in ops.GELU_APPROXIMATIONS]


def nan_amid(d: np.dtype) -> list[Case]:
    """A NaN between ordinary values, along a row and down a column: max/min propagate it
    (a reduction that skips NaN, as fmax/nanmax do, returns a number)."""
    if not dt.is_floating(d):
        return []
    x = np.array([[1, _NAN, 2], [0, 7, _NAN], [4, -3, 6]], dtype=d)
    return [Case([x], {"axis": None, "keepdims": False}),
            Case([x], {"axis": -1, "keepdims": False}),
            Case([x], {"axis": 0, "keepdims": True})]


# op name -> dtype -> its edge inputs; the other ops have none.
EDGE_INPUTS: dict[str, Callable[[np.dtype], list[Case]]] = {
    "abs": complex_magnitudes,
    "gelu": gelu_tails,
    "max": nan_amid, "min": nan_amid,
}


def edge_cases(spec: ops.OpSpec, d: np.dtype) -> list[Case]:
    """The deterministic edge inputs of one op on dtype d ([] for an op without any); each
    case's origin is the expression that rebuilds it."""
    inputs = EDGE_INPUTS.get(spec.name)
    found = [] if inputs is None else inputs(d)
    origin = f"hal.conformance.edge_inputs.edge_cases(hal.ops.spec({spec.name!r}), " \
             f"hal.dtype({d.name!r}))"
    for i, case in enumerate(found):
        case.origin = f"{origin}[{i}]"
    return found
