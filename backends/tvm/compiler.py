"""Kernels compiled once per (op, input shapes and dtypes, params, target) and kept: in memory
for this process and as shared libraries under the cache directory for the next one.

A kernel is a TE builder: `build(*placeholders, **params) -> te.Tensor`. Compiling it
makes a PrimFunc, applies the tuned schedule from the tuning database if it has one for
this workload and target (tuning.py), else the default schedule (schedule.py), builds it
with LLVM and exports `<cache>/tvm/<target>/<op>-<hash>.so` with a JSON sidecar naming the
outputs and which schedule it has. `hal tune` rewrites these files with tuned builds.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hal import HalError
from hal import dtypes as dt

from . import schedule
from .target import TargetInfo


@functools.cache
def source_hash() -> str:
    """A hash of this backend's source: kernels built by other code are not reused."""
    digest = hashlib.sha1()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


@dataclass
class Compiled:
    """A built kernel: its packed function and the shape and dtype of its one output."""

    function: object
    shape: tuple[int, ...]
    dtype: np.dtype
    schedule: str  # "default" or "tuned"
    path: Path | None  # the shared library, where it could be exported
    executable: object = None  # what TVM built (None when loaded from a file)


@dataclass
class Workload:
    """What one compile needs to be repeated or tuned: its identity, PrimFunc and file."""

    op: str
    kernel: str  # the TE builder's name (an op may run several kernels)
    key: str
    func: object
    path: Path


