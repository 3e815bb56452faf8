"""ci/gpu-check where no package index is reachable: hal runs from the checkout through
ci/source_site.py (the entry points of pyproject.toml), and a machine without a usable GPU
gets exit 3 with the reason, quickly, before anything is installed or measured."""

from __future__ import annotations

import importlib.metadata
import os
import runpy
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import hal

ROOT = Path(__file__).resolve().parent.parent


def test_source_site_presents_the_checkout_with_pyprojects_entry_points(tmp_path):
    write_site = runpy.run_path(str(ROOT / "ci" / "source_site.py"))["write_site"]
    write_site(tmp_path)
    (dist,) = importlib.metadata.distributions(path=[str(tmp_path)])
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert (dist.metadata["Name"], dist.version) == ("hal", project["version"])
    groups = {"console_scripts": project["scripts"], **project["entry-points"]}
    assert {(e.group, e.name, e.value) for e in dist.entry_points} == {
        (group, name, target) for group, entries in groups.items()
        for name, target in entries.items()}
    assert "cuda" in dist.entry_points.select(group="hal.backends").names


def test_gpu_check_without_a_gpu_exits_3_with_the_reason():
    reason = hal.backend("cuda").why_unavailable()
    if reason is None:
        pytest.skip("a GPU is usable here: the check would measure and publish")
    run = subprocess.run(["bash", str(ROOT / "ci" / "gpu-check")], capture_output=True,
                         text=True, timeout=60, env={**os.environ, "PYTHON": sys.executable})
    assert run.returncode == 3, run.stderr
    assert f"no usable GPU, nothing measured: {reason}" in run.stderr
