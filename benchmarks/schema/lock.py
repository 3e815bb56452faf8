"""The lock of a results file, so that one process at a time writes it (RunLock); plain
standard library, so that a process that only takes the lock starts fast.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import warnings
from pathlib import Path


class RunInProgress(Exception):
    """A results file another process is writing: it holds the file's lock (`pid`)."""

    def __init__(self, message: str, pid: int | None) -> None:
        super().__init__(message)
        self.pid = pid


class RunLock:
    """The lock of a results file being written: `<file>.lock`, holding the writer's pid.

    The lock itself is an flock on that file, which the kernel drops when the writer ends
    however it ends: a lock file whose flock is free was left by a writer that was killed
    or crashed, and is taken over with a warning naming its pid. Raises RunInProgress while
    another process holds it.
    """

    def __init__(self, results: Path) -> None:
        self.results = Path(results)
        self.path = self.results.with_name(self.results.name + ".lock")
        self._fd: int | None = self._take()

    def _take(self) -> int:
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                pid = _pid_in(fd)
                os.close(fd)
                writer = f"process {pid}" if pid else "another process"
                raise RunInProgress(f"{self.results} is being written by {writer} (it holds "
                                    f"{self.path}): wait for that run to end, or stop it first",
                                    pid) from None
            with contextlib.suppress(FileNotFoundError):
                if os.stat(self.path).st_ino == os.fstat(fd).st_ino:
                    break
            os.close(fd)  # its writer removed the file as it let go: lock the one there now
        left = _pid_in(fd)
        if left is not None:
            warnings.warn(f"{self.path}: took over the lock of process {left}, which ended "
                          "without releasing it (killed or crashed)", stacklevel=4)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        return fd

    def release(self) -> None:
        """Remove the lock file, then let go of the lock (once; again does nothing)."""
        if self._fd is None:
            return
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        os.close(self._fd)
        self._fd = None


def _pid_in(fd: int) -> int | None:
    """The pid a lock file holds, or None (empty: a writer is just taking it)."""
    text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    return int(text) if text.isdigit() else None
