"""The floor plan holds: no import circles, no module reaching into another's private
names, and the layers import-linter checks (pyproject.toml, `lint-imports` in ci/run).

Imports made inside functions count as edges, as they do for import-linter: a circle
hidden in a function body is still a circle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("hal", "backends", "frontends", "benchmarks", "reports")


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


MODULES = _modules()


def _target(module: str, path: Path, node: ast.ImportFrom) -> str:
    """The absolute module a `from ... import` names."""
    if not node.level:
        return node.module or ""
    base = module.split(".")
    base = base[: len(base) - node.level + (path.name == "__init__.py")]
    return ".".join(base + ([node.module] if node.module else []))


def _project_module(name: str) -> str | None:
    """The project module that `name` is or lies in, or None for an outside one."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str, path: Path):
    """(project module, name imported from it or None, local name) for every import."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _project_module(alias.name)
                if target:
                    yield target, None, alias.asname or alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
            base = _target(module, path, node)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                target = _project_module(sub if sub in MODULES else base)
                if target:
                    yield (target, None if sub in MODULES else alias.name,
                           alias.asname or alias.name)


def _graph() -> dict[str, set[str]]:
    return {m: {t for t, _, _ in _imports(m, p) if t != m} for m, p in MODULES.items()}


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while not component or component[-1] != v:
                component.append(stack.pop())
            if len(component) > 1:
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def test_no_import_circles():
    assert _circles(_graph()) == []


def test_no_module_uses_another_modules_private_names():
    """Neither `from m import _x` nor `m._x` for a project module m (other than itself)."""
    found = []
    for module, path in MODULES.items():
        aliases = set()  # local names bound to another project module
        for target, name, local in _imports(module, path):
            if target == module:
                continue
            if name is None:
                aliases.add(local)
            elif _private(name):
                found.append(f"{module}: from {target} import {name}")
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                    and node.value.id in aliases and _private(node.attr):
                found.append(f"{module}:{node.lineno}: {node.value.id}.{node.attr}")
    assert found == []


@pytest.mark.parametrize("attribute", ["_data", "_wrap"])
def test_nothing_outside_hal_touches_a_tensors_private_storage(attribute):
    """Backends reach a Tensor's array as `tensor.native` and wrap one with `Tensor.wrap`."""
    users = [f"{m}:{n.lineno}" for m, p in MODULES.items() if not m.startswith("hal")
             for n in ast.walk(ast.parse(p.read_text()))
             if isinstance(n, ast.Attribute) and n.attr == attribute]
    assert users == []


def test_the_circle_finder_finds_a_circle():
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
