"""The project's own pyproject.toml in the form current setuptools wants: no deprecation
warnings when `pip install -e .` builds it."""

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_license_is_an_spdx_string_with_its_file():
    project = _pyproject()["project"]
    assert project["license"] == "Apache-2.0"
    for pattern in project["license-files"]:
        assert list(ROOT.glob(pattern)), f"license-files {pattern!r} matches no file"
    assert "Apache License" in (ROOT / "LICENSE").read_text(encoding="utf-8")


def test_build_requires_a_setuptools_that_reads_spdx_licenses():
    # setuptools 77 is the first to accept `license` as an SPDX string and `license-files`
    requires = _pyproject()["build-system"]["requires"]
    pins = [re.fullmatch(r"setuptools>=(\d+)(\.\S*)?", r.replace(" ", "")) for r in requires]
    minimums = [int(m.group(1)) for m in pins if m]
    assert minimums and minimums[0] >= 77, requires
