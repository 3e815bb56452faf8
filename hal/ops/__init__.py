"""The op set, declared once: name, kind, dtypes, output rule, numpy reference, tolerances.

`spec.py` holds the vocabulary (OpSpec, the registry, dtype rules, tolerances, the one
half-precision lift) and each family module declares its ops: elementwise, reductions,
movement, scans, linalg, fft, quant, nn, conv and collectives, in that order. `shapes.py` is
the shape arithmetic the output rules share, and `kernels.py` the KernelTable through
which a backend registers kernels by these names: nothing about an op is repeated per
backend.

    hal.ops.spec("softmax")       # the declaration: dtypes, meta, reference, tolerance
    hal.ops.names("composite")    # every composite's name
"""

# The order of these imports is the order of declaration (hal.ops.names()).
# isort: off
from . import elementwise, reductions, movement, scans, linalg, fft, quant, nn, conv, collectives
# isort: on

from .conv import LAYOUTS
from .fft import NORMS
from .kernels import KernelTable
from .movement import PAD_MODES, slice_index, update_window
from .nn import ACTIVATIONS, GELU_APPROXIMATIONS, causal_mask
from .quant import dynamic_qparams
from .spec import (
    COMPOSITE,
    EXTENDED,
    HALF,
    PRIMITIVE,
    OpSpec,
    check_dtype,
    in_float32,
    lift,
    names,
    spec,
    specs,
)
