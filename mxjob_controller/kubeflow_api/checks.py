"""Small typed checks over JSON values that return field errors instead of raising.

The validator walks user input that may be anything JSON can hold (the CRD schema catches most type
mistakes at the API server, but the validator must never crash on an object that bypassed it), so each
check reports a wrong type as a field error with kube's wording.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from mxjob_controller.kube import field_errors as fe
from mxjob_controller.kube.field_errors import FieldError
from mxjob_controller.kube.schema.rules.common import NEGATIVE


def is_int(value: Any) -> bool:
    """A JSON integer (Python's bool is an int, JSON's is not)."""
    return isinstance(value, int) and not isinstance(value, bool)


def type_error(path: str, value: Any, json_type: str) -> FieldError:
    return fe.type_invalid(path, value, f"must be of type {json_type}")


def object_errors(value: Any, path: str) -> list[FieldError]:
    return [] if isinstance(value, dict) else [type_error(path, value, "object")]


def string_errors(value: Any, path: str) -> list[FieldError]:
    return [] if isinstance(value, str) else [type_error(path, value, "string")]


def bool_errors(value: Any, path: str) -> list[FieldError]:
    return [] if isinstance(value, bool) else [type_error(path, value, "boolean")]


def non_negative_errors(value: Any, path: str) -> list[FieldError]:
    if not is_int(value):
        return [type_error(path, value, "integer")]
    return [fe.invalid(path, value, NEGATIVE)] if value < 0 else []


def enum_errors(value: Any, path: str, allowed: Iterable[str]) -> list[FieldError]:
    allowed = tuple(allowed)
    if not isinstance(value, str):
        return [type_error(path, value, "string")]
    return [] if value in allowed else [fe.not_supported(path, value, allowed)]
