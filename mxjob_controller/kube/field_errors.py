"""Field errors as apimachinery's ``field.Error`` renders them: ``<path>: <Type>[: <value>][: <detail>]``.

Every validator in the project (the embedded API server's, the MXJob API's) returns a list of these, so
a user sees every problem at once, each naming its field. ``reason`` is the ``metav1.StatusCause`` type.

A bad value longer than :data:`MAX_VALUE_CHARS` (as printed) is shortened (:func:`clip`): kube prints it
whole, which turns a 2.9 MB invalid name into a 422 several times that size. A Status lists its causes up to
:data:`MAX_CAUSES_CHARS` (:func:`status_causes`): 10,000 bad ports in a 550 KB pod were a 7 MB answer, 40,000 bad
env names in a 1.7 MB review a 30 MB one.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

#: The longest bad value (or name, or field path) an error message shows whole; longer ones are cut here.
#: Above the longest names and keys kube accepts (253; a qualified key 317), so those are never cut.
MAX_VALUE_CHARS = 512
MAX_MESSAGE_CHARS = 64 * 1024  # a whole Status message, however many errors it joins
MAX_CAUSES_CHARS = 64 * 1024  # the causes a Status lists in its details, in all


@dataclass(frozen=True, slots=True)
class FieldError:
    field: str    # e.g. "spec.containers[0].image"
    reason: str   # FieldValueRequired, FieldValueInvalid, ...
    message: str  # e.g. "Required value", 'Invalid value: "abc": must be an integer'

    def __str__(self) -> str:
        return f"{self.field}: {self.message}" if self.field else self.message


def clip(text: str, limit: int = MAX_VALUE_CHARS) -> str:
    """``text``, or its first ``limit`` characters and how long it was: ``aaaa...(truncated, 5000 characters)``."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}...(truncated, {len(text)} characters)"


def format_value(value: Any) -> str:
    """A bad value the way kube quotes it: strings quoted, numbers bare, everything else as JSON; shortened
    past :data:`MAX_VALUE_CHARS` (a string keeps its closing quote)."""
    if isinstance(value, str):
        if len(value) > MAX_VALUE_CHARS:
            return f"{json.dumps(value[:MAX_VALUE_CHARS])}...(truncated, {len(value)} characters)"
        return json.dumps(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int | float):
        return str(value)
    return clip(json.dumps(value, separators=(",", ":"), sort_keys=True, default=str))


def _body(kind: str, value: Any = ..., detail: str = "") -> str:
    text = kind
    if value is not ...:
        text += ": " + format_value(value)
    if detail:
        text += ": " + detail
    return text


def required(field: str, detail: str = "") -> FieldError:
    return FieldError(field, "FieldValueRequired", _body("Required value", detail=detail))


def invalid(field: str, value: Any, detail: str = "") -> FieldError:
    return FieldError(field, "FieldValueInvalid", _body("Invalid value", value, detail))


def type_invalid(field: str, value: Any, detail: str) -> FieldError:
    return FieldError(field, "FieldValueTypeInvalid", _body("Invalid value", value, detail))


def not_supported(field: str, value: Any, supported: Iterable[Any]) -> FieldError:
    valid = ", ".join(format_value(v) for v in supported)
    return FieldError(field, "FieldValueNotSupported",
                      _body("Unsupported value", value, f"supported values: {valid}" if valid else ""))


def forbidden(field: str, detail: str) -> FieldError:
    return FieldError(field, "FieldValueForbidden", _body("Forbidden", detail=detail))


def duplicate(field: str, value: Any) -> FieldError:
    return FieldError(field, "FieldValueDuplicate", _body("Duplicate value", value))


def not_found(field: str, value: Any) -> FieldError:
    return FieldError(field, "FieldValueNotFound", _body("Not found", value))


def too_long(field: str, max_length: int) -> FieldError:
    return FieldError(field, "FieldValueTooLong", _body("Too long", detail=f"may not be more than {max_length} bytes"))


def too_many(field: str, actual: int, max_items: int) -> FieldError:
    return FieldError(field, "FieldValueTooMany",
                      _body("Too many", actual, f"must have at most {max_items} items"))


def child(path: str, key: str | int) -> str:
    """Extend a field path: ``child("spec", "containers")`` → ``spec.containers``; ints index lists."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def child_prefix(path: str) -> str:
    """What ``child(path, key)`` puts before a string key, for a loop over many keys that builds it once:
    ``child_prefix(path) + key == child(path, key)``."""
    return f"{path}." if path else ""


def key_child(path: str, key: str) -> str:
    """A map key in a path, as kube writes it: ``metadata.labels[app]``."""
    return f"{path}[{key}]"


def aggregate(errors: Iterable[FieldError]) -> str:
    """Several errors as apimachinery's ``ToAggregate().Error()`` prints them: ``a: x`` for one, ``[a: x, b: y]`` for
    more (what follows ``is invalid:`` in a 422's message)."""
    texts = [str(e) for e in errors]
    return texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"


def status_causes(errors: Iterable[FieldError], limit: int = MAX_CAUSES_CHARS) -> list[dict[str, str]]:
    """The ``details.causes`` of a Status for ``errors``, bounded by :func:`bounded_causes`."""
    return bounded_causes([{"reason": e.reason, "message": e.message, "field": e.field} for e in errors], limit)


def bounded_causes(causes: list[Any], limit: int = MAX_CAUSES_CHARS) -> list[Any]:
    """A Status's causes (``metav1.StatusCause`` objects, as any webhook may answer them too): the first ones, up to
    ``limit`` characters of their values in all, then one cause saying how many were left out (as :func:`clip`
    says how much of a message was)."""
    listed: list[Any] = []
    total = 0
    for i, cause in enumerate(causes):
        total += sum(len(str(v)) for v in cause.values()) if isinstance(cause, dict) else len(str(cause))
        if total > limit:
            listed.append({"reason": "", "message": f"{len(causes) - i} more errors not listed", "field": ""})
            break
        listed.append(cause)
    return listed
