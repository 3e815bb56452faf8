"""ONNX export and import: hal graphs to ONNX models and back.

    import hal
    model = hal.onnx.export(f, x, path="f.onnx")   # traced, folded, composites kept whole
    proto = hal.onnx.to_onnx(hal.jit(f).graph(x))   # any hal.Graph
    m = hal.onnx.load("bert.onnx")                  # checked; initializers as numpy
    m.graph(x, mask)                                # a hal.Graph for these input shapes
    m(x, mask)                                      # compiled on x's device, run: [Tensor]

The onnx package is imported when one of these names is first used, not at `import hal`.
"""

import importlib

# name -> its module; the modules are named apart from the functions, so importing one
# directly cannot shadow hal.onnx.export or hal.onnx.load
_WHERE = {
    "to_onnx": "exporter", "export": "exporter", "OPSET": "exporter",
    "load": "loader", "Model": "loader", "SUPPORTED_OPS": "loader",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str):
    """The public names, importing their module (and onnx) on first use."""
    if name not in _WHERE:
        raise AttributeError(f"module 'hal.onnx' has no attribute {name!r}")
    module = importlib.import_module(f"{__name__}.{_WHERE[name]}")
    globals().update({n: getattr(module, n) for n, m in _WHERE.items() if m == _WHERE[name]})
    return globals()[name]
