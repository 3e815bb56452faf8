"""Benchmark suites: one module per suite, found by name (`hal bench --suite NAME`).

A suite module has a docstring saying what it measures and a `workloads()` function
returning `benchmarks.workload.Workload`s. Each workload builds seeded host inputs for a
dtype together with the work of one call (FLOPs, bytes, items), runs on device tensors
through hal, and names a numpy reference its output is checked against before timing.
Mark a workload `peak="gflops"` or `peak="gbps"` when its best rate is a device peak.
"""
