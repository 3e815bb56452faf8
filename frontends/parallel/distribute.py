"""distribute(): the block inside which ops on DTensors run as their distributed programs.

An interpreter (`Distribute`) sits innermost on hal's dispatch stack and hands every op
with a DTensor operand to the propagation rules (rules.py); other ops pass below.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from hal.dispatch import Interpreter, interpret

from .dtensor import ENTERED, DTensor
from .rules import propagate


class Distribute(Interpreter):
    """The innermost interpreter inside `distribute()`: ops on DTensors go to the rules."""

    def process(self, spec, device, args, params, out):
        """Ops without a DTensor operand pass below; the others are propagated."""
        for a in args:
            if type(a) is DTensor:
                return propagate(spec, args, params, out), "distributed"
        return self.below.process(spec, device, args, params, out)


@contextlib.contextmanager
def distribute() -> Iterator[None]:
    """Inside the block, ops on DTensors run as their distributed programs."""
    entered: dict = {}
    ENTERED.append(entered)
    try:
        with interpret(Distribute()):
            yield
    finally:
        ENTERED[:] = [e for e in ENTERED if e is not entered]  # by identity: dicts compare equal
