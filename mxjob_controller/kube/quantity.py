"""Resource quantities as values (apimachinery's ``resource.Quantity``): parse, add, compare, and print in the
canonical form Go prints them.

Why: a controller that sums container requests into a PodGroup's ``minResources`` must write what the Go
operators wrote (``"1500m"``, ``"3Gi"``, ``"1536Mi"``), and must compare quantities by value, not by spelling
(``"1000m"`` and ``"1"`` are the same CPU), or it would rewrite an unchanged PodGroup on every pass.

Guarantees (as apimachinery): values are exact (fractions, no floats), rounded up to nano units when parsed; a
sum keeps the format (decimal SI, binary SI, decimal exponent) of its first non-zero term; the canonical form
uses the largest suffix that keeps an integer mantissa (binary SI falls back to decimal SI for values below 1024
or that are not whole numbers).

A CRD's Quantity field accepts the spellings of controller-gen's pattern, :data:`QUANTITY_PATTERN`; the CRD schemas
and the job validators share it, so the API server and the validator refuse the same strings.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction

DECIMAL_SI, BINARY_SI, DECIMAL_EXPONENT = "DecimalSI", "BinarySI", "DecimalExponent"

_NUMBER = re.compile(r"^([+-]?)([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(.*)$")
_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIXES = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL_BY_EXPONENT = {v: k for k, v in _DECIMAL_SUFFIXES.items()}
_BINARY_BY_POWER = {0: "", **{v: k for k, v in _BINARY_SUFFIXES.items()}}
_EXPONENT = re.compile(r"^[eE]([+-]?[0-9]+)$")
_NANO = 10 ** 9


class QuantityError(ValueError):
    """Not a quantity."""


@dataclass(frozen=True, slots=True)
class Quantity:
    value: Fraction
    format: str = DECIMAL_SI

    def __add__(self, other: Quantity) -> Quantity:
        fmt = other.format if self.value == 0 else self.format
        return Quantity(self.value + other.value, fmt)

    def __str__(self) -> str:
        return canonical(self)


ZERO = Quantity(Fraction(0))


def _round_up_to_nano(value: Fraction) -> Fraction:
    scaled = value * _NANO
    if scaled.denominator == 1:
        return value
    rounded = math.ceil(scaled) if scaled > 0 else math.floor(scaled)   # away from zero, as inf.RoundUp
    return Fraction(rounded, _NANO)


def parse(text: str | int | float) -> Quantity:
    """A quantity from its JSON form (a string such as ``"500m"``, or a number); QuantityError if it is none."""
    if isinstance(text, bool):
        raise QuantityError(f"not a quantity: {text!r}")
    if isinstance(text, int):
        return Quantity(Fraction(text))
    if isinstance(text, float):
        text = repr(text)
    match = _NUMBER.match(text.strip()) if isinstance(text, str) else None
    if match is None:
        raise QuantityError(f"not a quantity: {text!r}")
    sign, number, suffix = match.groups()
    magnitude = Fraction(number if not number.endswith(".") else number[:-1] or "0")
    if suffix in _DECIMAL_SUFFIXES:
        value, fmt = magnitude * Fraction(10) ** _DECIMAL_SUFFIXES[suffix], DECIMAL_SI
    elif suffix in _BINARY_SUFFIXES:
        value, fmt = magnitude * 1024 ** _BINARY_SUFFIXES[suffix], BINARY_SI
    elif (exponent := _EXPONENT.match(suffix)) is not None:
        value, fmt = magnitude * Fraction(10) ** int(exponent.group(1)), DECIMAL_EXPONENT
    else:
        raise QuantityError(f"not a quantity (unknown suffix {suffix!r}): {text!r}")
    value = _round_up_to_nano(-value if sign == "-" else value)
    if fmt == BINARY_SI and 0 < abs(value) < 1:
        fmt = DECIMAL_SI
    return Quantity(value, fmt)


def canonical(q: Quantity) -> str:
    """The string Go's ``Quantity.String()`` gives."""
    if q.value == 0:
        return "0"
    sign = "-" if q.value < 0 else ""
    magnitude = abs(q.value)
    if q.format == BINARY_SI and magnitude >= 1024 and magnitude.denominator == 1:
        mantissa, power = magnitude.numerator, 0
        while mantissa % 1024 == 0 and power < max(_BINARY_BY_POWER):
            mantissa, power = mantissa // 1024, power + 1
        return f"{sign}{mantissa}{_BINARY_BY_POWER[power]}"
    mantissa, exponent = math.ceil(magnitude * _NANO), -9
    while mantissa % 10 == 0:
        mantissa, exponent = mantissa // 10, exponent + 1
    shift = exponent % 3                      # the exponent goes down to a multiple of 3
    mantissa, exponent = mantissa * 10 ** shift, exponent - shift
    if q.format == DECIMAL_EXPONENT:
        suffix = f"e{exponent}" if exponent else ""
    else:
        suffix = _DECIMAL_BY_EXPONENT.get(exponent, f"e{exponent}")
    return f"{sign}{mantissa}{suffix}"


def normalized(value: str | int | float) -> str:
    """``value`` printed canonically (``"1000m"`` → ``"1"``); a value that is no quantity is returned as text."""
    try:
        return canonical(parse(value))
    except QuantityError:
        return str(value)


def same(a: object, b: object) -> bool:
    """Whether two JSON quantities have the same value (either not being a quantity: whether they are equal)."""
    try:
        return parse(a).value == parse(b).value  # type: ignore[arg-type]
    except (QuantityError, TypeError):
        return a == b


# --- the CRD's pattern ------------------------------------------------------------------------------------------------

#: What controller-gen puts on Quantity fields of CRDs: a plain number with an optional SI, binary or
#: exponent suffix ("2", "500m", "1.5Gi", "1e3").
QUANTITY_PATTERN = (r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
                    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$")
_QUANTITY = re.compile(QUANTITY_PATTERN)
QUANTITY_HINT = 'must be a quantity such as 2, "500m" or "4Gi"'


def is_quantity(value: object) -> bool:
    """True for an integer or a quantity string; what kube-apiserver accepts in a CRD's Quantity field."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, str) and bool(_QUANTITY.match(value))
