"""Pytrees of Tensors: nested tuples, lists and dicts flattened to a list of leaves and back."""

from __future__ import annotations

from typing import Any

from hal import HalError, Tensor


def flatten(tree: Any, what: str = "argument") -> tuple[list, Any]:
    """(leaves, structure) of a Tensor or a tuple/list/dict nesting of Tensors."""
    leaves: list = []
    return leaves, _flatten(tree, leaves, what)


def _flatten(tree, leaves, what):
    if isinstance(tree, Tensor):
        leaves.append(tree)
        return None
    if isinstance(tree, (tuple, list)):
        return type(tree), [_flatten(t, leaves, what) for t in tree]
    if isinstance(tree, dict):
        keys = list(tree)
        return dict, keys, [_flatten(tree[k], leaves, what) for k in keys]
    raise HalError(
        f"autograd: {what} of type {type(tree).__name__} is not a hal Tensor or a "
        "tuple/list/dict of Tensors; convert it with hal.asarray"
    )


def unflatten(structure: Any, leaves: list) -> Any:
    """The tree of `structure` with `leaves` in flatten's order."""
    it = iter(leaves)
    return _build(structure, it)


def _build(structure, it):
    if structure is None:
        return next(it)
    if structure[0] is dict:
        _, keys, children = structure
        return {k: _build(c, it) for k, c in zip(keys, children, strict=True)}
    kind, children = structure
    return kind(_build(c, it) for c in children)
