"""Label and field selectors: parsing with apimachinery's grammar, and matching against plain dicts.

Label selector grammar (``k8s.io/apimachinery/pkg/labels``)::

    selector    := requirement ("," requirement)*
    requirement := KEY | "!" KEY | KEY ("=" | "==" | "!=") VALUE
                 | KEY ("in" | "notin") "(" VALUE ("," VALUE)* ")" | KEY (">" | "<") INTEGER
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from mxjob_controller.kube.names import label_value_errors, qualified_name_errors


class SelectorError(ValueError):
    """A selector string that does not parse; the message is what kube-apiserver would say."""


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    op: str  # one of: =, !=, in, notin, exists, !, gt, lt
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.op
        if op == "exists":
            return self.key in labels
        if op == "!":
            return self.key not in labels
        if op in ("=", "in"):
            return self.key in labels and labels[self.key] in self.values
        if op in ("!=", "notin"):
            return self.key not in labels or labels[self.key] not in self.values
        value = labels.get(self.key)
        if value is None:
            return False
        try:
            have = int(value)
        except ValueError:
            return False
        want = int(self.values[0])
        return have > want if op == "gt" else have < want

    def __str__(self) -> str:
        if self.op == "exists":
            return self.key
        if self.op == "!":
            return "!" + self.key
        if self.op in ("in", "notin"):
            return f"{self.key} {self.op} ({','.join(self.values)})"
        sym = {"gt": ">", "lt": "<"}.get(self.op, self.op)
        return f"{self.key}{sym}{self.values[0]}"


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A conjunction of requirements; the empty selector matches everything."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


EVERYTHING = LabelSelector()

_TOKEN = re.compile(r"\s*(!=|==|=|!|\(|\)|,|>|<|[^\s!=(),<>]+)")


def _tokens(text: str) -> list[str]:
    out: list[str] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if not m:  # pragma: no cover - the token class covers every character
            raise SelectorError(f"unable to parse requirement: unexpected character at {pos}")
        out.append(m.group(1))
        pos = m.end()
    return out


def _check_key(key: str) -> None:
    errs = qualified_name_errors(key)
    if errs:
        raise SelectorError(f"unable to parse requirement: key: Invalid value: {key!r}: {'; '.join(errs)}")


def _check_value(value: str) -> None:
    errs = label_value_errors(value)
    if errs:
        raise SelectorError(f"unable to parse requirement: values[0][{value}]: Invalid value: {value!r}: "
                            + "; ".join(errs))


def parse_label_selector(text: str | None) -> LabelSelector:
    """Parse ``labelSelector`` as kube-apiserver does; raises SelectorError on bad syntax."""
    if not text or not text.strip():
        return EVERYTHING
    toks = _tokens(text)
    reqs: list[Requirement] = []
    i = 0

    def need(what: str) -> str:
        nonlocal i
        if i >= len(toks):
            raise SelectorError(f"unable to parse requirement: found '', expected: {what}")
        tok = toks[i]
        i += 1
        return tok

    while i < len(toks):
        tok = need("identifier")
        if tok == "!":
            key = need("identifier after '!'")
            _check_key(key)
            reqs.append(Requirement(key, "!"))
        else:
            if tok in ("=", "==", "!=", "(", ")", ",", ">", "<"):
                raise SelectorError(f"unable to parse requirement: found '{tok}', expected: identifier")
            key = tok
            _check_key(key)
            if i >= len(toks) or toks[i] == ",":
                reqs.append(Requirement(key, "exists"))
            else:
                op = need("operator")
                if op in ("=", "=="):
                    value = toks[i] if i < len(toks) and toks[i] != "," else ""
                    if value:
                        i += 1
                    _check_value(value)
                    reqs.append(Requirement(key, "=", (value,)))
                elif op == "!=":
                    value = toks[i] if i < len(toks) and toks[i] != "," else ""
                    if value:
                        i += 1
                    _check_value(value)
                    reqs.append(Requirement(key, "!=", (value,)))
                elif op in ("in", "notin"):
                    if need("'('") != "(":
                        raise SelectorError(f"unable to parse requirement: found '{toks[i - 1]}', expected: '('")
                    values: list[str] = []
                    while True:
                        tok = need("',', ')' or identifier")
                        if tok == ")":
                            break
                        if tok == ",":
                            continue
                        _check_value(tok)
                        values.append(tok)
                    if not values:
                        raise SelectorError("unable to parse requirement: for 'in', 'notin' operators, "
                                            "values set can't be empty")
                    reqs.append(Requirement(key, op, tuple(values)))
                elif op in (">", "<"):
                    value = need("integer")
                    if not re.fullmatch(r"-?\d+", value):
                        raise SelectorError(f"unable to parse requirement: for 'Gt', 'Lt' operators, the value "
                                            f"must be an integer, found {value!r}")
                    reqs.append(Requirement(key, "gt" if op == ">" else "lt", (value,)))
                else:
                    raise SelectorError(f"unable to parse requirement: found '{op}', expected: "
                                        "'=', '!=', '==', 'in', notin'")
        if i < len(toks):
            if toks[i] != ",":
                raise SelectorError(f"unable to parse requirement: found '{toks[i]}', expected: ','")
            i += 1
            if i >= len(toks):
                raise SelectorError("unable to parse requirement: found '', expected: identifier")
    return LabelSelector(tuple(reqs))


def selector_from_label_selector(sel: Mapping | None) -> LabelSelector:
    """``metav1.LabelSelector`` (matchLabels + matchExpressions) → LabelSelector. None matches nothing."""
    if sel is None:
        return LabelSelector((Requirement("__nothing__", "in", ("__never__",)),))
    reqs = [Requirement(k, "=", (v,)) for k, v in sorted((sel.get("matchLabels") or {}).items())]
    ops = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}
    for expr in sel.get("matchExpressions") or []:
        op = ops.get(expr.get("operator", ""))
        if op is None:
            raise SelectorError(f"{expr.get('operator')!r} is not a valid label selector operator")
        reqs.append(Requirement(expr["key"], op, tuple(expr.get("values") or ())))
    return LabelSelector(tuple(reqs))


def format_labels(labels: Mapping[str, str]) -> str:
    """The canonical ``k=v,k2=v2`` form, sorted by key (what clients send as labelSelector)."""
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


# --- field selectors -----------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class FieldRequirement:
    field: str
    op: str  # "=" or "!="
    value: str


@dataclass(frozen=True, slots=True)
class FieldSelector:
    requirements: tuple[FieldRequirement, ...] = ()

    def matches(self, fields: Mapping[str, str]) -> bool:
        for r in self.requirements:
            have = fields.get(r.field, "")
            if (have == r.value) != (r.op == "="):
                return False
        return True

    @property
    def empty(self) -> bool:
        return not self.requirements

    def fields(self) -> set[str]:
        return {r.field for r in self.requirements}

    def value_of(self, field: str) -> str | None:
        """The value an ``=`` requirement pins ``field`` to (used to narrow lists by name)."""
        for r in self.requirements:
            if r.field == field and r.op == "=":
                return r.value
        return None


def _split_unescaped(text: str, sep: str) -> list[str]:
    parts, cur, esc = [], [], False
    for ch in text:
        if esc:
            cur.append(ch)
            esc = False
        elif ch == "\\":
            cur.append(ch)
            esc = True
        elif ch == sep:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


def _unescape(value: str) -> str:
    return re.sub(r"\\(.)", r"\1", value)


def parse_field_selector(text: str | None) -> FieldSelector:
    if not text or not text.strip():
        return FieldSelector()
    reqs = []
    for part in _split_unescaped(text, ","):
        if not part:
            continue
        m = re.match(r"^([^=!]+)(!=|==|=)(.*)$", part)
        if not m:
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{part}'")
        field, op, value = m.group(1).strip(), m.group(2), _unescape(m.group(3).strip())
        reqs.append(FieldRequirement(field, "!=" if op == "!=" else "=", value))
    return FieldSelector(tuple(reqs))


FieldGetter = Callable[[Mapping], str]


def object_fields(obj: Mapping, extra: Mapping[str, FieldGetter] | None = None) -> dict[str, str]:
    """The selectable fields of ``obj``: metadata.name/namespace plus the kind's own."""
    meta = obj.get("metadata") or {}
    fields = {"metadata.name": meta.get("name", ""), "metadata.namespace": meta.get("namespace", "")}
    for name, getter in (extra or {}).items():
        fields[name] = getter(obj)
    return fields


def path_getter(path: Iterable[str]) -> FieldGetter:
    """A getter for a dotted field path, returning "" when absent (what kube compares against)."""
    keys = tuple(path)

    def get(obj: Mapping) -> str:
        cur = obj
        for k in keys:
            if not isinstance(cur, Mapping):
                return ""
            cur = cur.get(k)
            if cur is None:
                return ""
        if isinstance(cur, bool):
            return "true" if cur else "false"
        return str(cur)

    return get
