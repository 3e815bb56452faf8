"""docs/bring-up.md: every example on the page runs and does what the page says.

The `python` blocks run in order as one script; each `console` block's `$ ` lines run in
one scratch directory, in order, and must exit 0. `pip install -e` lines are what
`ci/setup.sh` already did: the test checks the package is installed instead of
installing it into the environment under test. The `toml` block must be the entry point
the example package really declares.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "bring-up.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def blocks(language: str) -> list[str]:
    """The bodies of the page's fenced blocks in `language`, in order."""
    return [body for lang, body in FENCE.findall(DOC.read_text()) if lang == language]


def commands() -> list[str]:
    """The `$ ` lines of the console blocks, in order."""
    return [line[2:] for body in blocks("console") for line in body.splitlines()
            if line.startswith("$ ")]


def test_the_python_examples_run(tmp_path):
    script = tmp_path / "bring_up.py"
    script.write_text("\n\n".join(blocks("python")))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          cwd=tmp_path, timeout=300,
                          env={**os.environ, "HAL_CACHE_DIR": str(tmp_path / "cache")})
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Warning" not in done.stderr, done.stderr[-3000:]  # the page shows no noise
    assert "'primitive': " in done.stdout and "= exp(" in done.stdout  # the prints ran


def test_the_entry_point_is_the_packages():
    (toml,) = blocks("toml")
    declared = (ROOT / "examples" / "numba-backend" / "pyproject.toml").read_text()
    assert toml.strip() in declared


@pytest.mark.slow
def test_the_commands_run(tmp_path):
    try:
        importlib.metadata.distribution("hal-numba")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("hal-numba is not installed here: ci/setup.sh installs it")
    env = {**os.environ, "HAL_CACHE_DIR": str(tmp_path / "cache"), "HAL_FALLBACK": "allow",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    ran = []
    for command in commands():
        if command.startswith("pip install -e "):
            assert (ROOT / shlex.split(command)[-1]).is_dir()  # installed by ci/setup.sh
            continue
        done = subprocess.run(command, shell=True, capture_output=True, text=True,
                              cwd=tmp_path, env=env, timeout=600)
        assert done.returncode == 0, f"{command}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        ran.append(command.split()[1])
    assert ran == ["devices", "conformance", "bench", "bench", "report", "publish"]
    cells = {(c["op"], c["dtype"]): c for r in json.loads(
        (tmp_path / "conformance.json").read_text()) for c in r["cells"]}
    assert (cells["add", "float32"]["status"], cells["add", "float32"]["ran"]) == ("pass",
                                                                                  "kernel")
    graphs = {g["graph"]: g for r in json.loads((tmp_path / "conformance.json").read_text())
              for g in r["graphs"]}
    assert {(name, g["status"], g["path"]) for name, g in graphs.items()} == {
        ("random-0", "pass", "replay"), ("transformer_block", "pass", "replay")}
    report = (tmp_path / "report" / "report-details.md").read_text()
    assert "numba" in report and "Conformance" in report
    published = list((tmp_path / "reference" / "numba").iterdir())
    assert any(p.suffix == ".jsonl" for p in published)
