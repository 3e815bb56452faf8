"""abort_job's wait for its message: a pipe is watched until its reader took every byte."""

from __future__ import annotations

import os
import threading

from frontends.parallel.abort import _pipe_drained


def test_a_pipe_counts_as_drained_once_its_reader_took_the_message():
    read_end, write_end = os.pipe()
    with os.fdopen(write_end, "w") as stream, os.fdopen(read_end, "rb") as reader:
        stream.write("hal.parallel: rank 1 of 2: the reason\n")
        stream.flush()
        assert not _pipe_drained(stream, 0.05)  # nobody read it
        reading = threading.Timer(0.1, lambda: reader.read1(4096))
        reading.start()
        assert _pipe_drained(stream, 10.0)
        reading.join()


def test_a_file_or_a_closed_stream_is_not_a_pipe(tmp_path):
    with open(tmp_path / "log", "w") as stream:
        assert not _pipe_drained(stream, 0.05)
    assert not _pipe_drained(stream, 0.05)  # closed: fileno raises ValueError
