"""send and recv: the point-to-point ops, over the one-rank group "self" (real ranks:
tests/frontends/parallel/test_parallel_pp.py)."""

from __future__ import annotations

import numpy as np
import pytest

import hal
from hal import HalError, ShapeError

C = hal.collectives


def test_a_send_to_itself_waits_for_the_recv_of_its_tag_in_order():
    a, b = hal.asarray(np.arange(3.0)), hal.asarray(np.arange(3.0) + 10)
    assert C.send(a, group="self", peer=0, tag=101) is not None
    C.send(b, group="self", peer=0, tag=101)
    C.send(a * 0.5, group="self", peer=0, tag=102)
    like = hal.zeros((3,), dtype=hal.float64)
    assert C.recv(like, group="self", peer=0, tag=102).numpy().tolist() == [0.0, 0.5, 1.0]
    assert C.recv(like, group="self", peer=0, tag=101).numpy().tolist() == [0.0, 1.0, 2.0]
    assert C.recv(like, group="self", peer=0, tag=101).numpy().tolist() == [10.0, 11.0, 12.0]


def test_bad_peers_tags_and_unsent_messages_are_refused():
    x = hal.zeros((2,), dtype=hal.float32)
    with pytest.raises(HalError, match="peer 1 is not a rank of group 'self'"):
        C.send(x, group="self", peer=1)
    with pytest.raises(HalError, match="tag -1 must be an int"):
        C.recv(x, group="self", peer=0, tag=-1)
    with pytest.raises(HalError, match="nothing was sent to this process with that tag"):
        C.recv(x, group="self", peer=0, tag=111)
    C.send(hal.zeros((3,), dtype=hal.float32), group="self", peer=0, tag=112)
    with pytest.raises(ShapeError, match=r"a float32\(2,\) was expected but a float32\(3,\)"):
        C.recv(x, group="self", peer=0, tag=112)


def test_graphs_keep_every_send_and_recv():
    """Not folded (a recv of a constant), not merged (two equal recvs are two messages),
    not dropped (a send whose result nothing reads)."""
    def f(x):
        like = hal.zeros((2,), dtype=hal.float64)
        C.send(x * 3.0, group="self", peer=0, tag=121)  # result unread
        C.send(x, group="self", peer=0, tag=121)
        first = C.recv(like, group="self", peer=0, tag=121)
        second = C.recv(like, group="self", peer=0, tag=121)
        return first - second

    x = hal.asarray(np.array([1.0, 2.0]))
    jitted = hal.jit(f)
    assert [n.op for n in jitted.graph(x).nodes].count("recv") == 2
    assert [n.op for n in jitted.graph(x).nodes].count("send") == 2
    assert jitted(x).numpy().tolist() == [2.0, 4.0]
