"""Compiled schema nodes: one object per schema, walking a decoded JSON value once.

A walk does, in one pass and in kube-apiserver's order for each object: apply ``default``s, drop
``null``s the schema does not allow, record (and, when pruning, delete) unknown fields, check every value,
then check ``required``. It collects field errors and unknown-field paths in a :class:`Walk`; rule
functions attached to a node (checks the schema cannot express) are queued and run after the walk, only
when no value had the wrong type, so they may trust the types.

Paths are built as kube-openapi and the strict JSON decoder build them: ``.name`` for a property or a
map key, ``[i]`` for a list item (``spec.containers[0].image``).

Guarantee: nothing here allocates per schema node at walk time beyond path strings for children that
are themselves walked; leaves (scalars without constraints) are type-checked inline by their parent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from mxjob_controller.kube import go_regexp
from mxjob_controller.kube.field_errors import FieldError
from mxjob_controller.kube.field_errors import child as child_path
from mxjob_controller.kube.schema.formats import parse_quantity
from mxjob_controller.kube.schema.messages import (
    above,
    all_of_failed,
    any_of_failed,
    below,
    duplicate_items,
    invalid_value,
    longer_than,
    missing,
    no_match,
    not_failed,
    not_in_enum,
    not_multiple,
    one_of_failed,
    out_of_range,
    shorter_than,
    too_few_items,
    too_few_properties,
    too_many_items,
    too_many_properties,
    wrong_format,
    wrong_type,
)

Rule = Callable[[dict, str], list[FieldError]]
NONE_TYPE = type(None)
ANY_TYPES = frozenset({str, int, float, bool, dict, list, NONE_TYPE})
NO_DEFAULT = object()


class Walk:
    """What one walk collects, and what it may do to the value it walks (nothing unless ``prune`` or
    ``defaults``: then unknown fields and disallowed nulls go, defaults come, 2.0 becomes 2)."""

    __slots__ = ("defaults", "deferred", "errors", "malformed", "prune", "rules", "unknown")

    def __init__(self, prune: bool = False, defaults: bool = False, rules: bool = True) -> None:
        self.prune = prune
        self.defaults = defaults
        self.rules = rules
        self.errors: list[FieldError] = []
        self.unknown: list[str] = []
        self.deferred: list[tuple[Sequence[Rule], dict, str]] = []
        self.malformed = 0  # errors that mean a value is not of its type: rules cannot trust the object

    def bad_type(self, error: FieldError) -> None:
        self.errors.append(error)
        self.malformed += 1

    def run_rules(self) -> None:
        """Run the queued rule functions (callers do when the walk found no value of the wrong type)."""
        for rules, value, path in self.deferred:
            for rule in rules:
                self.errors.extend(rule(value, path))
        self.deferred.clear()


def copy_json(value: Any) -> Any:
    if type(value) is dict:
        return {k: copy_json(v) for k, v in value.items()}
    if type(value) is list:
        return [copy_json(v) for v in value]
    return value


class Node:
    """Base of every compiled schema. ``leaf`` nodes need only their type checked."""

    __slots__ = (
        "all_of",
        "any_of",
        "common",
        "default",
        "enum",
        "int_ok",
        "leaf",
        "not_",
        "nullable",
        "one_of",
        "type_name",
        "types",
    )

    def __init__(self) -> None:
        self.types: frozenset[type] = ANY_TYPES
        self.type_name = ""
        self.nullable = False
        self.int_ok = False          # an integral float (2.0) passes as an integer
        self.enum: list[Any] | None = None
        self.default: Any = NO_DEFAULT
        self.any_of: list[Node] = []
        self.one_of: list[Node] = []
        self.all_of: list[Node] = []
        self.not_: Node | None = None
        self.common = False  # has an enum or a combinator to check, whatever the type
        self.leaf = False

    @property
    def has_default(self) -> bool:
        return self.default is not NO_DEFAULT

    def finish(self) -> None:
        """Decide ``leaf`` once the node is complete (compilers call it after filling the node)."""
        self.common = bool(self.enum is not None or self.any_of or self.one_of or self.all_of or self.not_)
        self.leaf = not self.common

    def type_error(self, value: Any, path: str) -> FieldError:
        return wrong_type(path, self.type_name, value)

    def check_type(self, value: Any, path: str, w: Walk) -> bool:
        """True when ``value`` has one of the node's types; else records the error."""
        t = type(value)
        if t in self.types or (t is float and self.int_ok and value.is_integer()):
            return True
        w.bad_type(self.type_error(value, path))
        return False

    def walk(self, value: Any, path: str, w: Walk) -> None:
        if self.check_type(value, path, w) and self.common:
            self.check_common(value, path, w)

    def check_common(self, value: Any, path: str, w: Walk) -> None:
        """``enum`` and the combinators (anyOf, oneOf, allOf, not), which apply to any type."""
        if self.enum is not None and not _in_enum(value, self.enum):
            w.errors.append(not_in_enum(path, value, self.enum))
        if self.any_of or self.one_of or self.all_of or self.not_ is not None:
            _combinators(self, value, path, w)


