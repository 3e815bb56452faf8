"""A bad HAL_* variable: one line from the command line, a HalError on first use from Python."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import hal


def _run(*argv, **env):
    return subprocess.run(argv, capture_output=True, text=True, timeout=120,
                          env={**os.environ, **env})


def test_the_command_line_says_a_bad_fallback_policy_in_one_line():
    done = _run(sys.executable, "-m", "hal.cli", "devices", HAL_FALLBACK="sometimes")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "hal: HAL_FALLBACK='sometimes' is not a policy; set it to one of error, warn, allow"]
    assert "Traceback" not in done.stderr + done.stdout


def test_python_use_raises_the_reason_when_hal_first_opens_a_device():
    done = _run(sys.executable, "-c", "import hal\ntry:\n    hal.ones(3)\nexcept hal.HalError "
                "as e:\n    print('refused:', e)", HAL_FALLBACK="sometimes")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("refused: HAL_FALLBACK='sometimes' is not a policy")


def test_defaults_carry_the_reason_and_check_raises_it():
    assert type(hal.settings)().invalid is None
    bad = type(hal.settings)(invalid="HAL_FALLBACK='x' is not a policy")
    with pytest.raises(hal.HalError, match="HAL_FALLBACK='x'"):
        bad.check()


def test_threads_default_to_the_usable_cores_and_a_bad_count_is_refused():
    Settings = type(hal.settings)
    assert Settings.from_env({}).threads == len(os.sched_getaffinity(0))
    assert Settings.from_env({"HAL_THREADS": "1"}).threads == 1
    for bad in ("0", "-2", "two", "1.5"):
        with pytest.raises(hal.HalError, match=f"HAL_THREADS='{bad}' is not a thread count"):
            Settings.from_env({"HAL_THREADS": bad})


def test_ranks_on_one_node_share_its_cores(monkeypatch):
    from hal.runtime import settings as settings_module

    Settings = type(hal.settings)
    monkeypatch.setattr(settings_module, "usable_cores", lambda: 4)
    assert Settings.from_env({"MPI_LOCALNRANKS": "2"}).threads == 2  # MPICH's Hydra
    assert Settings.from_env({"OMPI_COMM_WORLD_LOCAL_SIZE": "3"}).threads == 1  # Open MPI
    assert Settings.from_env({"MPI_LOCALNRANKS": "8"}).threads == 1
    assert Settings.from_env({"MPI_LOCALNRANKS": "2", "HAL_THREADS": "3"}).threads == 3
    assert Settings.from_env({"MPI_LOCALNRANKS": "junk"}).threads == 4
