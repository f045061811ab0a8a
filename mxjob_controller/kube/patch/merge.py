"""JSON merge patch (RFC 7386): ``application/merge-patch+json``.

Both directions: :func:`apply_merge_patch` (what the server does) and :func:`create_merge_patch`
(what a client sends to move an object from one state to another).
"""

from __future__ import annotations

from typing import Any


def apply_merge_patch(target: Any, patch: Any) -> Any:
    """Return ``target`` with ``patch`` applied; neither argument is modified."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            result[key] = apply_merge_patch(result.get(key), value)
        else:   # what anything else merges to, without a call for each of a patch's leaves
            result[key] = value
    return result


def create_merge_patch(original: Any, modified: Any) -> Any:
    """The smallest merge patch turning ``original`` into ``modified`` ({} when they are equal)."""
    if not isinstance(original, dict) or not isinstance(modified, dict):
        return modified
    patch: dict[str, Any] = {}
    for key in original.keys() - modified.keys():
        patch[key] = None
    for key, value in modified.items():
        if key not in original:
            patch[key] = value
        elif original[key] != value:
            if isinstance(value, dict) and isinstance(original[key], dict):
                patch[key] = create_merge_patch(original[key], value)
            else:
                patch[key] = value
    return patch