class AnyNode(Node):
    """A schema with no type: any JSON value passes (preserve-unknown-fields, ``JSON``, raw extensions)."""

    __slots__ = ()


class ScalarNode(Node):
    """string, integer, number, boolean (or int-or-string), with their value constraints."""

    __slots__ = (
        "exclusive_max",
        "exclusive_min",
        "fmt",
        "fmt_check",
        "max_length",
        "maximum",
        "min_length",
        "minimum",
        "multiple_of",
        "pattern",
        "pattern_text",
        "range",
    )

    def __init__(self) -> None:
        super().__init__()
        self.minimum: float | int | None = None
        self.maximum: float | int | None = None
        self.exclusive_min = False
        self.exclusive_max = False
        self.multiple_of: float | int | None = None
        self.min_length: int | None = None
        self.max_length: int | None = None
        self.pattern: go_regexp.Regexp | None = None
        self.pattern_text = ""
        self.fmt = ""
        self.fmt_check: Callable[[str], bool] | None = None
        self.range: tuple[int | float, int | float] | None = None

    def finish(self) -> None:
        super().finish()
        self.leaf = self.leaf and not (
            self.minimum is not None or self.maximum is not None or self.multiple_of is not None
            or self.min_length is not None or self.max_length is not None or self.pattern is not None
            or self.fmt_check is not None or self.range is not None)

    def walk(self, value: Any, path: str, w: Walk) -> None:
        t = type(value)
        if t not in self.types and not (t is float and self.int_ok and value.is_integer()):   # check_type, inlined
            w.bad_type(self.type_error(value, path))
            if self.enum is not None and not _in_enum(value, self.enum):
                w.errors.append(not_in_enum(path, value, self.enum))
            return
        if t is str:
            self._check_string(value, path, w)
        elif t is int or t is float:
            self._check_number(value, path, w)
        if self.common:
            self.check_common(value, path, w)

    def _check_string(self, value: str, path: str, w: Walk) -> None:
        # kube-openapi reports at most one of maxLength, minLength, pattern (in that order).
        if self.max_length is not None and len(value) > self.max_length:
            w.errors.append(longer_than(path, self.max_length))
        elif self.min_length is not None and len(value) < self.min_length:
            w.errors.append(shorter_than(path, value, self.min_length))
        elif self.pattern is not None and not self.pattern.search(value):
            w.errors.append(no_match(path, value, self.pattern_text))
        if self.fmt_check is not None and not self.fmt_check(value):
            w.bad_type(wrong_format(path, self.fmt, value))

    def _check_number(self, value: float | int, path: str, w: Walk) -> None:
        if self.range is not None and not (self.range[0] <= value <= self.range[1]):
            kind = "integer" if self.fmt in ("int32", "int64") else "number"
            w.errors.append(out_of_range(path, value, kind, self.fmt))
        if self.multiple_of is not None and self.multiple_of > 0 and not _multiple(value, self.multiple_of):
            w.errors.append(not_multiple(path, value, self.multiple_of))
        if self.minimum is not None and (value <= self.minimum if self.exclusive_min else value < self.minimum):
            w.errors.append(below(path, value, self.minimum, self.exclusive_min))
        if self.maximum is not None and (value >= self.maximum if self.exclusive_max else value > self.maximum):
            w.errors.append(above(path, value, self.maximum, self.exclusive_max))


