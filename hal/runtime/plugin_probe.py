"""A plugin's first load runs in a child process, so that one which crashes the interpreter
(a segfault in its import, an abort in its driver) cannot take hal down.

The child does what hal does in-process before a device opens: import the entry point,
make the backend, ask `why_unavailable`, then `device_count` and `_load_kernels`. If it
dies, by a signal or an exit no exception raised, the stage and the signal are the
plugin's reason for being unavailable. Exceptions and hangs are not its business: the
registry's watched load reports them as before. The verdict (crashed or not) is cached
under `settings.cache_dir/plugins`, keyed by the distribution's name and version, the
module file's path, mtime and size, and the interpreter, so a plugin is probed once per
version, not on every import.

Entry points of hal's own distribution (the `backends` package of this repository) are
not probed: they import no vendor library at import time (a test holds them to that) and
CI loads each, while an editable install would re-probe them on every edit. Entry points
without a distribution (made in code) have no version to key a verdict by, and are not
probed either.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from .settings import settings

if TYPE_CHECKING:  # the probe's own imports wait for a plugin to probe (start-up: ~4 MB)
    from importlib.machinery import ModuleSpec
    from importlib.metadata import EntryPoint

PROJECT = "hal"  # the distribution of hal itself (pyproject.toml's name)
MARK = "hal-probe-stage:"  # the child's progress lines; a plugin may print too

CHILD = f"""
import importlib.metadata, json, sys
sys.path[:] = json.loads(sys.argv[1])
def stage(name):
    print({MARK!r}, name, flush=True)
try:
    stage("import")
    factory = importlib.metadata.EntryPoint("probe", sys.argv[2], "hal.backends").load()
    stage("creating the backend")
    backend = factory()
    stage("why_unavailable")
    if backend.why_unavailable() is None:
        stage("device_count")
        backend.device_count()
        stage("loading its kernels")
        backend._load_kernels()
except BaseException:
    pass  # an exception is reported by the load in hal's own process, with its message
stage("done")
"""


def crash(point: EntryPoint) -> str | None:
    """Why the plugin must not be loaded in this process (it crashed or hung in the child),
    or None when it may be."""
    dist = getattr(point, "dist", None)
    if dist is None or dist.name == PROJECT:
        return None
    module = _module_file(point.module)
    if module is None:
        return None  # it will not import: the load here says ModuleNotFoundError
    import hashlib

    stat = module.stat()
    key = {"distribution": dist.name, "version": dist.version, "entry_point": point.value,
           "module": str(module), "mtime_ns": stat.st_mtime_ns, "size": stat.st_size,
           "python": sys.executable}
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    verdict_file = settings.cache_dir / "plugins" / f"{point.name}-{digest}.json"
    try:
        return json.loads(verdict_file.read_text())["crash"]
    except (OSError, ValueError, KeyError, TypeError):
        pass  # not probed yet (or an unreadable verdict): probe now
    reason, lasting = _probe(point, f"{dist.name} {dist.version}", verdict_file)
    if lasting:
        _write(verdict_file, {"key": key, "crash": reason})
    return reason


def _probe(point: EntryPoint, release: str, verdict_file: Path) -> tuple[str | None, bool]:
    """(why the plugin cannot be loaded here or None, whether that verdict lasts)."""
    import subprocess

    try:
        done = subprocess.run([sys.executable, "-c", CHILD, json.dumps(sys.path), point.value],
                              capture_output=True, text=True, timeout=settings.probe_timeout)
        out, code = done.stdout, done.returncode
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else e.stdout
        stage = _last_stage(out or "")
        return (f"did not answer within {settings.probe_timeout:g} s at {stage} when probed "
                "in a child process (HAL_PROBE_TIMEOUT)"), False
    stage = _last_stage(out)
    if stage == "done":
        return None, True
    how = _signal_name(-code) if code < 0 else f"exit code {code} without an exception"
    return (f"crashed at {stage}: {how} (hal probes a plugin in a child process first; in "
            f"hal's own process this would have ended it). Fix or upgrade {release}, or "
            f"uninstall it (pip uninstall {release.split()[0]}); hal probes it again when its "
            f"version or module file changes, or when {verdict_file} is deleted"), True


def _signal_name(number: int) -> str:
    import signal

    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _last_stage(out: str) -> str:
    stages = [line[len(MARK):].strip() for line in out.splitlines() if line.startswith(MARK)]
    return stages[-1] if stages else "start-up"


def _module_file(module: str) -> Path | None:
    """The file `module` imports from, found without importing it or its packages."""
    path, spec = None, None
    parts = module.split(".")
    for i in range(len(parts)):
        spec = _find(".".join(parts[: i + 1]), path)
        if spec is None:
            return None
        path = spec.submodule_search_locations
    return Path(spec.origin) if spec.has_location and spec.origin else None


def _find(name: str, path) -> ModuleSpec | None:
    for finder in sys.meta_path:
        find_spec = getattr(finder, "find_spec", None)
        spec = find_spec(name, path) if find_spec else None
        if spec is not None:
            return spec
    return None


def _write(file: Path, verdict: dict) -> None:
    """Write the verdict atomically; a cache that cannot be written means probing again."""
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        partial = file.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(json.dumps(verdict))
        partial.replace(file)
    except OSError:
        pass
