"""Kubernetes name and identifier syntax, with the messages kube-apiserver uses.

Each ``*_errors`` function returns a list of messages (empty when valid) so callers can report every
problem at once, the way apimachinery's ``validation.Is*`` functions do.
"""

from __future__ import annotations

import re

_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + r"(\." + _DNS1123_LABEL_FMT + ")*"
_DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE_FMT = "(" + _QUALIFIED_NAME_FMT + ")?"
_ENV_VAR_FMT = "[-._a-zA-Z][-._a-zA-Z0-9]*"

_DNS1123_LABEL = re.compile("^" + _DNS1123_LABEL_FMT + "$")
_DNS1123_SUBDOMAIN = re.compile("^" + _DNS1123_SUBDOMAIN_FMT + "$")
_DNS1035_LABEL = re.compile("^" + _DNS1035_LABEL_FMT + "$")
_QUALIFIED_NAME = re.compile("^" + _QUALIFIED_NAME_FMT + "$")
_LABEL_VALUE = re.compile("^" + _LABEL_VALUE_FMT + "$")
_ENV_VAR = re.compile("^" + _ENV_VAR_FMT + "$")
_IANA_SVC_NAME = re.compile("^[-a-z0-9]+$")
_HAS_LETTER = re.compile("[a-z]")

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
DNS1035_LABEL_MAX = 63
QUALIFIED_NAME_MAX = 63
LABEL_VALUE_MAX = 63
IANA_SVC_NAME_MAX = 15


def _max_len(n: int) -> str:
    return f"must be no more than {n} characters"


def _regex_msg(what: str, fmt: str, examples: tuple[str, ...]) -> str:
    ex = ",  or ".join(f"'{e}'" for e in examples)
    return f"{what} (e.g. {ex}, regex used for validation is '{fmt}')"


def dns1123_label_errors(value: str) -> list[str]:
    """RFC 1123 label: namespaces, container names, port names' hosts."""
    errs = []
    if len(value) > DNS1123_LABEL_MAX:
        errs.append(_max_len(DNS1123_LABEL_MAX))
    if not _DNS1123_LABEL.match(value):
        errs.append(_regex_msg(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
            "and must start and end with an alphanumeric character",
            _DNS1123_LABEL_FMT, ("my-name", "123-abc")))
    return errs


def dns1123_subdomain_errors(value: str) -> list[str]:
    """RFC 1123 subdomain: the name of most objects (pods, configmaps, custom resources...)."""
    errs = []
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        errs.append(_max_len(DNS1123_SUBDOMAIN_MAX))
    if not _DNS1123_SUBDOMAIN.match(value):
        errs.append(_regex_msg(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
            "and must start and end with an alphanumeric character",
            _DNS1123_SUBDOMAIN_FMT, ("example.com",)))
    return errs


def dns1035_label_errors(value: str) -> list[str]:
    """RFC 1035 label: service names (they become DNS host names and env var prefixes)."""
    errs = []
    if len(value) > DNS1035_LABEL_MAX:
        errs.append(_max_len(DNS1035_LABEL_MAX))
    if not _DNS1035_LABEL.match(value):
        errs.append(_regex_msg(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
            "alphabetic character, and end with an alphanumeric character",
            _DNS1035_LABEL_FMT, ("my-name", "abc-123")))
    return errs


def path_segment_errors(value: str) -> list[str]:
    """What any object name must satisfy to be usable in a URL path (RBAC names allow ':')."""
    if value in (".", ".."):
        return [f"may not be '{value}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in value]


def qualified_name_errors(value: str) -> list[str]:
    """``[prefix/]name``: label and annotation keys, finalizer names."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + m for m in dns1123_subdomain_errors(prefix))
    else:
        return [_regex_msg(
            "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and "
            "end with an alphanumeric character",
            _QUALIFIED_NAME_FMT, ("MyName", "my.name", "123-abc"))
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    if not name:
        errs.append("name part must be non-empty")
    else:
        if len(name) > QUALIFIED_NAME_MAX:
            errs.append("name part " + _max_len(QUALIFIED_NAME_MAX))
        if not _QUALIFIED_NAME.match(name):
            errs.append("name part " + _regex_msg(
                "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
                "alphanumeric character",
                _QUALIFIED_NAME_FMT, ("MyName", "my.name", "123-abc")))
    return errs


def label_value_errors(value: str) -> list[str]:
    errs = []
    if len(value) > LABEL_VALUE_MAX:
        errs.append(_max_len(LABEL_VALUE_MAX))
    if not _LABEL_VALUE.match(value):
        errs.append(_regex_msg(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
            "and must start and end with an alphanumeric character",
            _LABEL_VALUE_FMT, ("MyValue", "my_value", "12345")))
    return errs


def iana_svc_name_errors(value: str) -> list[str]:
    """Named ports: at most 15 characters, lowercase, a letter somewhere, no '--' or edge '-'."""
    errs = []
    if len(value) > IANA_SVC_NAME_MAX:
        errs.append(_max_len(IANA_SVC_NAME_MAX))
    if not _IANA_SVC_NAME.match(value):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if "--" in value:
        errs.append("must not contain consecutive hyphens")
    if not _HAS_LETTER.search(value):
        errs.append("must contain at least one letter (a-z)")
    if value.startswith("-") or value.endswith("-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def env_var_name_errors(value: str) -> list[str]:
    errs = []
    if not _ENV_VAR.match(value):
        errs.append(_regex_msg(
            "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or "
            "'.', and must not start with a digit",
            _ENV_VAR_FMT, ("my.env-name", "MY_ENV.NAME", "MyEnvName1")))
    if value in (".", ".."):
        errs.append(f"must not be '{value}'")
    elif value.startswith(".."):
        errs.append("must not start with '..'")
    return errs
