"""JSON values checked against the field types of the schema's records.

Readers build records with `from_dict`, which ignores keys a newer minor version added
and raises TypeError naming the first field whose value has the wrong JSON type (a list
for an object, text for a number), so that a reader can skip that record with a warning.
"""

from __future__ import annotations

import json
import types
import typing
from dataclasses import fields, is_dataclass
from typing import Any

_JSON_TYPES = {float: ((int, float), "a number"), int: ((int,), "an integer"),
               str: ((str,), "text"), bool: ((bool,), "true or false"),
               list: ((list,), "a list"), dict: ((dict,), "an object")}


def from_dict(cls: type, data: dict[str, Any]) -> Any:
    """Build dataclass `cls` from `data`, ignoring keys a newer minor version added;
    TypeError names a field whose value has the wrong JSON type."""
    names = {f.name for f in fields(cls)}
    known = {k: v for k, v in data.items() if k in names}
    problem = _fields_problem(cls, known, "")
    if problem:
        raise TypeError(problem)
    return cls(**known)


def json_kind(value: Any) -> str:
    """A JSON value's type in words, for messages."""
    if value is None:
        return "null"
    for expected, (_, words) in _JSON_TYPES.items():
        if type(value) is expected:
            return f"{words} ({json.dumps(value, default=str)[:40]})"
    return type(value).__name__


def _fields_problem(cls: type, data: dict[str, Any], prefix: str) -> str | None:
    """The first field of `data` whose value does not fit dataclass `cls`, in words."""
    hints = typing.get_type_hints(cls)
    for name, value in data.items():
        problem = type_problem(value, hints[name], prefix + name)
        if problem:
            return problem
    return None


def type_problem(value: Any, hint: Any, name: str) -> str | None:
    """What makes a JSON value unfit for a field typed `hint` (None when it fits)."""
    if hint is Any:
        return None
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        problems = [type_problem(value, a, name) for a in args if a is not type(None)]
        return None if None in problems else problems[0]
    if is_dataclass(hint):
        if isinstance(value, hint):
            return None
        if not isinstance(value, dict):
            return f"{name} is {json_kind(value)}, not an object"
        return _fields_problem(hint, {k: v for k, v in value.items()
                                      if k in {f.name for f in fields(hint)}}, f"{name}.")
    base = origin or hint
    accepted, words = _JSON_TYPES[base]
    if not isinstance(value, accepted) or (base is not bool and isinstance(value, bool)):
        return f"{name} is {json_kind(value)}, not {words}"
    if base is list:
        return next(filter(None, (type_problem(v, args[0], f"{name}[{i}]")
                                  for i, v in enumerate(value))), None)
    if base is dict:
        return next(filter(None, (type_problem(v, args[1], f"{name}.{k}")
                                  for k, v in value.items())), None)
    return None
