"""CRD transition rules (``x-kubernetes-validations`` using ``oldSelf``) of the form a CRD uses to make fields
immutable, enforced on update as kube-apiserver enforces them.

The embedded server has no CEL interpreter. It evaluates one family of rules, the one immutability needs: an
equality of two *selections*, each ``self`` or ``oldSelf`` followed by field selections, plain (``.name``: a missing
field is an evaluation error, "no such key") or optional (``.?name``: a missing field is ``optional.none()``, equal
only to another none), e.g.

    self == oldSelf
    self.?runPolicy.?managedBy == oldSelf.?runPolicy.?managedBy

with the rule's ``message``, ``fieldPath`` and ``reason``. As in kube-apiserver, a transition rule is evaluated only
on update and only where the old object has a value at the rule's place too (under object properties and map
values); its error names the rule's place (plus ``fieldPath``) and shows the value for scalars, none for objects
and arrays. Other rules (no ``oldSelf``, or beyond this grammar) are not evaluated: a known gap, logged once per
CRD version, never a refusal of a CRD a real cluster accepts.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from mxjob_controller.kube import field_errors as fe
from mxjob_controller.kube.field_errors import FieldError

log = logging.getLogger(__name__)

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_SELECTION = rf"(self|oldSelf)((?:\.\??{_IDENT})*)"
_EQUALITY = re.compile(rf"^\s*{_SELECTION}\s*==\s*{_SELECTION}\s*$")
_SEGMENT = re.compile(rf"\.(\?)?({_IDENT})")
_MAP_VALUE = "*"   # a path step through additionalProperties: every key


class _None:
    """CEL's ``optional.none()``."""


NONE = _None()


class RuleError(Exception):
    """The rule could not be evaluated (CEL's "no such key")."""


@dataclass(frozen=True, slots=True)
class Selection:
    root: str                                  # "self" or "oldSelf"
    steps: tuple[tuple[str, bool], ...]        # (field, optional)

    def select(self, new: Any, old: Any) -> Any:
        value = new if self.root == "self" else old
        for name, optional in self.steps:
            if value is NONE:
                continue
            if isinstance(value, dict) and name in value:
                value = value[name]
            elif optional:
                value = NONE
            else:
                raise RuleError(f"no such key: {name}")
        return value


@dataclass(frozen=True, slots=True)
class TransitionRule:
    place: tuple[str, ...]     # property names from the root; "*" steps through a map's values
    schema_type: str           # the type of the schema the rule sits on ("object" values are not shown)
    left: Selection
    right: Selection
    rule: str
    message: str
    field_path: str            # ".runPolicy.managedBy", or ""
    reason: str                # FieldValueInvalid (default), FieldValueForbidden, FieldValueRequired...

    def holds(self, new: Any, old: Any) -> bool:
        return _same(self.left.select(new, old), self.right.select(new, old))

    @property
    def described(self) -> str:
        """How kube names the rule in messages: its message, else its text."""
        return self.message.strip() or self.rule.strip()


def _same(a: Any, b: Any) -> bool:
    if a is NONE or b is NONE:
        return a is b
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)   # 1 != true, unlike Python's ==


def _parse(text: str) -> tuple[Selection, Selection] | None:
    match = _EQUALITY.match(text)
    if match is None:
        return None
    sides = []
    for root, chain in (match.group(1, 2), match.group(3, 4)):
        sides.append(Selection(root, tuple((name, bool(q)) for q, name in _SEGMENT.findall(chain))))
    return sides[0], sides[1]


def _walk(schema: Mapping[str, Any], place: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Mapping[str, Any]]]:
    yield place, schema
    for name, sub in (schema.get("properties") or {}).items():
        if isinstance(sub, Mapping):
            yield from _walk(sub, (*place, name))
    extra = schema.get("additionalProperties")
    if isinstance(extra, Mapping):
        yield from _walk(extra, (*place, _MAP_VALUE))


def compile_rules(schema: Mapping[str, Any] | None, what: str = "") -> tuple[TransitionRule, ...]:
    """The transition rules of a CRD version's ``openAPIV3Schema`` this server can evaluate."""
    rules: list[TransitionRule] = []
    skipped: list[str] = []
    for place, node in _walk(schema or {}, ()):
        for entry in node.get("x-kubernetes-validations") or ():
            text = entry.get("rule") if isinstance(entry, Mapping) else None
            if not isinstance(text, str) or "oldSelf" not in text:
                continue
            parsed = _parse(text)
            if parsed is None:
                skipped.append(text)
                continue
            rules.append(TransitionRule(place, str(node.get("type") or ""), *parsed, rule=text,
                                        message=str(entry.get("message") or ""),
                                        field_path=str(entry.get("fieldPath") or ""),
                                        reason=str(entry.get("reason") or "FieldValueInvalid")))
    if skipped:
        log.warning("%s: transition rules this server cannot evaluate are not enforced: %s", what or "a CRD",
                    "; ".join(skipped))
    return tuple(rules)


def _places(new: Any, old: Any, place: tuple[str, ...], path: str) -> Iterator[tuple[str, Any, Any]]:
    """(field path, new value, old value) at every location ``place`` names in both objects."""
    if not place:
        yield path, new, old
        return
    if not isinstance(new, dict) or not isinstance(old, dict):
        return
    step, rest = place[0], place[1:]
    if step == _MAP_VALUE:
        for key in new:
            if key in old:
                yield from _places(new[key], old[key], rest, fe.key_child(path, key))
    elif step in new and step in old:
        yield from _places(new[step], old[step], rest, fe.child(path, step))


def _failure(rule: TransitionRule, path: str, value: Any) -> FieldError:
    step = rule.field_path.lstrip(".")  # a relative path: "x", "x.y", "[0]", "['key']"...
    at = path + step if not step or step.startswith("[") else fe.child(path, step)
    detail = rule.message.strip() or f"failed rule: {rule.rule.strip()}"
    shown = rule.schema_type not in ("object", "array")
    if rule.reason == "FieldValueForbidden":
        return fe.forbidden(at, detail)
    if rule.reason == "FieldValueRequired":
        return fe.required(at, detail)
    if rule.reason == "FieldValueDuplicate":
        return fe.duplicate(at, value) if shown else FieldError(at, "FieldValueDuplicate", "Duplicate value")
    if shown:
        return fe.invalid(at, value, detail)
    return FieldError(at, "FieldValueInvalid", f"Invalid value: {detail}")


def check(rules: tuple[TransitionRule, ...], new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    """Every transition rule ``new`` breaks, against ``old`` (an update of the same object)."""
    errors: list[FieldError] = []
    for rule in rules:
        for path, new_value, old_value in _places(new, old, rule.place, ""):
            try:
                if rule.holds(new_value, old_value):
                    continue
            except RuleError as e:
                errors.append(fe.invalid(path, rule.schema_type, f"{e} evaluating rule: {rule.described}"))
                continue
            errors.append(_failure(rule, path, new_value))
    return errors
