"""Every composite's default decomposition, run op by op on the cpu, against its reference.

The cpu backend replaces composites with fused kernels, so conformance on cpu checks
those; this test checks the decompositions every other backend inherits.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import hal
from hal import ops
from hal.conformance.compare import mismatch
from hal.conformance.strategies import cases
from hal.dispatch import decomposition_of

COMPOSITES = [(s, d) for s in ops.specs() if s.kind == ops.COMPOSITE for d in s.dtypes]


@pytest.mark.parametrize(("spec", "dtype"), COMPOSITES,
                         ids=[f"{s.name}-{d.name}" for s, d in COMPOSITES])
def test_decomposition_matches_reference(spec, dtype, cpu):
    decompose = decomposition_of(spec.name)

    @settings(max_examples=15, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(cases(spec, dtype))
    def check(case):
        args = [hal.asarray(a, device=cpu) if isinstance(a, np.ndarray) else a
                for a in case.args]
        with np.errstate(all="ignore"):
            expected = spec.evaluate(*case.args, **case.params)
            actual = decompose(*args, **case.params).numpy()
        bound = spec.bound(*case.args, **case.params) if spec.bound else None
        problem = mismatch(actual, expected, spec.tolerance_for(expected.dtype), bound)
        assert not problem, problem

    check()


def test_every_composite_has_a_decomposition():
    missing = [s.name for s in ops.specs() if s.kind == ops.COMPOSITE
               and decomposition_of(s.name) is None]
    assert missing == []
