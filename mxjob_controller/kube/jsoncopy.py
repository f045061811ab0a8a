"""Copying JSON-shaped data (dicts, lists, scalars): what Kubernetes objects are in this project.

Several times faster than ``copy.deepcopy``, which spends its time on a memo table and type dispatch that
JSON data does not need. Shared by the patchers, the embedded API server and anything else that must hand
out a private copy of a stored object.
"""

from __future__ import annotations

from typing import Any


def deep_copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: deep_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [deep_copy(v) for v in value]
    return value