class QuantityNode(Node):
    """``resource.Quantity``: a number, or a string that parses as one (``500m``, ``1Gi``)."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__()
        self.types = frozenset({str, int, float})
        self.type_name = "string,number"

    def finish(self) -> None:
        self.leaf = False

    def walk(self, value: Any, path: str, w: Walk) -> None:
        if not self.check_type(value, path, w):
            return
        if type(value) is str:
            try:
                parse_quantity(value)
            except ValueError as e:
                w.bad_type(invalid_value(path, value, str(e)))


class ObjectNode(Node):
    """An object: known ``properties``, a map (``additionalProperties``), or free-form (preserve)."""

    __slots__ = (
        "absent_nulls",
        "additional",
        "defaults",
        "max_props",
        "meta_fields",
        "min_props",
        "preserve",
        "props",
        "required",
        "rules",
        "tail",
    )

    def __init__(self) -> None:
        super().__init__()
        self.types = frozenset({dict})
        self.type_name = "object"
        self.props: dict[str, Node] = {}
        self.additional: Node | None = None
        self.preserve = False         # unknown fields are kept and not reported
        self.meta_fields: frozenset[str] = frozenset()  # never unknown (apiVersion/kind/metadata of resources)
        self.required: tuple[str, ...] = ()
        self.defaults: tuple[tuple[str, Any, bool], ...] = ()  # (property, default, property nullable)
        self.absent_nulls = False     # built-in kinds: a null is an absent field, as Go decoding treats it
        self.min_props: int | None = None
        self.max_props: int | None = None
        self.rules: tuple[Rule, ...] = ()
        self.tail = False  # anything to check once the fields are walked

    def finish(self) -> None:
        super().finish()
        self.defaults = tuple((k, n.default, n.nullable) for k, n in self.props.items() if n.has_default)
        self.tail = bool(self.required or self.rules or self.common or self.min_props is not None
                         or self.max_props is not None)
        self.leaf = self.leaf and self.preserve and not (
            self.props or self.additional or self.required or self.defaults or self.rules
            or self.min_props is not None or self.max_props is not None)

    def walk(self, value: Any, path: str, w: Walk) -> None:
        if type(value) is not dict:
            w.bad_type(self.type_error(value, path))
            return
        if self.defaults and w.defaults:
            for key, default, nullable in self.defaults:
                if key not in value or (value[key] is None and not nullable):
                    value[key] = copy_json(default)
        prefix = f"{path}." if path else ""   # child_prefix(path), without a call per object walked
        props = self.props
        additional = self.additional
        drop: list[str] | None = None
        for key, child in value.items():
            node = props.get(key, additional)
            if node is None:
                if self.preserve or key in self.meta_fields:
                    continue
                w.unknown.append(prefix + key)
                if w.prune:
                    drop = drop or []
                    drop.append(key)
                continue
            if child is None:
                if self._null(value, key, node, prefix, w):
                    drop = drop or []
                    drop.append(key)
                continue
            if node.leaf:
                t = type(child)
                if t in node.types:
                    continue
                if t is float and node.int_ok and child.is_integer():
                    if w.prune:  # changing the value: store 2.0 as 2, as Go's int64 decoding does
                        value[key] = int(child)
                    continue
                w.bad_type(node.type_error(child, prefix + key))
                continue
            node.walk(child, prefix + key, w)
        if drop:
            for key in drop:
                del value[key]
        if self.tail:
            self._after(value, path, prefix, w)

    def _null(self, value: dict, key: str, node: Node, prefix: str, w: Walk) -> bool:
        """Handle ``key: null``; True when the walk should delete the key."""
        if self.absent_nulls:  # built-in kinds: Go decoding drops it
            return w.prune
        if node.nullable:
            return False
        if node.has_default and w.defaults:  # only map values get here: properties were defaulted above
            value[key] = copy_json(node.default)
            node.walk(value[key], prefix + key, w)
            return False
        if w.prune:  # PruneNonNullableNullsWithoutDefaults
            return True
        w.bad_type(node.type_error(None, prefix + key))
        return False

    def _after(self, value: dict, path: str, prefix: str, w: Walk) -> None:
        """What needs the object's fields settled: required, property counts, enum/combinators, rules."""
        for key in self.required:
            if key not in value or (self.absent_nulls and value[key] is None):
                w.errors.append(missing(prefix + key))
        if self.min_props is not None and len(value) < self.min_props:
            w.errors.append(too_few_properties(path, len(value), self.min_props))
        if self.max_props is not None and len(value) > self.max_props:
            w.errors.append(too_many_properties(path, len(value), self.max_props))
        if self.common:
            self.check_common(value, path, w)
        if self.rules and w.rules:
            w.deferred.append((self.rules, value, path))


