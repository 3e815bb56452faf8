"""Workloads written on hal Tensors that run on every backend."""
