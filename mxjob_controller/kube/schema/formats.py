"""String formats and numeric ranges that schemas name, and Kubernetes' resource quantities.

Only formats kube-apiserver actually checks are here; any other format name is accepted unchecked, as
kube-apiserver strips formats it does not support from a CRD's schema.
"""

from __future__ import annotations

import base64
import binascii
import functools
import ipaddress
import re
from collections.abc import Callable
from decimal import Decimal, InvalidOperation

_DATE_TIME = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_UUID = re.compile(r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$")
_HOSTNAME = re.compile(r"^[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?(\.[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?)*$")


def _ip(version: int) -> Callable[[str], bool]:
    def check(text: str) -> bool:
        try:
            return ipaddress.ip_address(text).version == version
        except ValueError:
            return False
    return check


def _cidr(text: str) -> bool:
    try:
        ipaddress.ip_network(text, strict=False)
    except ValueError:
        return False
    return "/" in text


def _byte(text: str) -> bool:
    try:
        base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


#: format name → check of a string value (True when valid).
STRING_FORMATS: dict[str, Callable[[str], bool]] = {
    "date-time": lambda s: bool(_DATE_TIME.match(s)),
    "datetime": lambda s: bool(_DATE_TIME.match(s)),
    "date": lambda s: bool(_DATE.match(s)),
    "byte": _byte,
    "uuid": lambda s: bool(_UUID.match(s)),
    "ipv4": _ip(4),
    "ipv6": _ip(6),
    "cidr": _cidr,
    "hostname": lambda s: len(s) <= 255 and bool(_HOSTNAME.match(s)),
}

#: format name → inclusive (low, high) range of an integer or number value.
NUMBER_RANGES: dict[str, tuple[int | float, int | float]] = {
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "float": (-3.4028234663852886e38, 3.4028234663852886e38),
}

# --- resource.Quantity -------------------------------------------------------------------------------

QUANTITY_REGEX = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
QUANTITY_FORMAT_WRONG = f"quantities must match the regular expression '{QUANTITY_REGEX}'"
QUANTITY_SUFFIX_WRONG = "unable to parse quantity's suffix"
_QUANTITY = re.compile(r"^([+-]?)([0-9]*)(?:\.([0-9]*))?([eEinumkKMGTP]*)([-+]?[0-9]*)$")
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1),
            "k": Decimal("1e3"), "M": Decimal("1e6"), "G": Decimal("1e9"), "T": Decimal("1e12"),
            "P": Decimal("1e15"), "E": Decimal("1e18")}
_EXPONENT = re.compile(r"^[eE]([-+]?[0-9]+)$")


@functools.lru_cache(maxsize=4096)
def parse_quantity(text: str) -> Decimal:
    """The value of a quantity string (``500m``, ``1Gi``, ``1e3``); ValueError with kube's message if bad."""
    m = _QUANTITY.match(text)
    if not text or not m or (not m.group(2) and m.group(3) is None):
        raise ValueError(QUANTITY_FORMAT_WRONG)
    sign, whole, frac, letters, tail = m.groups()
    number = Decimal(f"{sign}{whole or '0'}.{frac or '0'}")
    suffix = letters + tail
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    if suffix in _DECIMAL:
        return number * _DECIMAL[suffix]
    exp = _EXPONENT.match(suffix)
    if exp:
        try:
            return number.scaleb(int(exp.group(1)))
        except InvalidOperation:
            raise ValueError(QUANTITY_SUFFIX_WRONG) from None
    if tail and not letters:
        raise ValueError(QUANTITY_FORMAT_WRONG)
    raise ValueError(QUANTITY_SUFFIX_WRONG)


def quantity_value(value: object) -> Decimal | None:
    """A quantity given as a JSON string or number, or None when it does not parse."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    if isinstance(value, str):
        try:
            return parse_quantity(value)
        except ValueError:
            return None
    return None
