"""Workloads and suites: what a benchmark measures, and how suites are found.

A suite is a module `benchmarks/suites/<name>.py` whose docstring describes it and whose
`workloads()` returns a list of `Workload`s. A workload builds seeded host inputs for a
dtype (with the work one call does), runs on device tensors, and has a numpy reference
the output is checked against before any time counts.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import pkgutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import numpy as np

import hal
from benchmarks import suites

# Normwise relative error allowed per output dtype: max|out - ref| / max|ref|.
TOLERANCE = {
    "float16": 1e-2,
    "bfloat16": 5e-2,
    "float32": 1e-4,
    "complex64": 1e-4,
    "float64": 1e-10,
    "complex128": 1e-10,
}


class SuiteError(ValueError):
    """An unknown suite, or a suite module that does not follow the protocol."""


class NotMeasuredHere(hal.UnsupportedOp):
    """A workload a suite leaves out on a backend or machine, with the reason (one call
    would take too long there, or the figure needs hardware this machine lacks); the
    harness records it as skipped with this text."""


@dataclass
class Case:
    """Inputs of one workload for one dtype, and the work one call does.

    `flops` are floating-point operations, `bytes` the minimum bytes moved to and from
    memory, `items` the items processed (elements, rows, transforms) per call.
    """

    inputs: list[np.ndarray]
    flops: float | None = None
    bytes: float | None = None
    items: float | None = None


@dataclass
class Workload:
    """One benchmark: a named computation with params, dtypes, inputs, run and reference.

    `build(dtype)` makes a Case of host inputs; `run(*tensors, **options)` computes on the
    device; `reference(*arrays, **options)` computes the expected result with numpy in
    double precision. `peak` marks workloads whose best rate is the device's practical
    peak: "gflops" (per dtype) or "gbps". `quality(out, expected)` returns accuracy measures
    beyond the normwise error, by name, recorded in the measurement's check. `footprint`
    asks for the peak memory of a call, measured in a fresh process
    (`benchmarks.footprint`) and recorded in the metrics; `first_call` asks for the time of
    the first call in a fresh process, with empty caches and with the caches an earlier
    process left (`benchmarks.first_call`), recorded in the metrics. `facts(*tensors,
    **options)`, called once after the timing with the inputs, returns what the workload
    reports about itself besides time and accuracy (a count, a choice it made, a
    projection), recorded in the measurement's facts. `single_stream` marks an inference
    workload timed as MLPerf's single-stream scenario: one query (call) per sample, many
    of them (`TimingOptions.queries`), so the samples give latency percentiles.
    `full_only` says why a workload is left out of `--quick` runs (too slow for them); such
    a run records it as skipped with that reason.
    """

    name: str
    params: dict[str, Any]
    dtypes: Sequence[str]
    build: Callable[[np.dtype], Case]
    run: Callable[..., Any]
    reference: Callable[..., np.ndarray]
    options: dict[str, Any] = field(default_factory=dict)
    tolerance_scale: float = 1.0
    peak: str | None = None
    quality: Callable[[np.ndarray, np.ndarray], dict[str, float]] | None = None
    footprint: bool = False
    first_call: bool = False
    facts: Callable[..., dict[str, float | str]] | None = None
    single_stream: bool = False
    full_only: str | None = None

    def tolerance(self, dtype: str) -> float:
        """Allowed normwise relative error of the output for `dtype`."""
        return TOLERANCE.get(dtype, 0.0) * self.tolerance_scale


def only_on(workload: Workload, backends: tuple[str, ...], why: str) -> Workload:
    """`workload` measured on `backends` only; elsewhere skipped with `why`."""

    def run(*tensors, **options):
        name = tensors[0].device.backend.name
        if name not in backends:
            raise NotMeasuredHere(f"{workload.name} is measured on {', '.join(backends)} "
                                  f"only, not {name}: {why}")
        return workload.run(*tensors, **options)

    return dataclasses.replace(workload, run=run)


def random_array(shape: tuple[int, ...], dtype: np.dtype, seed: int) -> np.ndarray:
    """Seeded standard-normal host data of `dtype` (complex: independent parts)."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    values = rng.standard_normal(shape, dtype=np.float64)
    if dtype.kind == "c":
        values = values + 1j * rng.standard_normal(shape, dtype=np.float64)
    return values.astype(dtype)


def suite_names() -> list[str]:
    """Names of the suites in `benchmarks/suites/`."""
    return sorted(m.name for m in pkgutil.iter_modules(suites.__path__) if not m.ispkg)


def load_suite(name: str) -> ModuleType:
    """The suite module `name`; SuiteError listing the valid names if there is none."""
    if name not in suite_names():
        raise SuiteError(f"unknown suite {name!r}; suites: {', '.join(suite_names())}")
    module = importlib.import_module(f"benchmarks.suites.{name}")
    if not callable(getattr(module, "workloads", None)):
        raise SuiteError(f"suite module {module.__name__} has no workloads() function")
    return module


def suite_workloads(name: str) -> list[Workload]:
    """The workloads of suite `name`."""
    return list(load_suite(name).workloads())


def params_key(params: dict[str, Any]) -> str:
    """A workload's params as canonical JSON (how a child process finds the workload)."""
    return json.dumps(params, sort_keys=True, default=str)


def find_workload(suite: str, name: str, params: str, dtype: str) -> Workload:
    """The workload `name` of `suite` for `dtype` whose `params_key` is `params`; SuiteError
    unless exactly one matches."""
    matches = [w for w in suite_workloads(suite) if w.name == name
               and params_key(w.params) == params and dtype in w.dtypes]
    if len(matches) != 1:
        raise SuiteError(f"suite {suite} has {len(matches)} workloads named {name} with params "
                         f"{params} for {dtype}; a fresh process must find exactly one")
    return matches[0]
