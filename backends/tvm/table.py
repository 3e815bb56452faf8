"""The TVM backend's kernel table: every kernel module registers into it."""

import hal

kernels = hal.KernelTable("tvm")
kernels.register_staged_collectives()  # collectives go through host memory
