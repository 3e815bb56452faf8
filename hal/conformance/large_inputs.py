"""A few deterministic large inputs: more than 1024 elements along the reduced axis for the
reductions and the normalising composites, so multi-stage and work-group reduction paths
run. Each op's inputs are a function registered under its name in `LARGE_INPUTS`."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from .. import ops
from ..runtime import dtypes as dt
from .inputs import Case

# (shape, axis, keepdims): 4099 and 1500 elements pass one work-group's 1024, along the
# contiguous axis and across rows; the ragged tails of 3 and 220 after blocks of 256.
_LARGE_REDUCTIONS = (((4099,), None, False), ((2, 1500), -1, False), ((1500, 2), 0, True))


def _uniform(rng: np.random.Generator, d: np.dtype, shape: tuple, limit: int) -> np.ndarray:
    """Uniform values in [-limit, limit] ([0, 2 * limit] for uint8) of dtype d."""
    if dt.is_bool(d):
        return rng.random(shape) < 0.5
    if dt.is_integer(d):
        lo = 0 if d == dt.uint8 else -limit
        return rng.integers(lo, lo + 2 * limit, shape, endpoint=True).astype(d)
    return rng.uniform(-limit, limit, shape).astype(d)


def reductions(rng: np.random.Generator, d: np.dtype, *, correction: bool = False) -> list[Case]:
    """Each reduction's last elements hold its extremes, so a kernel that drops the ragged
    tail misses them (correction: var's, 1, is passed too)."""
    found = []
    for shape, axis, keepdims in _LARGE_REDUCTIONS:
        x = _uniform(rng, d, shape, 5)
        if not dt.is_bool(d):
            reduced_last = np.moveaxis(x, 0 if axis == 0 else -1, -1)  # a view of x
            reduced_last[..., -2:] = (0, 200) if d == dt.uint8 else (-50, 50)
        params = {"axis": axis, "keepdims": keepdims}
        if correction:
            params["correction"] = 1
        found.append(Case([x], params, views=(0,) if axis == 0 else ()))
    return found


def softmaxes(rng: np.random.Generator, d: np.dtype) -> list[Case]:
    """Rows shifted by +-1000 or scaled by 80, beyond exp's range, along either axis."""
    u = _uniform(rng, dt.float32, (2, 1500), 5)
    return [Case([np.stack([u[0] + 1000, u[1] * 80]).astype(d)], {"axis": -1}),
            Case([(_uniform(rng, dt.float32, (1100, 3), 5) - 1000).astype(d)], {"axis": 0},
                 views=(0,))]


def layer_norms(rng: np.random.Generator, d: np.dtype) -> list[Case]:
    """Rows of 1500 elements with weight and bias, and one of 4099 without."""
    w, b = _uniform(rng, d, (1500,), 2), _uniform(rng, d, (1500,), 2)
    return [Case([_uniform(rng, d, (2, 1500), 5), w, b], {"eps": 1e-5}),
            Case([_uniform(rng, d, (4099,), 5), None, None], {"eps": 1e-5})]


# op name -> (rng, dtype) -> its large inputs; the other ops have none.
LARGE_INPUTS: dict[str, Callable[[np.random.Generator, np.dtype], list[Case]]] = {
    "sum": reductions, "max": reductions, "min": reductions, "mean": reductions,
    "var": partial(reductions, correction=True),
    "softmax": softmaxes, "log_softmax": softmaxes,
    "layer_norm": layer_norms,
}


def large_cases(spec: ops.OpSpec, d: np.dtype) -> list[Case]:
    """The deterministic large inputs of one op on dtype d ([] for an op without any); each
    case's origin is the expression that rebuilds it."""
    inputs = LARGE_INPUTS.get(spec.name)
    found = [] if inputs is None else inputs(np.random.default_rng(0), d)
    origin = f"hal.conformance.large_inputs.large_cases(hal.ops.spec({spec.name!r}), " \
             f"hal.dtype({d.name!r}))"
    for i, case in enumerate(found):
        case.origin = f"{origin}[{i}]"
    return found
