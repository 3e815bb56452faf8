"""The OpenCL backend's kernel table: every kernel module registers into it."""

import hal

kernels = hal.KernelTable("opencl")
kernels.register_staged_collectives()  # collectives go through host memory


def supported(op: str, among=None) -> list:
    """The dtypes an op accepts that OpenCL can hold (no bfloat16), optionally within `among`."""
    from hal import dtypes as dt
    from hal import ops

    return [d for d in ops.spec(op).dtypes
            if d != dt.bfloat16 and (among is None or d in among)]
