"""Derive kernels.SUPPORTED: the op x dtype cells the CPU EP runs as the reference does.

    python -m backends.onnxruntime.probe [--examples N]

Every op gets the session kernel for every dtype it accepts (complex excepted) on a probe
device, and the conformance kit checks each cell there. The cells that pass are printed as
the table for kernels.py; the others are listed with why: no ONNX export, no ONNX Runtime
kernel (NOT_IMPLEMENTED), or a result that differs from the reference (a semantic gap to
fix in the export or to report).
"""

from __future__ import annotations

import argparse
import textwrap

from hal import conformance as kit
from hal import dtypes as dt
from hal import ops

from . import OnnxRuntimeBackend
from .kernels import table


def candidates() -> dict[str, tuple[str, ...]]:
    """Every op the backend does not declare unsupported, for its real dtypes."""
    gaps = OnnxRuntimeBackend.unsupported
    return {s.name: tuple(d.name for d in s.dtypes if d.name not in gaps)
            for s in ops.specs() if s.name not in gaps}


def probe(examples: int) -> tuple[dict[str, tuple[str, ...]], list[str]]:
    """(the cells that pass as op -> dtypes, a line per cell that does not)."""

    class Probe(OnnxRuntimeBackend):
        kernels = table(candidates())

    device = Probe().open(0)
    passed: dict[str, tuple[str, ...]] = {}
    failed = []
    for op, dtypes in candidates().items():
        for name in dtypes:
            cell = kit.check_cell(device, ops.spec(op), dt.dtype(name), examples)
            if cell.status == kit.PASS and cell.ran == "kernel":
                passed[op] = (*passed.get(op, ()), name)
            else:
                failed.append(f"{op} {name}: {cell.status} ({cell.ran}) {cell.error[:240]}")
    return passed, failed


def main() -> None:
    """Print the table and the cells left out."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=10, help="hypothesis cases per cell")
    passed, failed = probe(parser.parse_args().examples)
    print("\n".join(failed))
    print("SUPPORTED = {")
    for op, dtypes in passed.items():
        names = ", ".join(f'"{d}"' for d in dtypes)
        print("\n".join(textwrap.wrap(f'    "{op}": ({names}{"," * (len(dtypes) == 1)}),',
                                       99, subsequent_indent=" " * 8)))
    print("}")


if __name__ == "__main__":
    main()
