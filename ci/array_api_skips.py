"""Write third_party/array-api-tests/hal-skips.txt: the suite's tests of names hal lacks.

A test is skipped when its subject (the function, method or extension function it is
about: the first name in its parameter id, else its own name less `test_`) is an Array
API name that hal's namespace, or hal.Tensor for methods, does not have. Everything else
must pass, or be listed with its reason in hal-xfails.txt. `--check` exits 1 when the
file is out of date (a function was added or removed) instead of writing it.

    python ci/array_api_skips.py [--check]
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

SUITE = Path(__file__).resolve().parents[1] / "third_party" / "array-api-tests"
SKIPS = SUITE / "hal-skips.txt"
ENV = {"ARRAY_API_TESTS_MODULE": "hal", "ARRAY_API_TESTS_VERSION": "2023.12",
       "HAL_DEVICE": "cpu"}
EXTENSIONS = ("linalg", "fft")
INPLACE = {f"__i{op}__": f"__{op}__" for op in (
    "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor",
    "lshift", "rshift")}
HEADER = ("# Tests of Array API 2023.12 names that hal does not have (written by "
          "ci/array_api_skips.py).\n")


def missing_names() -> set[str]:
    """Array API function, method and extension names absent from hal."""
    sys.path.insert(0, str(SUITE))
    os.environ.update(ENV)
    from array_api_tests import stubs

    import hal

    methods = {f.__name__ for f in stubs.array_methods}
    info = hal.__array_namespace_info__()
    # the info category's functions are the info object's, but for the one making it
    absent = {f.__name__ for category, funcs in stubs.category_to_funcs.items() for f in funcs
              if not hasattr(info if category == "info" and f.__name__ != "__array_namespace_info__"
                             else hal, f.__name__)}
    # dir, not hasattr: type's own __or__ (X | Y unions) is no method of a Tensor
    absent |= {n for n in methods if n not in dir(hal.Tensor)}
    absent |= {n for n in stubs.array_attributes if n not in dir(hal.Tensor)}
    for ext, funcs in stubs.extension_to_funcs.items():
        module = getattr(hal, ext, None)
        absent |= {f"{ext}.{f.__name__}" for f in funcs if not hasattr(module, f.__name__)}
    return absent


def subject(test_id: str) -> str:
    """The name a test is about: its parameter id's first name, else its own name; an
    in-place operator's is the operator's (x &= y falls back to x = x & y)."""
    name, _, param = test_id.partition("[")
    category = re.match(r"([a-z_]+)-", param)  # test_has_names[category-name]
    if category:
        param = param[category.end():]
        if category[1] in EXTENSIONS:
            param = f"{category[1]}.{param}"
    found = re.match(r"(?:\w+\.)?\w+", param)
    name = found[0] if found else name.rsplit("::", 1)[-1].removeprefix("test_")
    return INPLACE.get(name, name)


def skipped_ids() -> list[str]:
    """The collected test ids whose subject hal lacks, in collection order."""
    absent = missing_names()
    out = subprocess.run(
        [os.path.abspath(sys.executable), "-m", "pytest", "array_api_tests", "--collect-only", "-q",
         "-p", "no:cacheprovider"],
        cwd=SUITE, env={**os.environ, **ENV}, capture_output=True, text=True, check=True,
    ).stdout
    ids = [line for line in out.splitlines() if line.startswith("array_api_tests/")]
    return [i for i in ids if subject(i) in absent or f"{_module(i)}.{subject(i)}" in absent]


def _module(test_id: str) -> str:
    """'fft' for array_api_tests/test_fft.py::... (an extension's tests name its functions bare)."""
    return Path(test_id.split("::")[0]).stem.removeprefix("test_")


def main() -> int:
    """Write hal-skips.txt, or with --check say whether it is current."""
    text = HEADER + "".join(f"{i}\n" for i in skipped_ids())
    if "--check" in sys.argv[1:]:
        current = SKIPS.read_text() if SKIPS.exists() else ""
        if current != text:
            print(f"{SKIPS} is out of date: run python ci/array_api_skips.py")
            return 1
        return 0
    SKIPS.write_text(text)
    print(f"{SKIPS}: {text.count(chr(10)) - 1} tests of names hal lacks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
