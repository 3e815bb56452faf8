"""The collectives' inputs and the group they run in: the one-rank group "self" (real
groups are tested under mpiexec: tests/frontends/parallel)."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import strategies as st

from .. import ops
from ..runtime.groups import group
from .inputs import Case, arrays, small_shapes, strided_views

GROUP = "self"  # the process group every collective cell runs over: this process alone


@st.composite
def collective(draw, spec: ops.OpSpec, d: np.dtype, *, axis: bool = True) -> Case:
    """A tensor of at least one axis over GROUP, and the axis gathered along or split into
    one chunk per rank (axis=False: the op takes none; one is drawn all the same, so every
    collective draws alike)."""
    shape = draw(small_shapes(min_dims=1))
    params = {"group": GROUP}
    along = draw(st.integers(-len(shape), len(shape) - 1))
    if axis:
        params["axis"] = along
    return Case([draw(arrays(d, shape, lo=-5, hi=5))], params, draw(strided_views(1)))


@st.composite
def all_to_all(draw, spec: ops.OpSpec, d: np.dtype) -> Case:
    """A tensor of at least one axis over GROUP, the axis split into one chunk per rank and
    the axis the received chunks are joined along."""
    shape = draw(small_shapes(min_dims=1))
    params = {"group": GROUP,
              "split_axis": draw(st.integers(-len(shape), len(shape) - 1)),
              "concat_axis": draw(st.integers(0, len(shape) - 1))}
    return Case([draw(arrays(d, shape, lo=-5, hi=5))], params, draw(strided_views(1)))


@st.composite
def send(draw, spec: ops.OpSpec, d: np.dtype) -> Case:
    """A tensor of any small shape sent from this process to itself (rank 0 of GROUP) under
    one of SEND_TAGS: the op and its reference each leave a small message in the group's
    mailbox, which no recv of the conformance run takes (recv's tags are others)."""
    params = {"group": GROUP, "peer": 0, "tag": draw(st.sampled_from(SEND_TAGS))}
    return Case([draw(arrays(d, draw(small_shapes()), lo=-5, hi=5))], params,
                draw(strided_views(1)))


@st.composite
def recv(draw, spec: ops.OpSpec, d: np.dtype) -> Case:
    """A template of any small shape, and two messages of it sent beforehand from this
    process to itself under a tag of their own: the reference takes one, the op the other,
    and both must return it."""
    x = draw(arrays(d, draw(small_shapes()), lo=-5, hi=5))
    tag = next(_RECV_TAGS)
    for _ in range(2):
        group(GROUP).send(ops.lift(x), 0, tag)  # as the op sends it: half as float32
    return Case([np.zeros_like(x)], {"group": GROUP, "peer": 0, "tag": tag},
                draw(strided_views(1)))


SEND_TAGS = (0, 1, 2, 3)
_RECV_TAGS = itertools.cycle(range(4096, 32768))  # apart from SEND_TAGS
