"""Each device measured in a child process with a time limit per measurement.

The child is `python -m benchmarks.worker`. A crash, a hang or an out-of-memory kill
becomes a `failed`/`timeout` record with the error text (exit status, last stderr
lines), and a fresh child carries on with the remaining tasks.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.plan import Config, Task
from benchmarks.schema.records import DeviceRecord, Measurement

PACKAGE_ROOT = Path(__file__).resolve().parent.parent  # the child runs from here


def _failure(task: Task, status: str, error: str) -> Measurement:
    """A record for a task the child could not finish."""
    return Measurement(
        suite=task.suite,
        workload=task.workload.name,
        params=task.workload.params,
        backend=task.backend,
        device=task.device,
        dtype=task.dtype,
        status=status,
        error=error,
    )


def _stderr_tail(path: Path, lines: int = 5) -> str:
    """The last lines the child wrote to stderr."""
    text = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    return " | ".join(text[-lines:])


def _exit_text(code: int) -> str:
    """A child's exit status in words."""
    if code < 0:
        name = signal.Signals(-code).name
        hint = " (out of memory?)" if -code == signal.SIGKILL else ""
        return f"killed by {name}{hint}"
    return f"exited with code {code}"


class DeviceRunner:
    """Measures a device's tasks in child processes, one time limit per measurement."""

    command = (sys.executable, "-m", "benchmarks.worker")  # the child; reads the job on stdin

    def __init__(
        self,
        device: DeviceRecord,
        config: Config,
        on_record: Callable[[Task, Measurement], None],
        on_device: Callable[[dict[str, Any]], None],
        host_memory: dict[str, Any] | None = None,
        host_peers_under: str | None = None,
    ):
        self.device, self.config = device.name, config
        self.record = device  # its peaks, current when a child starts, seed the child's
        self.host_memory = host_memory  # the host memory's bandwidth peak, for host devices
        self.host_peers_under = host_peers_under  # the device measuring the host's peers
        self.on_record, self.on_device = on_record, on_device

    def run(self, tasks: list[Task]) -> None:
        """Measure every task; a hung or dead child is replaced for the remaining ones."""
        remaining = list(tasks)
        while remaining:
            remaining = self._child(remaining)

    def _child(self, tasks: list[Task]) -> list[Task]:
        """Run one child over `tasks`; return the tasks still to do when it hangs or dies."""
        job = {
            "device": self.device,
            "timing": vars(self.config.timing()),
            "peaks": self.record.peaks,
            "host_memory": self.host_memory,
            "host_peers_under": self.host_peers_under,
            "tasks": [(t.suite, t.index, t.dtype) for t in tasks],
        }
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(
                p for p in (str(PACKAGE_ROOT), os.environ.get("PYTHONPATH")) if p
            ),
        }
        with tempfile.NamedTemporaryFile("w+", suffix=".stderr", delete=False) as err:
            err_path = Path(err.name)
        try:
            with open(err_path, "w") as err_file:
                proc = subprocess.Popen(
                    self.command,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=err_file,
                    text=True,
                    env=env,
                    cwd=PACKAGE_ROOT,
                    start_new_session=True,
                )
            try:
                return self._follow(proc, tasks, job, err_path)
            finally:
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        finally:
            err_path.unlink(missing_ok=True)

    def _follow(
        self, proc: subprocess.Popen, tasks: list[Task], job: dict[str, Any], err_path: Path
    ) -> list[Task]:
        """Feed the job, then relay messages until the child finishes, hangs or dies."""
        assert proc.stdin is not None and proc.stdout is not None
        lines: queue.Queue[str | None] = queue.Queue()

        def pump() -> None:
            for line in proc.stdout:
                lines.put(line)
            lines.put(None)

        threading.Thread(target=pump, daemon=True).start()
        proc.stdin.write(json.dumps(job))
        proc.stdin.close()
        opened, current, done = False, None, 0
        while True:
            try:
                line = lines.get(timeout=self.config.timeout)
            except queue.Empty:
                os.killpg(proc.pid, signal.SIGKILL)
                why = f"no answer within the time limit of {self.config.timeout:g} s"
                return self._blame(tasks, opened, current, done, "timeout", why)
            if line is None:
                code = proc.wait()
                if done == len(tasks):
                    return []
                why = f"worker {_exit_text(code)}: {_stderr_tail(err_path)}"
                return self._blame(tasks, opened, current, done, "failed", why)
            message = json.loads(line)
            if message["event"] == "device":
                opened = True
                self.on_device(message["capabilities"])
            elif message["event"] == "start":
                current = message["task"]
            elif message["event"] == "measurement":
                self.on_record(tasks[message["task"]], Measurement.from_dict(message["record"]))
                current, done = None, message["task"] + 1

    def _blame(
        self,
        tasks: list[Task],
        opened: bool,
        current: int | None,
        done: int,
        status: str,
        why: str,
    ) -> list[Task]:
        """Record the task the child was on as failed/timed out; return the ones after it.

        A child that never opened its device fails every task: none can run.
        """
        if not opened:
            for task in tasks[done:]:
                self.on_record(task, _failure(task, status, f"{self.device} did not open: {why}"))
            return []
        culprit = done if current is None else current
        self.on_record(tasks[culprit], _failure(tasks[culprit], status, why))
        return tasks[culprit + 1 :]
