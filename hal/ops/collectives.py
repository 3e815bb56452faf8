"""Collective ops (family "collective"): all_reduce, all_gather, reduce_scatter, all_to_all,
copy_to_group, split_to_group and gather_to_group, each naming a process group
(hal/runtime/groups.py); their references run the group's collective on host arrays. The
functions and the conjugate pairs are in hal/collectives.py.

Point-to-point ops (family "p2p"), between two ranks of a group: `send(x, group, peer,
tag)` sends x to rank `peer` and returns x; `recv(like, group, peer, tag)` returns the
array rank `peer` sent, shaped and typed like `like` (whose values are not read). They
have side effects, so graphs never fold, merge or drop them (hal/compile/passes.py); they
are not differentiable: a pipeline exchanges its gradients with them explicitly. Half
precision travels as float32 (the references' lift, `spec.lift`), so a kernel that runs
the reference on the raw operand and the reference itself put the same bytes on the wire."""

from __future__ import annotations

import numpy as np

from ..runtime import dtypes as dt
from ..runtime import groups
from . import shapes
from .spec import EXTENDED, declare, lift, spec

OPS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "copy_to_group",
       "split_to_group", "gather_to_group")
P2P = ("send", "recv")


def _group_of(group):
    return groups.group(group)


def _chunked(op, group, x, axis):
    """(shape with axis divided over the group's ranks, axis); ShapeError when uneven."""
    a = shapes.axis(op, axis, x.ndim)
    shape = list(x.shape)
    shape[a] = groups.chunk(op, group, shape[a], a)
    return shape, a


def _whole_meta(x, *, group):
    _group_of(group)
    return tuple(x.shape), x.dtype


def _gathered_meta(op):
    def meta(x, *, group, axis=0):
        a = shapes.axis(op, axis, x.ndim)
        shape = list(x.shape)
        shape[a] *= _group_of(group).size
        return tuple(shape), x.dtype

    return meta


def _chunk_meta(op):
    def meta(x, *, group, axis=0):
        return tuple(_chunked(op, group, x, axis)[0]), x.dtype

    return meta


def _all_to_all_meta(x, *, group, split_axis, concat_axis):
    shape, _ = _chunked("all_to_all", group, x, split_axis)
    shape[shapes.axis("all_to_all", concat_axis, x.ndim)] *= _group_of(group).size
    return tuple(shape), x.dtype


def _on_group(method):
    def reference(x, *, group, **axes):
        return getattr(_group_of(group), method)(x, **axes)

    return reference


def _split_ref(x, *, group, axis=0):
    shape, a = _chunked("split_to_group", group, x, axis)
    n, rank = shape[a], _group_of(group).rank
    return np.take(x, np.arange(rank * n, (rank + 1) * n), axis=a)


for _name, _ref, _meta, _dtypes in (
        ("all_reduce", _on_group("all_reduce"), _whole_meta, dt.NUMERIC),
        ("all_gather", _on_group("all_gather"), _gathered_meta("all_gather"), dt.ALL),
        ("reduce_scatter", _on_group("reduce_scatter"), _chunk_meta("reduce_scatter"),
         dt.NUMERIC),
        ("all_to_all", _on_group("all_to_all"), _all_to_all_meta, dt.ALL),
        ("copy_to_group", lambda x, *, group: x, _whole_meta, dt.ALL),
        ("split_to_group", _split_ref, _chunk_meta("split_to_group"), dt.ALL),
        ("gather_to_group", _on_group("all_gather"), _gathered_meta("gather_to_group"),
         dt.NUMERIC)):
    declare(_name, EXTENDED, "collective", _dtypes, _ref, _meta, promote=())


def _peer_meta(op):
    def meta(x, *, group, peer, tag=0):
        groups.peer(op, group, peer, tag)
        return tuple(x.shape), x.dtype

    return meta


def _send_ref(x, *, group, peer, tag=0):
    _group_of(group).send(np.require(lift(x), requirements="C"), peer, tag)  # 0-d stays 0-d
    return x


def _recv_ref(x, *, group, peer, tag=0):
    return _group_of(group).recv(np.empty(x.shape, lift(x).dtype), peer, tag).astype(
        x.dtype, copy=False)


declare("send", EXTENDED, "p2p", dt.ALL, _send_ref, _peer_meta("send"), promote=(),
        differentiable=False)
declare("recv", EXTENDED, "p2p", dt.ALL, _recv_ref, _peer_meta("recv"), promote=(),
        differentiable=False)


def staged_kernel(op: str):
    """A kernel for a device without its own collectives: download, run the group, upload."""
    reference = spec(op).reference

    def kernel(device, x, **params):
        return device.upload(np.require(reference(device.download(x), **params),
                                        requirements="C"))  # a 0-d result stays 0-d

    return kernel


def device_kernel(op: str):
    """A kernel for a device whose backend has collectives of its own: the group's
    `on_device` where its transport is that library, else staged through host memory."""
    staged = staged_kernel(op)

    def kernel(device, x, *, group, **params):
        g = groups.group(group)
        if groups.staged(g):
            return staged(device, x, group=group, **params)
        return g.on_device(op, x, **params)

    return kernel
