"""The repro of a failing cell: a Python snippet that replays its case on the device and
prints the result beside the reference's."""

from __future__ import annotations

import numpy as np

from .. import ops
from ..runtime import dtypes as dt
from ..runtime.device import Device
from .inputs import Case


def repro(device: Device, spec: ops.OpSpec, case: Case | None) -> str:
    """A Python snippet that replays a failing case and prints actual and expected."""
    if case is None:
        return ""
    lines = ["import numpy as np", "import hal", "from hal.dispatch import call",
             "nan, inf = float('nan'), float('inf')", f"dev = hal.device({device.name!r})"]
    if case.origin:
        lines += ["import hal.conformance", f"hosts = {case.origin}.args"]
    names = []
    for i, a in enumerate(case.args):
        if isinstance(a, np.ndarray):
            host = f"hosts[{i}]" if case.origin else \
                f"np.array({a.tolist()!r}, dtype={_dtype_expr(a.dtype)})"
            lines.append(f"h{i} = {host}")
            if i in case.views and a.ndim:
                lines.append(f"b{i} = np.zeros(h{i}.shape[:-1] + (2 * h{i}.shape[-1],), "
                             f"h{i}.dtype); b{i}[..., ::2] = h{i}")
                lines.append(f"x{i} = hal.asarray(b{i}, device=dev)[..., ::2]")
            else:
                lines.append(f"x{i} = hal.asarray(h{i}, device=dev)")
            names.append(f"x{i}")
        else:
            names.append(repr(a))
    params = ", ".join(f"{k}={_value_expr(v)}" for k, v in case.params.items())
    args = ", ".join(names)
    lines.append(f"out = call(hal.ops.spec({spec.name!r}), {args}{', ' if params else ''}"
                 f"{params})")
    lines.append("print(out.numpy())")
    hosts = ", ".join(f"h{i}" if isinstance(a, np.ndarray) else repr(a)
                      for i, a in enumerate(case.args))
    lines.append(f"print(hal.ops.spec({spec.name!r}).evaluate({hosts}"
                 f"{', ' if params else ''}{params}))  # reference")
    return "\n".join(lines)


def _dtype_expr(d: np.dtype) -> str:
    return "hal.bfloat16" if d == dt.bfloat16 else f"np.{d.name}"


def _value_expr(v) -> str:
    return _dtype_expr(v) if isinstance(v, np.dtype) else repr(v)
