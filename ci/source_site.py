"""Present this checkout to Python as the installed hal distribution, with no package index.

    python3 ci/source_site.py DIR     # then: PYTHONPATH=<checkout>:DIR python3 -m hal.cli ...

Writes DIR/hal-<version>.dist-info with the METADATA and the entry points (backends,
commands, scripts) of pyproject.toml, so that hal found on PYTHONPATH loads its backends
and commands as an install would: for machines whose Python already has the libraries
(datacentre images with cupy, torch and jax preinstalled) and no network to build a venv.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def write_site(folder: Path, pyproject: Path = ROOT / "pyproject.toml") -> Path:
    """The dist-info folder written under `folder` for the project of `pyproject`."""
    project = tomllib.loads(pyproject.read_text())["project"]
    info = folder / f"{project['name']}-{project['version']}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\n"
                                   f"Version: {project['version']}\n")
    groups = {"console_scripts": project.get("scripts", {}), **project.get("entry-points", {})}
    (info / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{name} = {target}\n" for name, target in entries.items())
        + "\n" for group, entries in groups.items()))
    return info


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    write_site(Path(sys.argv[1]))
