"""HAL_THREADS reaches every library hal drives, and the run record says what it was."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, hal
from threadpoolctl import threadpool_info
hal.asarray([1.0, 2.0], device="cpu")
facts = {"settings": hal.settings.threads,
         "blas": sorted({p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"}),
         "cpu_device": hal.device("cpu").capabilities.extra["threads"]}
from backends.cpu_fft import threads_for
facts["fft"] = threads_for(1 << 20)
from backends.onnxruntime.session import threads_for as ort_threads
from hal.compile.graph import Graph
facts["ort"] = ort_threads(Graph(inputs=[((1 << 20,), "float32")], nodes=[], outputs=[],
                                 constants=[]))
import backends.tvm, os
facts["tvm_env"] = os.environ.get("TVM_NUM_THREADS")
import tvm
facts["tvm"] = tvm.runtime.num_threads()
from benchmarks.schema.environment import host_info
facts["record"] = host_info()["threads"]
print(json.dumps(facts))
"""


def _probe(threads: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "TVM_NUM_THREADS"}
    env.update(HAL_THREADS=threads, HAL_DEVICE="cpu")
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, cwd=ROOT, timeout=300,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("threads", ["1", "2"])
def test_hal_threads_reaches_blas_fft_onnxruntime_tvm_and_the_record(threads):
    facts = _probe(threads)
    n = int(threads)
    assert facts["settings"] == n and facts["cpu_device"] == n and facts["record"] == n
    assert facts["blas"] == [n]
    assert 1 <= facts["fft"] <= n  # also capped by the cores free now
    assert facts["ort"] == n and facts["tvm_env"] == threads and facts["tvm"] == n
