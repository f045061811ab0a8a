"""Schema validation errors worded as kube-apiserver words them.

kube-openapi validates a custom resource and apiextensions-apiserver turns each of its errors into a
``field.Error`` (``kubeOpenAPIResultToFieldErrors``): the message repeats the path and says ``in body``,
e.g. ``spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"``
(the bad value kube quotes there is the JSON type it found, not the value). Errors that kube-openapi
raises as plain errors (``anyOf``, ``oneOf``, ``not``, number-format ranges) name no field at all.
"""

from __future__ import annotations

import decimal
import json
import math
from typing import Any

from mxjob_controller.kube.field_errors import (
    FieldError,
    format_value,
    invalid,
    not_supported,
    required,
    too_long,
    too_many,
    type_invalid,
)

IN = "body"


def json_type(value: Any) -> str:
    """The JSON type name of a decoded value, as kube-openapi reports it."""
    if value is None:
        return "null"
    t = type(value)
    if t is str:
        return "string"
    if t is bool:
        return "boolean"
    if t is int:
        return "integer"
    if t is float:
        return "number"
    if t is dict:
        return "object"
    if t is list:
        return "array"
    return t.__name__


def go_float(x: float) -> str:
    """``fmt.Sprintf("%v", x)`` for a float64: shortest digits, exponent form below 1e-4 or from 1e6."""
    if math.isnan(x) or math.isinf(x):
        return {"nan": "NaN", "inf": "+Inf", "-inf": "-Inf"}[repr(x)]
    if x == 0:
        return "0"
    sign, digits, exp = decimal.Decimal(repr(x)).normalize().as_tuple()
    text = "".join(map(str, digits))
    point = len(text) + int(exp)  # position of the decimal point from the left of ``text``
    if point - 1 < -4 or point - 1 >= 6:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        e = point - 1
        return f"{'-' if sign else ''}{mantissa}e{'-' if e < 0 else '+'}{abs(e):02d}"
    if point <= 0:
        body = "0." + "0" * -point + text
    elif point >= len(text):
        body = text + "0" * (point - len(text))
    else:
        body = text[:point] + "." + text[point:]
    return ("-" if sign else "") + body


def bound_text(bound: float | int, value: Any) -> str:
    """A minimum/maximum as kube-openapi prints it: as an int64 when the value checked is an integer."""
    if type(value) is int:
        return str(int(bound))
    return go_float(float(bound))


def go_quote(text: str) -> str:
    """Go's ``%q`` for the ASCII strings these messages carry; a long value shortened as values are."""
    return format_value(text)


# --- one function per kube-openapi error, returning the field.Error apiextensions makes of it ---------

def wrong_type(path: str, expected: str, value: Any) -> FieldError:
    found = json_type(value)
    return type_invalid(path, found, f"{path} in {IN} must be of type {expected}: {go_quote(found)}")


def wrong_format(path: str, fmt: str, value: str) -> FieldError:
    return type_invalid(path, value, f"{path} in {IN} must be of type {fmt}: {go_quote(value)}")


def invalid_value(path: str, value: Any, detail: str) -> FieldError:
    return invalid(path, value, detail)


def missing(path: str) -> FieldError:
    return required(path)


def not_in_enum(path: str, value: Any, enum: list[Any]) -> FieldError:
    values = [v if isinstance(v, str) else json.dumps(v, separators=(",", ":")) for v in enum]
    return not_supported(path, value, values)


def longer_than(path: str, max_length: int) -> FieldError:
    return too_long(path, max_length)


def shorter_than(path: str, value: str, min_length: int) -> FieldError:
    return invalid(path, value, f"{path} in {IN} should be at least {min_length} chars long")


def no_match(path: str, value: str, pattern: str) -> FieldError:
    return invalid(path, value, f"{path} in {IN} should match '{pattern}'")


def above(path: str, value: Any, bound: float | int, exclusive: bool) -> FieldError:
    words = "less than" if exclusive else "less than or equal to"
    return invalid(path, value, f"{path} in {IN} should be {words} {bound_text(bound, value)}")


def below(path: str, value: Any, bound: float | int, exclusive: bool) -> FieldError:
    words = "greater than" if exclusive else "greater than or equal to"
    return invalid(path, value, f"{path} in {IN} should be {words} {bound_text(bound, value)}")


def not_multiple(path: str, value: Any, factor: float | int) -> FieldError:
    return invalid(path, value, f"{path} in {IN} should be a multiple of {bound_text(factor, value)}")


def too_many_items(path: str, count: int, max_items: int) -> FieldError:
    return too_many(path, count, max_items)


def too_few_items(path: str, count: int, min_items: int) -> FieldError:
    return invalid(path, count, f"{path} in {IN} should have at least {min_items} items")


def duplicate_items(path: str) -> FieldError:
    return invalid(path, "", f"{path} in {IN} shouldn't contain duplicates")


def too_many_properties(path: str, count: int, max_props: int) -> FieldError:
    return too_many(path, count, max_props)


def too_few_properties(path: str, count: int, min_props: int) -> FieldError:
    return invalid(path, count, f"{path} in {IN} should have at least {min_props} properties")


def out_of_range(path: str, value: Any, type_name: str, fmt: str) -> FieldError:
    """A number outside its format (int32...), at its field. kube-openapi raises a plain error there, which
    kube-apiserver reports at no field at all (``<nil>: Invalid value: ""``); the field is named here (issue 33)."""
    return invalid(path, value, f"Checked value must be of type {type_name} with format {fmt} in {path}")


def any_of_failed(path: str) -> FieldError:
    return invalid("", "", f"{go_quote(path)} must validate at least one schema (anyOf)")


def one_of_failed(path: str, matched: int) -> FieldError:
    why = "Found none valid" if matched == 0 else f"Found {matched} valid alternatives"
    return invalid("", "", f"{go_quote(path)} must validate one and only one schema (oneOf). {why}")


def all_of_failed(path: str, matched: int) -> FieldError:
    why = ". None validated" if matched == 0 else ""
    return invalid("", "", f"{go_quote(path)} must validate all the schemas (allOf){why}")


def not_failed(path: str) -> FieldError:
    return invalid("", "", f"{go_quote(path)} must not validate the schema (not)")
