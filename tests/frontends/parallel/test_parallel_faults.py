"""The fault-case runner: a case's job is timed to its abort and its reason found."""

from __future__ import annotations

import pytest

from frontends.parallel import faults


@pytest.mark.mpi
def test_a_fault_case_is_timed_to_the_abort_with_its_reason():
    if faults.mpiexec() is None:
        pytest.skip("mpiexec not found (install mpich and mpi4py)")
    outcome = faults.run_case("exit", cap=40)
    assert (outcome.status, outcome.shown) == (3, True), outcome.output
    assert 0 < outcome.seconds < 40
    assert faults.table([outcome], 40).splitlines()[2] == (
        f"| rank 1 sys.exit(3) inside the mesh's with block | 3 | {outcome.seconds:.1f} | yes |")
    hung = outcome._replace(status=None, shown=False)
    assert faults.table([hung], 40).endswith("| - | hung (killed at 40 s) | no |")