class ArrayNode(Node):
    """A list whose ``items`` share one schema, with its size and uniqueness constraints."""

    __slots__ = ("items", "max_items", "min_items", "unique")

    def __init__(self) -> None:
        super().__init__()
        self.types = frozenset({list})
        self.type_name = "array"
        self.items: Node | None = None
        self.min_items: int | None = None
        self.max_items: int | None = None
        self.unique = False

    def finish(self) -> None:
        super().finish()
        self.leaf = False

    def walk(self, value: Any, path: str, w: Walk) -> None:
        if type(value) is not list:
            w.bad_type(self.type_error(value, path))
            return
        node = self.items
        if node is not None:
            if node.leaf:
                types = node.types
                for i, item in enumerate(value):
                    t = type(item)
                    if t in types:
                        continue
                    if t is float and node.int_ok and item.is_integer():
                        if w.prune:
                            value[i] = int(item)
                    elif item is None and node.has_default and w.defaults:
                        value[i] = copy_json(node.default)
                    else:
                        w.bad_type(node.type_error(item, child_path(path, i)))
            else:
                for i, item in enumerate(value):
                    if item is None:
                        if node.nullable:
                            continue
                        if not (node.has_default and w.defaults):
                            w.bad_type(node.type_error(None, child_path(path, i)))
                            continue
                        value[i] = copy_json(node.default)
                    node.walk(value[i], f"{path}[{i}]", w)   # child_path(path, i), without a call per item
        if self.min_items is not None and len(value) < self.min_items:
            w.errors.append(too_few_items(path, len(value), self.min_items))
        if self.max_items is not None and len(value) > self.max_items:
            w.errors.append(too_many_items(path, len(value), self.max_items))
        if self.unique and _has_duplicates(value):
            w.errors.append(duplicate_items(path))
        if self.common:
            self.check_common(value, path, w)


# --- helpers ----------------------------------------------------------------------------------------

def _same(a: Any, b: Any) -> bool:
    """JSON equality: 1 == 1.0 but True != 1."""
    if type(a) is bool or type(b) is bool:
        return type(a) is type(b) and a == b
    return a == b


def _multiple(value: float | int, factor: float | int) -> bool:
    """kube-openapi's multipleOf: exact for integers, within 1e-9 (relative) for floats."""
    if type(value) is int and type(factor) is int:
        return value % factor == 0
    ratio = (1 / factor) * value if factor < 1 else value / factor
    nearest = round(ratio)
    return ratio == nearest or abs(ratio - nearest) / max(abs(ratio) + abs(nearest), 1e-300) < 1e-9


def _in_enum(value: Any, enum: list[Any]) -> bool:
    return any(_same(value, e) for e in enum)


def _has_duplicates(items: list[Any]) -> bool:
    seen: list[Any] = []
    for item in items:
        if any(_same(item, s) for s in seen):
            return True
        seen.append(item)
    return False


def _passes(node: Node, value: Any, path: str) -> tuple[bool, list[FieldError]]:
    """Whether ``value`` satisfies ``node`` alone, without changing it (no pruning, no defaults, no rules)."""
    trial = Walk(prune=False, defaults=False, rules=False)
    node.walk(value, path, trial)
    return not trial.errors, trial.errors


def _combinators(node: Node, value: Any, path: str, w: Walk) -> None:
    """anyOf / oneOf / allOf / not, reported as kube-openapi reports them."""
    if node.any_of:
        failures: list[list[FieldError]] = []
        for sub in node.any_of:
            ok, errs = _passes(sub, value, path)
            if ok:
                break
            failures.append(errs)
        else:
            w.errors.append(any_of_failed(path))
            w.errors.extend(min(failures, key=len))
    if node.one_of:
        results = [_passes(sub, value, path) for sub in node.one_of]
        matched = sum(1 for ok, _ in results if ok)
        if matched != 1:
            w.errors.append(one_of_failed(path, matched))
            if matched == 0:
                w.errors.extend(min((errs for _, errs in results), key=len))
    if node.all_of:
        matched = 0
        for sub in node.all_of:
            ok, errs = _passes(sub, value, path)
            matched += ok
            w.errors.extend(errs)
        if matched != len(node.all_of):
            w.errors.append(all_of_failed(path, matched))
    if node.not_ is not None and _passes(node.not_, value, path)[0]:
        w.errors.append(not_failed(path))