class Compiler:
    """The kernel cache of one target."""

    def __init__(self, target: TargetInfo, cache_dir: Path):
        import tvm

        self.target = target
        self.directory = cache_dir / "tvm" / f"{target.key}-tvm{tvm.__version__}"
        self._memory: dict[tuple, Compiled] = {}
        self._by_identity: dict[str, tuple] = {}  # a workload's identity -> its memory key
        self._captured: list[Workload] | None = None
        self.use_tuned = True  # False: compile with the default schedule, whatever is tuned
        self.builds = 0  # compiles in this process (cache misses of memory and disk)

    def kernel(self, op: str, build: Callable, inputs: tuple, params: tuple) -> Compiled:
        """The compiled kernel of `build` for inputs ((shape, dtype), ...) and params."""
        key = (op, build, inputs, params, self.use_tuned)
        compiled = self._memory.get(key)
        if compiled is None or self._captured is not None:
            identity = self._identity(op, build, inputs, params)
            self._by_identity[identity] = key
            compiled = self._memory[key] = self._load_or_build(op, identity, build, inputs,
                                                               params)
        return compiled

    def current(self, workload: Workload) -> Compiled:
        """The kernel this process runs for a captured workload."""
        return self._memory[self._by_identity[workload.key]]

    def rebuild(self, workload: Workload, tuned_mod=None) -> Compiled:
        """Build a workload with a tuned schedule (None: the default one), replacing its
        cached kernel in memory and on disk."""
        compiled = self.build(workload.op, workload.key, workload.func, workload.path,
                              tuned_mod=tuned_mod, use_database=False)
        self._memory[self._by_identity[workload.key]] = compiled
        return compiled

    @contextlib.contextmanager
    def capture(self) -> Iterator[list[Workload]]:
        """Collect the workload of every kernel used inside the block (for tuning)."""
        self._captured = found = []
        try:
            yield found
        finally:
            self._captured = None

    def _identity(self, op: str, build: Callable, inputs: tuple, params: tuple) -> str:
        text = repr((source_hash(), op, f"{build.__module__}.{build.__qualname__}",
                     [(s, d.name) for s, d in inputs], params))
        return text

    def _load_or_build(self, op, identity, build, inputs, params) -> Compiled:
        digest = hashlib.sha1(identity.encode()).hexdigest()[:20]
        path = self.directory / f"{op}-{digest}.so"
        if self._captured is not None:
            self._captured.append(Workload(op, build.__name__, identity,
                                           self.prim_func(op, build, inputs, params), path))
        if not self.use_tuned:
            func = self.prim_func(op, build, inputs, params)
            return self._compile(op, func, "default", schedule.default(func))
        loaded = self._load(path, identity)
        if loaded is not None:
            return loaded
        func = self.prim_func(op, build, inputs, params)
        return self.build(op, identity, func, path)

    def prim_func(self, op: str, build: Callable, inputs: tuple, params: tuple):
        """The PrimFunc of a kernel: placeholders for the inputs, then the outputs."""
        from tvm import te

        holders = [te.placeholder(shape, dtype.name, name=f"in{i}")
                   for i, (shape, dtype) in enumerate(inputs)]
        try:
            out = build(*holders, **dict(params))
        except HalError:
            raise
        except Exception as e:
            raise HalError(f"{op}: the TVM kernel could not be defined for inputs "
                           f"{_describe(inputs)} {dict(params)}: {type(e).__name__}: {e}") from e
        return te.create_prim_func([*holders, out])

    def build(self, op: str, identity: str, func, path: Path, tuned_mod=None,
              use_database: bool = True) -> Compiled:
        """Compile a PrimFunc (tuned module if given, else the tuning database's schedule or
        the default one), export it to `path` and keep it in memory."""
        from . import tuning

        how = "tuned"
        mod = tuned_mod or (tuning.lookup(func, self.target) if use_database else None)
        if mod is None:
            how, mod = "default", schedule.default(func)
        compiled = self._compile(op, func, how, mod)
        compiled.path = self._export(compiled.executable, path, identity, compiled.shape,
                                     compiled.dtype, how)
        compiled.executable = None  # exported: only the function is needed from here on
        return compiled

    def _compile(self, op: str, func, how: str, mod) -> Compiled:
        import tvm

        try:
            executable = tvm.compile(mod, target=self.target.target)
            function = executable.jit()["main"]
        except Exception as e:
            raise HalError(f"{op}: TVM failed to compile the kernel for {self.target.key} "
                           f"({how} schedule): {type(e).__name__}: {str(e)[:2000]}") from e
        self.builds += 1
        shape, dtype = _output(func)
        return Compiled(function, shape, dtype, how, None, executable)

    def _export(self, executable, path: Path, identity: str, shape, dtype, how: str
                ) -> Path | None:
        """Write the shared library and its sidecar atomically; None if it cannot be written."""
        tmp = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".so", delete=False) as f:
                tmp = Path(f.name)
            executable.export_library(str(tmp))
            meta = {"key": identity, "schedule": how, "shape": list(shape),
                    "dtype": dtype.name}
            path.with_suffix(".json").write_text(json.dumps(meta))
            os.replace(tmp, path)
            return path
        except Exception:  # no C compiler or a read-only cache: the kernel still runs
            if tmp is not None:
                tmp.unlink(missing_ok=True)
            return None

    def _load(self, path: Path, identity: str) -> Compiled | None:
        """The kernel exported by an earlier process, or None (missing, stale or unreadable)."""
        import tvm

        try:
            meta = json.loads(path.with_suffix(".json").read_text())
            if meta["key"] != identity or not path.exists():
                return None
            function = tvm.runtime.load_module(str(path))["main"]
        except Exception:  # a missing or damaged file is rebuilt
            return None
        return Compiled(function, tuple(meta["shape"]), dt.dtype(meta["dtype"]),
                        meta["schedule"], path)


def _output(func) -> tuple[tuple[int, ...], np.dtype]:
    """Shape and dtype of the PrimFunc's output: its last buffer."""
    out = list(func.params)[-1]  # TVM 0.27: a PrimFunc's params are its buffers
    return tuple(int(n) for n in out.shape), dt.dtype(str(out.dtype))


def _describe(inputs: tuple) -> str:
    return ", ".join(f"{d.name}{list(s)}" for s, d in inputs)
