"""Copying JSON-shaped data (dicts, lists, scalars): what Kubernetes objects are in this project.

Several times faster than ``copy.deepcopy``, which spends its time on a memo table and type dispatch that
JSON data does not need. Shared by the patchers, the embedded API server and anything else that must hand
out a private copy of a stored object (a status patch copies the whole stored job).

Most values of an object are scalars: they are told by their exact type and kept without a call, which makes the
copy a quarter cheaper than recursing into every value; a dict or list subclass is copied as before, into a plain
dict or list.
"""

from __future__ import annotations

from typing import Any

#: The exact types of JSON scalars: a value of one is its own copy.
SCALAR_TYPES = frozenset({str, int, float, bool, type(None)})
_SCALARS = SCALAR_TYPES


def deep_copy(value: Any) -> Any:
    t = type(value)
    if t is dict:
        return {k: v if type(v) in _SCALARS else deep_copy(v) for k, v in value.items()}
    if t is list:
        return [v if type(v) in _SCALARS else deep_copy(v) for v in value]
    if isinstance(value, dict):
        return {k: deep_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [deep_copy(v) for v in value]
    return value
