"""The child process that measures one device: `python -m benchmarks.worker < job.json`.

The job (JSON on stdin) names the device, the tasks (suite, workload index, dtype), the
timing options, the peaks known so far and the host memory's bandwidth peak. Messages go
back as JSON lines on the original stdout; everything else the process prints is moved to
stderr so that library chatter cannot corrupt the protocol. Messages: `device` (its
capabilities), `start` and `measurement` per task.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, TextIO

from benchmarks.peaks import measures_peak, with_memory_peak
from benchmarks.timing import TimingOptions, measure, merge_peak
from benchmarks.workload import suite_workloads
from frontends.science import peers


def _protocol_stream() -> TextIO:
    """A private handle on stdout for messages; fd 1 itself then points at stderr."""
    stream = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return stream


def run_job(job: dict[str, Any], out: TextIO) -> None:
    """Open the device and measure every task of the job, reporting as it goes."""
    import hal

    def send(message: dict[str, Any]) -> None:
        out.write(json.dumps(message, default=str) + "\n")
        out.flush()

    device = hal.device(job["device"])
    peers.measure_host_peers_under(job.get("host_peers_under"))
    capabilities = device.capabilities.to_dict()
    send({"event": "device", "capabilities": capabilities})
    timing = TimingOptions(**job["timing"])
    peaks = with_memory_peak(job.get("peaks") or {}, capabilities, device.name,
                             job.get("host_memory"))
    loaded: dict[str, list] = {}
    for task, (suite, index, dtype) in enumerate(job["tasks"]):
        workload = loaded.setdefault(suite, suite_workloads(suite))[index]
        send({"event": "start", "task": task})
        # A peak workload's % of peak would compare it with a peak still being measured.
        measuring = measures_peak(workload.peak, capabilities)
        record = measure(workload, suite, dtype, device, timing, None if measuring else peaks)
        if measuring:
            peaks = merge_peak(peaks, workload.peak, record)
        send({"event": "measurement", "task": task, "record": record.to_dict()})


def main() -> None:
    """Entry point of the child process."""
    out = _protocol_stream()
    run_job(json.load(sys.stdin), out)


if __name__ == "__main__":
    main()
