"""The OpenCL backend's kernel table: every kernel module registers into it, for the dtypes
each op accepts (the backend's gaps, bfloat16 and float64 without cl_khr_fp64, are
declared once, in `OpenCLBackend.unsupported_on`)."""

import hal

kernels = hal.KernelTable("opencl")
kernels.register_staged_collectives()  # collectives go through host memory

