"""Schema patterns as Go's regexp reads and runs them (issue 44, item 6): RE2 syntax, Go's error texts, linear time."""

from __future__ import annotations

import time

import pytest

from mxjob_controller.kube import go_regexp
from mxjob_controller.kube.schema import compile_structural
from mxjob_controller.kube.schema.structural import pattern_errors


@pytest.mark.parametrize(("pattern", "message"), [
    ("+", "missing argument to repetition operator: `+`"),   # kube's own test of this message
    ("(", "missing closing ): `(`"),
    (")", "unexpected ): `)`"),
    ("[a", "missing closing ]: `[a`"),
    ("[z-a]", "invalid character class range: `z-a`"),
    ("a**", "invalid nested repetition operator: `**`"),
    ("x{1001}", "invalid repeat count: `{1001}`"),
    ("(?=a)", "invalid or unsupported Perl syntax: `(?=`"),   # lookaround: Python's re takes it, Go does not
    (r"(a)\1", r"invalid escape sequence: `\1`"),            # a backreference neither
    ("\\", "trailing backslash at end of expression: ``"),
    (r"a\C", r"invalid escape sequence: `\C`"),               # RE2 takes \C (any byte), Go does not
])
def test_what_go_refuses_is_refused_with_gos_text(pattern, message):
    with pytest.raises(go_regexp.GoRegexpError) as e:
        go_regexp.compile(pattern)
    assert str(e.value) == f"error parsing regexp: {message}"


@pytest.mark.parametrize("pattern", [r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", r"(?P<n>a)\d+", r"(?<n>a)", r"\\C", r"\pL+",
                                     r"(?i)abc", r"^(\+|-)?[0-9]+$"])
def test_what_go_takes_is_taken(pattern):
    assert go_regexp.compile(pattern) is not None


def test_matching_is_unanchored_as_gos_match_string():
    assert go_regexp.compile("b+").search("abbbc") is not None
    assert go_regexp.compile("^b").search("ab") is None


def test_a_catastrophic_pattern_is_linear_in_the_value():
    """``^(a+)+$`` against 40 ``a``s and ``!``: Python's re would take days (it doubled per character from 3.3 s
    at 25); RE2 answers at once, and a value 1,000 times longer takes about 1,000 times as long, not more."""
    regexp = go_regexp.compile("^(a+)+$")
    started = time.process_time()
    assert regexp.search("a" * 40 + "!") is None
    assert time.process_time() - started < 0.01
    started = time.process_time()
    assert regexp.search("a" * 400_000 + "!") is None
    assert time.process_time() - started < 0.5


def test_a_schema_with_such_a_pattern_validates_in_linear_time():
    schema = compile_structural({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "name": {"type": "string", "pattern": "^(a+)+$"}}}}})
    started = time.process_time()
    result = schema.apply({"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "x"},
                           "spec": {"name": "a" * 40 + "!"}})
    assert time.process_time() - started < 0.05
    assert [e.field for e in result.errors] == ["spec.name"]


def test_pattern_errors_name_every_place_a_schema_holds_a_pattern():
    bad = {"type": "string", "pattern": "(?=x)"}
    schema = {"type": "object", "pattern": "+", "properties": {"a": bad, "b": {"type": "array", "items": bad}},
              "additionalProperties": bad, "allOf": [bad], "not": bad}
    root = "spec.versions[0].schema.openAPIV3Schema"
    errors = pattern_errors(schema, root)
    assert [e.field for e in errors] == sorted([f"{root}.pattern", f"{root}.properties[a].pattern",
                                                f"{root}.properties[b].items.pattern",
                                                f"{root}.additionalProperties.pattern", f"{root}.allOf[0].pattern",
                                                f"{root}.not.pattern"])
    top = next(e for e in errors if e.field == f"{root}.pattern")
    assert top.message == ('Invalid value: "+": must be a valid regular expression, but isn\'t: error parsing '
                           'regexp: missing argument to repetition operator: `+`')
