"""SIGTERM ends a `hal bench` run as Ctrl-C does: the measurements kept, the results file
ended, the report written and the closing summary printed; exit status 143."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from benchmarks.isolation import PACKAGE_ROOT
from benchmarks.schema.files import read_results


@pytest.mark.slow
def test_sigterm_ends_the_run_with_its_end_record_and_report(tmp_path):
    out = tmp_path / "results"
    env = {**os.environ, "PYTHONPATH": str(PACKAGE_ROOT), "HAL_CACHE_DIR": str(tmp_path / "c")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "hal.cli", "bench", "--suite", "ops", "--dtype", "float64",
         "--quick", "--backend", "cpu", "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=PACKAGE_ROOT,
    )
    deadline = time.monotonic() + 120
    files = []
    while time.monotonic() < deadline and proc.poll() is None:
        files = list(out.glob("*.jsonl"))
        if files and '"type": "measurement"' in files[0].read_text():
            break
        time.sleep(0.1)
    assert proc.poll() is None, "the run ended before it could be stopped"
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 143, stderr
    assert "interrupted (SIGTERM)" in stderr and "--resume" in stderr
    (path,) = files
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert records[-1]["type"] == "end" and records[-1]["completed"] is False
    results = read_results(path)
    assert not results.completed and results.measurements
    report = path.with_name(f"{path.stem}-report") / "report.html"
    assert report.is_file()
    assert stdout.rstrip().splitlines()[-1] == f"report: {report}"
    assert "(run not finished)" in stdout
