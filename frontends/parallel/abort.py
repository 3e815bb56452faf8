"""Ending the whole MPI job when one rank fails, with that rank's reason.

MPI knows no failed rank: when one rank stops issuing collectives (an uncaught exception, a
nonzero `sys.exit`, a collective the others do not issue) the others wait in their next
collective forever, and an exiting rank waits for them in MPI_Finalize. `abort_job` prints
the reason and ends every rank (MPI_Abort on COMM_WORLD); `abort_on_uncaught_exceptions`
makes every exception that reaches the top of a rank's main thread do so. A `Mesh` over
more than one rank installs it unless told not to (`abort_on_error=False` or
HAL_PARALLEL_ABORT_ON_ERROR=0).
"""

from __future__ import annotations

import fcntl
import os
import stat
import struct
import sys
import termios
import time
import traceback

ABORT_GRACE_S = 1.0  # after the message, where it cannot be seen read: the manager forwards it
READ_WAIT_S = 15.0  # at most, for the process manager to read the message out of the pipe
FORWARD_S = 0.2  # once read, for it to pass the message on before the abort follows
_hooked = False  # whether abort_on_uncaught_exceptions has installed its hook


def rank_message(reason: str) -> str:
    """`hal.parallel: rank R of P: reason`, R and P this rank's in COMM_WORLD."""
    from mpi4py import MPI

    world = MPI.COMM_WORLD
    return f"hal.parallel: rank {world.Get_rank()} of {world.Get_size()}: {reason}"


def abort_job(message: str, status: int, answer: str | None = None) -> None:
    """Write `message` to stderr (and `answer`, a line for the job's driver, to stdout), wait
    until the process manager has read them, then end every rank of the job (this one too)
    with exit status `status`.

    An abort kills the manager's readers too: a line still in the pipe is lost. On a
    loaded machine a fixed wait lost it, so the wait watches the pipes drain (FIONREAD) and
    falls back to ABORT_GRACE_S where one is not a pipe."""
    from mpi4py import MPI

    written = [(sys.stderr, message), *([(sys.stdout, answer)] if answer is not None else [])]
    for stream, line in written:
        stream.write(line + "\n")  # one write: ranks that fail together do not interleave
        stream.flush()
    read = all([_pipe_drained(stream, READ_WAIT_S) for stream, _ in written])
    time.sleep(FORWARD_S if read else ABORT_GRACE_S)
    MPI.COMM_WORLD.Abort(status)


def _pipe_drained(stream, limit_s: float) -> bool:
    """Whether `stream` is a pipe whose reader took every byte within `limit_s` seconds."""
    try:
        fd = stream.fileno()
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return False
        deadline = time.monotonic() + limit_s
        while struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)
        return True
    except (OSError, ValueError):  # no descriptor, or one that cannot say
        return False


def abort_on_uncaught_exceptions() -> None:
    """From now on an exception that reaches the top of this rank's main thread prints its
    traceback (by the hook installed before), then a line naming the rank, the exception
    and where it was raised, and aborts the job with status 1. Installs once."""
    global _hooked
    if _hooked:
        return
    _hooked = True
    previous = sys.excepthook

    def abort_after(kind, value, tb) -> None:
        previous(kind, value, tb)
        frames = traceback.extract_tb(tb)
        where = f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""
        abort_job(rank_message(
            f"uncaught {kind.__name__}{where}: {value}; aborting the job so that no rank "
            "waits for this one (HAL_PARALLEL_ABORT_ON_ERROR=0 lets a rank end alone)"), 1)

    sys.excepthook = abort_after
