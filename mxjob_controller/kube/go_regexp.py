"""Regular expressions as Go's ``regexp`` reads and runs them, for the ``pattern`` of an OpenAPI schema.

kube-apiserver compiles a CRD's ``pattern`` with Go's ``regexp``: RE2 syntax (no backreferences, no lookaround)
and matching in time linear in the value, whatever the pattern. Python's ``re`` backtracks: ``^(a+)+$`` against
25 ``a``s and a ``!`` took seconds, doubling with each character. So patterns are compiled by RE2 itself (PyPI
``google-re2``, the library Go's engine is a port of), and a pattern RE2 refuses gets Go's error text, as kube's
CRD validation prints it: ``error parsing regexp: missing argument to repetition operator: `+```.

Only what RE2 and Go disagree on is mended here: the error wording (RE2's codes are Go's, named otherwise) and
``\\C`` (any byte), which RE2 accepts and Go refuses.
"""

from __future__ import annotations

import re2

#: RE2's texts for its error codes (``re2.cc``), and Go's for the same (``regexp/syntax``).
_GO_CODES = {
    "unexpected error": "regexp/syntax: internal error",
    "invalid escape sequence": "invalid escape sequence",
    "invalid character class": "invalid character class",
    "invalid character class range": "invalid character class range",
    "missing ]": "missing closing ]",
    "missing )": "missing closing )",
    "unexpected )": "unexpected )",
    "trailing \\": "trailing backslash at end of expression",
    "no argument for repetition operator": "missing argument to repetition operator",
    "invalid repetition size": "invalid repeat count",
    "bad repetition operator": "invalid nested repetition operator",
    "invalid perl operator": "invalid or unsupported Perl syntax",
    "invalid UTF-8": "invalid UTF-8",
    "invalid named capture group": "invalid named capture",
    "pattern too large - compile failed": "expression too large",
}


Regexp = re2._Regexp


class GoRegexpError(ValueError):
    """A pattern Go's ``regexp.Compile`` refuses; ``str()`` is Go's ``*syntax.Error`` text."""


def _options() -> re2.Options:
    options = re2.Options()
    options.log_errors = False   # RE2 would print each refusal on the server's stderr
    return options


_OPTIONS = _options()


def compile(pattern: str) -> Regexp:
    """``pattern`` compiled for :meth:`search` (Go's ``MatchString``: unanchored); GoRegexpError if Go refuses it."""
    if "\\C" in pattern.replace("\\\\", ""):
        raise GoRegexpError("error parsing regexp: invalid escape sequence: `\\C`")
    try:
        return re2.compile(pattern, options=_OPTIONS)
    except re2.error as e:
        raise GoRegexpError(_go_text(e)) from None


def _go_text(error: re2.error) -> str:
    raw = error.args[0] if error.args else b""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    code, _, arg = text.partition(": ")
    go_code = _GO_CODES.get(code)
    if go_code is None:   # a text this table does not know: RE2's own, whole
        return f"error parsing regexp: {text}"
    return f"error parsing regexp: {go_code}: `{arg}`"   # Go prints the expression even when it is empty
