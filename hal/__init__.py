"""hal: one device abstraction and one op set for AI and scientific computing.

    import hal
    x = hal.asarray([1.0, 2.0, 3.0], device="cpu")
    hal.exp(x), hal.fft.fft(x), hal.nn.softmax(x)

The op set (hal/ops/) has numpy reference semantics; backends plug in through the
`hal.backends` entry point group; `hal conformance` certifies a backend.
"""

import math

from . import collectives, fft, linalg, nn, onnx, ops, random
from .compile import trace
from .compile.graph import Graph
from .compile.jit import Jitted, RetraceWarning, jit, to_static
from .creation import (
    arange,
    asarray,
    empty,
    empty_like,
    eye,
    from_dlpack,
    full,
    full_like,
    linspace,
    ones,
    ones_like,
    zeros,
    zeros_like,
)
from .dispatch import decomposition, fallback_counts, fallback_policy, observe, placement
from .functions import (
    ARRAY_API_VERSION,
    abs,
    acos,
    acosh,
    add,
    all,
    any,
    argmax,
    argmin,
    argsort,
    asin,
    asinh,
    astype,
    atan,
    atan2,
    atanh,
    bitwise_and,
    bitwise_invert,
    bitwise_left_shift,
    bitwise_or,
    bitwise_right_shift,
    bitwise_xor,
    broadcast_to,
    ceil,
    clip,
    complex,
    concat,
    conj,
    copysign,
    cos,
    cosh,
    cumulative_sum,
    dequantize_linear,
    divide,
    dynamic_update_slice,
    equal,
    erf,
    exp,
    expand_dims,
    expm1,
    floor,
    floor_divide,
    greater,
    greater_equal,
    hypot,
    imag,
    isfinite,
    isinf,
    isnan,
    less,
    less_equal,
    log,
    log1p,
    log2,
    log10,
    logaddexp,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    matmul,
    matrix_transpose,
    max,
    maximum,
    min,
    minimum,
    multiply,
    negative,
    not_equal,
    op,
    pad,
    permute_dims,
    positive,
    pow,
    power,
    qmatmul,
    quantize_linear,
    real,
    remainder,
    reshape,
    round,
    sign,
    signbit,
    sin,
    sinh,
    slice,
    sort,
    sqrt,
    square,
    squeeze,
    stack,
    subtract,
    sum,
    take,
    tan,
    tanh,
    trunc,
    where,
)
from .info import __array_namespace_info__
from .linalg import tensordot, vecdot
from .manipulation import (
    broadcast_arrays,
    flip,
    meshgrid,
    moveaxis,
    repeat,
    tile,
    tril,
    triu,
    unstack,
)
from .ops import KernelTable, shapes
from .runtime import dtypes, host
from .runtime.backend import API_VERSION, Backend
from .runtime.capabilities import Capabilities
from .runtime.device import Device
from .runtime.dtypes import (
    ALL,
    BOOL,
    COMPLEX,
    FLOATS,
    INTEGERS,
    NUMERIC,
    REALS,
    bfloat16,
    bool_,
    can_cast,
    complex64,
    complex128,
    dtype,
    finfo,
    float16,
    float32,
    float64,
    iinfo,
    int8,
    int32,
    int64,
    isdtype,
    promote,
    result_type,
    uint8,
)
from .runtime.errors import (
    ArgumentError,
    BackendUnavailable,
    DeviceError,
    DomainError,
    FallbackRefused,
    FallbackWarning,
    HalError,
    HalOutOfMemory,
    KernelError,
    PluginWarning,
    ShapeError,
    UnsupportedDType,
    UnsupportedOp,
)
from .runtime.memory import Allocation, Buffer, MemoryStats
from .runtime.registry import available_backends, backend, backends, default_device, devices
from .runtime.registry import resolve_device as device
from .runtime.settings import settings
from .searching import (
    nonzero,
    searchsorted,
    unique_all,
    unique_counts,
    unique_inverse,
    unique_values,
)
from .statistics import prod, std
from .tensor import Tensor

bool = bool_
mean, var, roll = nn.mean, nn.var, nn.roll
e, inf, nan, pi, newaxis = math.e, math.inf, math.nan, math.pi, None
__array_api_version__ = ARRAY_API_VERSION
__version__ = "0.1.0"
