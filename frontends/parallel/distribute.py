"""distribute(): the block inside which ops on DTensors run as their distributed programs.

An interpreter (`Distribute`) sits innermost on hal's dispatch stack and hands every op
with a DTensor operand to the propagation rules (rules.py); other ops pass below.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping

from hal import Tensor
from hal.dispatch import Interpreter, interpret

from .dtensor import SCOPES, DTensor, Scope
from .rules import propagate


class Distribute(Interpreter):
    """The innermost interpreter inside `distribute()`: ops on DTensors go to the rules
    (with `sequence_parallel`, a row-parallel linear's partial output is reduce-scattered
    along the sequence axis instead of all-reduced: rules.py)."""

    def __init__(self, sequence_parallel: bool = False) -> None:
        super().__init__()
        self.sequence_parallel = sequence_parallel

    def process(self, spec, device, args, params, out):
        """Ops without a DTensor operand pass below; the others are propagated."""
        for a in args:
            if type(a) is DTensor:
                return propagate(spec, args, params, out,
                                 sequence_parallel=self.sequence_parallel), "distributed"
        return self.below.process(spec, device, args, params, out)


@contextlib.contextmanager
def distribute(sequence_parallel: bool = False,
               parameters: Mapping[str, Tensor] | None = None) -> Iterator[Scope]:
    """Inside the block, ops on DTensors run as their distributed programs (Megatron's
    sequence parallelism with `sequence_parallel`); it yields the block's `Scope`, where the
    replicated `parameters` (local tensors by name) given for partial gradients are noted as
    they are used."""
    scope = Scope(parameters)
    SCOPES.append(scope)
    try:
        with interpret(Distribute(sequence_parallel)):
            yield scope
    finally:
        SCOPES[:] = [s for s in SCOPES if s is not scope]
