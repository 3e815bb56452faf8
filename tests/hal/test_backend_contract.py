"""The backend contract is written once: backends/null.py shows every hook, README.md's
"Add a backend" says the same, and its per-op params table covers every op's params."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import hal
from backends.null import NullBackend, NullDevice

ROOT = Path(__file__).parents[2]
DEVICE_HOOKS = ("_alloc", "_free", "_copy_in", "_copy_out", "_empty", "_upload", "_download",
                "_pool_stats", "empty_cache", "from_dlpack", "synchronize", "_record_event",
                "_elapsed", "_describe")
DEVICE_SETTINGS = ("timer", "oom_errors", "max_allocation")
BACKEND_HOOKS = ("why_unavailable", "device_count", "_load_kernels", "_open_device",
                 "compile", "compile_fused", "capture", "replay", "unsupported_on", "dtypes")
BACKEND_SETTINGS = ("name", "api_version", "kernels", "unsupported")
DESCRIBE_KEYS = {"name", "vendor", "driver_version", "runtime_version", "memory_bytes",
                 "memory", "compute_units", "extra"}


def _section(title: str) -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index(f"## {title}\n")
    return text[start:text.index("\n## ", start + 1)]


def test_null_shows_every_hook_with_a_vendor_line():
    source = (ROOT / "backends" / "null.py").read_text()
    for cls, hooks, settings in ((NullDevice, DEVICE_HOOKS, DEVICE_SETTINGS),
                                 (NullBackend, BACKEND_HOOKS, BACKEND_SETTINGS)):
        for hook in hooks:
            assert hook in vars(cls), f"{cls.__name__} does not show {hook}"
            assert "Vendor" in inspect.getdoc(vars(cls)[hook]), hook
        for setting in settings:
            assert re.search(rf"\n    {setting}\b.*=.*# Vendor:", source) or setting == "kernels"
    base_hooks = {n for n, v in vars(hal.Device).items()
                  if callable(v) and n.startswith("_") and not n.startswith("__")}
    raw_internal = {"_allocating", "_alloc_or_oom", "_check_fits", "_check_room"}
    assert base_hooks - raw_internal <= set(DEVICE_HOOKS)


def test_readme_names_every_hook_and_describe_key():
    section = _section("Add a backend")
    for name in DEVICE_HOOKS + DEVICE_SETTINGS + BACKEND_HOOKS + ("unsupported",):
        assert f"`{name}" in section, name
    for key in DESCRIBE_KEYS:
        assert f"`{key}`" in section, key
    assert set(NullDevice(NullBackend(), 0, 1)._describe()) == DESCRIBE_KEYS
    assert '[project.entry-points."hal.backends"]' in section
    assert '[project.entry-points."hal.backends"]' in (ROOT / "backends" / "null.py").read_text()


def test_per_op_params_table_covers_every_keyword_of_every_op():
    rows = {}
    for line in _section("Add a backend").splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if line.startswith("| `") and len(cells) == 3:
            for param in re.findall(r"`(\w+)`", cells[0]):
                rows.setdefault(param, set()).update(o.strip() for o in cells[1].split(","))
    for spec in hal.ops.specs():
        for p in inspect.signature(spec.meta).parameters.values():
            if p.kind is p.KEYWORD_ONLY:
                assert spec.name in rows.get(p.name, ()), (
                    f"README's per-op params table has no row for {spec.name}'s {p.name!r}")
