"""Small checks shared by the rule modules, each worded as kube's Go validation words it.

Checks take ``(value, base, key)`` and build the field path (``field_errors.child(base, key)``) only when reporting
an error, and name checks are memoised: rules run on every write of a pod, so the common case (valid) must be cheap.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from mxjob_controller.kube import names
from mxjob_controller.kube.field_errors import FieldError, child, invalid, not_supported, required

PORT_RANGE = "must be between 1 and 65535, inclusive"
NEGATIVE = "must be greater than or equal to 0"  # apimachinery's IsNegativeErrorMsg
MAX_INT32 = 2**31 - 1
TOTAL_ANNOTATION_SIZE = 256 * 1024
CONFIG_KEY_FORMAT = "[-._a-zA-Z0-9]+"
_CONFIG_KEY = re.compile("^" + CONFIG_KEY_FORMAT + "$")
NO_ERRORS: list[FieldError] = []  # shared, never appended to: callers ``extend`` with it


def _memo(check: Callable[[str], list[str]]) -> Callable[[str], tuple[str, ...]]:
    @functools.lru_cache(maxsize=16384)
    def memoised(value: str) -> tuple[str, ...]:
        return tuple(check(value))
    return memoised


def config_key_errors(key: str) -> list[str]:
    """``IsConfigMapKey``: the keys of configmaps and secrets, and the keys env vars select from them."""
    errs = []
    if len(key) > names.DNS1123_SUBDOMAIN_MAX:
        errs.append(f"must be no more than {names.DNS1123_SUBDOMAIN_MAX} characters")
    if not _CONFIG_KEY.match(key):
        errs.append("a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. "
                    f"'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
                    f"'{CONFIG_KEY_FORMAT}')")
    if key in (".", ".."):
        errs.append(f"must not be '{key}'")
    elif key.startswith(".."):
        errs.append("must not start with '..'")
    return errs


dns_label_messages = _memo(names.dns1123_label_errors)
dns_subdomain_messages = _memo(names.dns1123_subdomain_errors)
port_name_messages = _memo(names.iana_svc_name_errors)
env_var_messages = _memo(names.env_var_name_errors)
qualified_name_messages = _memo(names.qualified_name_errors)
label_value_messages = _memo(names.label_value_errors)
config_key_messages = _memo(config_key_errors)


def each_message(path: str, value: Any, messages: Sequence[str]) -> list[FieldError]:
    return [invalid(path, value, m) for m in messages]


def by_messages(check: Callable[[str], tuple[str, ...]], value: Any, base: str, key: str) -> list[FieldError]:
    """Invalid errors at ``base.key`` for a non-empty string ``value`` that ``check`` faults."""
    if type(value) is not str or not value:
        return NO_ERRORS
    msgs = check(value)
    return each_message(child(base, key), value, msgs) if msgs else NO_ERRORS


def dns_label(value: Any, base: str, key: str) -> list[FieldError]:
    return by_messages(dns_label_messages, value, base, key)


def dns_subdomain(value: Any, base: str, key: str) -> list[FieldError]:
    return by_messages(dns_subdomain_messages, value, base, key)


def enum(value: Any, base: str, key: str, supported: Sequence[str]) -> list[FieldError]:
    """An enum the Go types enforce: absent passes (servers default it), "" is Required, others NotSupported."""
    if value is None or value in supported:
        return NO_ERRORS
    if value == "":
        return [required(child(base, key))]
    return [not_supported(child(base, key), value, supported)]


def port_number(value: Any, base: str, key: str) -> list[FieldError]:
    if type(value) is int and not 1 <= value <= 65535:
        return [invalid(child(base, key), value, PORT_RANGE)]
    return NO_ERRORS


def port_number_or_name(value: Any, base: str, key: str) -> list[FieldError]:
    """``ValidatePortNumOrName`` (targetPort, probe ports): a number in range or an IANA service name."""
    if type(value) is str:
        msgs = port_name_messages(value)
        return each_message(child(base, key), value, msgs) if msgs else NO_ERRORS
    return port_number(value, base, key)


def nonnegative(obj: Mapping, key: str, base: str) -> list[FieldError]:
    value = obj.get(key)
    if type(value) in (int, float) and value < 0:
        return [invalid(child(base, key), value, NEGATIVE)]
    return NO_ERRORS


def labels(value: Any, base: str, key: str) -> list[FieldError]:
    """``ValidateLabels``: keys are qualified names, values label values; every error names the map."""
    if not isinstance(value, Mapping) or not value:
        return NO_ERRORS
    errs: list[FieldError] = []
    for k, v in value.items():
        msgs = qualified_name_messages(k)
        if msgs:
            errs.extend(each_message(child(base, key), k, msgs))
        if type(v) is str:
            msgs = label_value_messages(v)
            if msgs:
                errs.extend(each_message(child(base, key), v, msgs))
    return errs


def annotations(value: Any, base: str, key: str) -> list[FieldError]:
    """``ValidateAnnotations``: qualified-name keys (case-insensitive), 256 KiB in all."""
    if not isinstance(value, Mapping) or not value:
        return NO_ERRORS
    errs: list[FieldError] = []
    size = 0
    for k, v in value.items():
        msgs = qualified_name_messages(k.lower())
        if msgs:
            errs.extend(each_message(child(base, key), k, msgs))
        size += len(k) + (len(v) if type(v) is str else 0)
    if size > TOTAL_ANNOTATION_SIZE:
        errs.append(FieldError(child(base, key), "FieldValueTooLong",
                               f"Too long: may not be more than {TOTAL_ANNOTATION_SIZE} bytes"))
    return errs


def items(value: Any) -> list[tuple[int, dict]]:
    """The (index, object) pairs of a list, skipping anything that is not an object."""
    if type(value) is not list:
        return []
    return [(i, v) for i, v in enumerate(value) if type(v) is dict]
