"""Child-process isolation: a crash, an OOM kill or a hang becomes a record; the rest goes on."""

import sys
import textwrap
import time

import pytest

from benchmarks.isolation import DeviceRunner
from benchmarks.plan import Config, plan
from benchmarks.schema.records import DeviceRecord, Measurement


def _fake_worker(body: str) -> tuple[str, ...]:
    """A real child process that talks the worker protocol and then misbehaves."""
    script = textwrap.dedent("""
        import json, os, signal, sys, time
        job = json.load(sys.stdin)
        def send(m):
            print(json.dumps(m), flush=True)
        send({"event": "device", "capabilities": {"backend": "cpu"}})
        send({"event": "start", "task": 0})
    """) + textwrap.dedent(body)
    return (sys.executable, "-c", script)


@pytest.mark.parametrize(
    ("body", "status", "text"),
    [
        ("os.kill(os.getpid(), signal.SIGKILL)", "failed", "killed by SIGKILL (out of memory?)"),
        (
            "sys.stderr.write('segfault in kernel\\n'); sys.exit(3)",
            "failed",
            "exited with code 3: segfault in kernel",
        ),
        ("time.sleep(60)", "timeout", "time limit of 1 s"),
    ],
)
def test_a_crashing_or_hanging_child_becomes_a_record_and_the_rest_goes_on(
    body, status, text, monkeypatch
):
    monkeypatch.setattr(DeviceRunner, "command", _fake_worker(body))
    tasks = plan(Config(suites=["smoke"], dtypes=["float64"]), ["cpu:0"])
    got: list[Measurement] = []
    runner = DeviceRunner(
        DeviceRecord("cpu:0", "cpu"),
        Config(timeout=1.0),
        lambda task, m: got.append(m),
        lambda caps: None,
    )
    started = time.monotonic()
    runner.run(tasks)
    assert [m.workload for m in got] == [t.workload.name for t in tasks]  # one child per task
    assert all(m.status == status and text in m.error for m in got)
    assert time.monotonic() - started < 30


def test_a_device_that_does_not_open_fails_every_task(monkeypatch):
    script = "import sys; sys.stderr.write('no such device\\n'); sys.exit(4)"
    monkeypatch.setattr(DeviceRunner, "command", (sys.executable, "-c", script))
    tasks = plan(Config(suites=["smoke"], dtypes=["float64"]), ["cpu:0"])
    got: list[Measurement] = []
    DeviceRunner(
        DeviceRecord("cpu:0", "cpu"),
        Config(timeout=30.0),
        lambda task, m: got.append(m),
        lambda caps: None,
    ).run(tasks)
    assert len(got) == len(tasks)
    assert all(
        m.status == "failed"
        and m.error == "cpu:0 did not open: worker exited with code 4: no such device"
        for m in got
    )
