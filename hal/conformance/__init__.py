"""The conformance kit: `hal conformance --backend NAME`, and the same checks in pytest.

    report = hal.conformance.run("opencl")
    print(hal.conformance.matrix(report))
"""

from .cells import FAIL, FALLBACK, PASS, UNSUPPORTED, Cell, Layer, Report, check_cell, run
from .matrix import cell_symbol, layers, matrix

__all__ = ["FAIL", "FALLBACK", "PASS", "UNSUPPORTED", "Cell", "Layer", "Report", "cell_symbol",
           "check_cell", "layers", "matrix", "run"]
