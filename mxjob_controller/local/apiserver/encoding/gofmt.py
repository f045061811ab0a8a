"""Go's ``fmt`` verbs for values decoded from JSON, so messages read as kube-apiserver's do."""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any


def go_format(value: Any) -> str:
    """``fmt.Sprintf("%v", value)`` for decoded JSON: ``map[a:1 b:[x y]]`` (keys sorted), ``<nil>``..."""
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_format(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(go_format(v) for v in value) + "]"
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return go_float(value)
    return str(value)


def go_float(value: float) -> str:
    """``%v`` of a float64: the shortest digits, in exponent form below 1e-4 or from 1e6 (``1e+06``)."""
    if math.isnan(value) or math.isinf(value):
        return {"nan": "NaN", "inf": "+Inf", "-inf": "-Inf"}[repr(value)]
    if value == 0:
        return "0"
    digits = Decimal(repr(value)).normalize()
    sign, mantissa, exponent = digits.as_tuple()
    assert isinstance(exponent, int)
    exp10 = len(mantissa) + exponent - 1
    if exp10 < -4 or exp10 >= 6:
        text = "".join(map(str, mantissa))
        body = text[0] + ("." + text[1:] if len(text) > 1 else "")
        return f"{'-' if sign else ''}{body}e{'-' if exp10 < 0 else '+'}{abs(exp10):02d}"
    return format(digits, "f")
