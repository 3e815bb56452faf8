"""The conformance kit: `hal conformance --backend NAME`, and the same checks in pytest.

    report = hal.conformance.run("opencl")
    print(hal.conformance.matrix(report))
"""

from .cells import check_cell
from .kit import run
from .matrix import cell_symbol, layers, matrix
from .records import FAIL, FALLBACK, PASS, UNSUPPORTED, Cell, Layer, Report

__all__ = ["FAIL", "FALLBACK", "PASS", "UNSUPPORTED", "Cell", "Layer", "Report", "cell_symbol",
           "check_cell", "layers", "matrix", "run"]
