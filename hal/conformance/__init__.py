"""The conformance kit: `hal conformance --backend NAME`, and the same checks in pytest.

    report = hal.conformance.run("opencl")
    print(hal.conformance.matrix(report), hal.conformance.graph_table(report))
"""

from .cells import check_cell
from .graphs import check_graph
from .kit import check, run
from .matrix import cell_symbol, graph_table, layers, matrices, matrix
from .records import FAIL, FALLBACK, PASS, UNSUPPORTED, Cell, GraphCell, Layer, Report

__all__ = ["FAIL", "FALLBACK", "PASS", "UNSUPPORTED", "Cell", "GraphCell", "Layer", "Report",
           "cell_symbol", "check", "check_cell", "check_graph", "graph_table", "layers",
           "matrices", "matrix", "run"]
