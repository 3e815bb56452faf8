"""The hal command: devices and conformance, exit codes and bad input."""

from __future__ import annotations

import json
import subprocess
import sys

from hal.cli import main


def test_devices_json_lists_every_backend(capsys):
    assert main(["devices", "--json"]) == 0
    rows = {r["backend"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["cpu"]["available"] and rows["cpu"]["devices"][0]["device"] == "cpu:0"
    assert rows["null"]["ops_with_kernels"].startswith("0/")


def test_conformance_passes_on_cpu_and_prints_the_matrix(capsys):
    assert main(["conformance", "--backend", "cpu", "--ops", "add", "exp", "--examples",
                 "3"]) == 0
    out = capsys.readouterr().out
    assert "runtime layers" in out and "pass" in out


def test_conformance_json(capsys):
    assert main(["conformance", "--backend", "null", "--ops", "sqrt", "--dtypes", "float32",
                 "--examples", "2", "--json"]) == 0
    (report,) = json.loads(capsys.readouterr().out)
    assert report["cells"][0]["status"] == "fallback"


def test_unknown_backend_exits_2_with_a_message(capsys):
    assert main(["conformance", "--backend", "tpu"]) == 2
    assert "unknown backend 'tpu'" in capsys.readouterr().err


def test_console_script_runs():
    out = subprocess.run([sys.executable, "-m", "hal.cli", "--help"], capture_output=True,
                         text=True, check=True).stdout
    assert "conformance" in out and "devices" in out


def test_conformance_on_a_chosen_device(capsys):
    assert main(["conformance", "--backend", "null:0", "--ops", "add", "--dtypes", "int8",
                 "--examples", "2", "--json"]) == 0
    (report,) = json.loads(capsys.readouterr().out)
    assert report["device"] == "null:0"
    assert main(["conformance", "--backend", "null:x"]) == 2
    assert main(["conformance", "--backend", "null:3", "--ops", "add"]) == 1
    assert "out of range" in capsys.readouterr().out
