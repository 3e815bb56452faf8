"""Autograd suite: the k-th derivative of sin(x) exp(-x^2) at 10^4 points on each backend.

hal Taylor mode (all derivatives in one pass, O(k^2) per op) for k = 1 ... 16, and hal
nested reverse mode (k nested VJPs, cost doubling per order) for k <= 8, checked against
the Hermite closed form. Items are points per call. The side-by-side table with
jax.experimental.jet and torch nested autograd is `python -m frontends.autograd.kth_derivative`.
"""

from __future__ import annotations

import numpy as np

from benchmarks.workload import Case, Workload
from frontends.autograd import kth_derivative as bench

REVERSE_ORDERS = (1, 2, 4, 8)  # nested reverse at k = 10 takes seconds and 300 MB per call


def _workload(case: bench.Case) -> Workload:
    def build(dtype: np.dtype) -> Case:
        return Case(inputs=case.build(dtype), items=case.items)

    return Workload(
        name=case.name,
        params=case.params,
        dtypes=case.dtypes,
        build=build,
        run=case.run,
        reference=case.reference,
        tolerance_scale=10.0,  # float32 at k = 16 keeps about 1e-5 of relative accuracy
    )


def workloads() -> list[Workload]:
    """Taylor mode for every order, nested reverse mode for the orders it can afford."""
    cases = bench.workloads(modes=("taylor",)) + bench.workloads(REVERSE_ORDERS,
                                                                 modes=("reverse",))
    return [_workload(c) for c in cases]
