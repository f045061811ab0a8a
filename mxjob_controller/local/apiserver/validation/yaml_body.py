"""YAML request bodies decoded as kube-apiserver decodes them: YAML turned into JSON (``sigs.k8s.io/yaml``).

Guarantee: what :func:`loads_yaml` returns is JSON data (dicts with string keys, lists, strings, finite numbers,
booleans, None), so the store can always serve it. Where PyYAML's safe loader would build something else, the
value is what kube ends up with:

- timestamps (``2020-01-01``, ``!!timestamp``) stay the text written, as go-yaml hands them to ``interface{}``;
- ``!!binary`` is its decoded text, ``!!set`` a map of nulls, as go-yaml reads them;
- map keys that are not strings are written as JSON writes them (``1`` → ``"1"``, ``true`` → ``"true"``);
- ``.nan`` and ``.inf`` have no JSON form: ValueError, as Go's JSON encoder refuses them.

Aliases are limited as go-yaml limits them (``decode.go``, v2 and v3): each node an alias expands counts, and
once more than 100 of the decoded nodes (and 1,000 in all) came through aliases, their share may not pass
99% (up to 400,000 nodes decoded, falling to 10% at 4,000,000): ``yaml: document contains excessive
aliasing``. A "billion laughs" of a few hundred bytes is refused after a few thousand nodes, unexpanded. An
anchor used inside itself is refused too (``yaml: anchor 'a' value contains itself``). Nesting, aliases
expanded, is limited to the JSON limit (:data:`strict_json.MAX_DEPTH`; go-yaml's is 10,000). One limit go-yaml
lacks: the text of the scalars, aliases expanded, may not pass the request body limit (3 MiB), since a body of
long strings each aliased a hundred times passes go-yaml's ratio and would be built in memory whole before the
stored-object limit refuses it (``yaml: document expands past 3145728 bytes``).

Every YAML body is read by these rules: a resource's body and a server-side apply's. The text is scanned and
parsed by libyaml (PyYAML's C parser: the pure-Python one cost ~8 µs of CPU per byte); the nodes are composed
here, where the limits are counted, and constructed by PyYAML's safe constructor.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.cyaml import CParser
from yaml.resolver import Resolver

from mxjob_controller.local.apiserver.request import MAX_BODY_BYTES
from mxjob_controller.local.apiserver.validation import strict_json
from mxjob_controller.local.apiserver.validation.strict_json import MAX_DEPTH

_TIMESTAMP = "tag:yaml.org,2002:timestamp"
# go-yaml's alias budget (decode.go: allowedAliasRatio): the share of decoded nodes that may come from aliases.
_ALIAS_RATIO_LOW, _ALIAS_RATIO_HIGH = 400_000, 4_000_000


class YAMLLimitError(yaml.YAMLError):
    """A YAML body over the alias or depth limits, worded as go-yaml words it."""


def _allowed_alias_ratio(decoded: int) -> float:
    if decoded <= _ALIAS_RATIO_LOW:
        return 0.99
    if decoded >= _ALIAS_RATIO_HIGH:
        return 0.10
    return 0.99 - 0.89 * (decoded - _ALIAS_RATIO_LOW) / (_ALIAS_RATIO_HIGH - _ALIAS_RATIO_LOW)


class _LimitedComposer(Composer):
    """PyYAML's composer, counting what the expansion of aliases would cost and refusing before it is paid.

    PyYAML builds an alias as a reference to the anchored node: composing is linear, the expansion comes
    later, when the result is copied into JSON data. So the composer counts what the expansion would cost,
    from each node's expanded size, depth and scalar bytes (kept per node, an alias adds its target's), and
    refuses before anything is expanded.
    """

    def __init__(self) -> None:
        super().__init__()
        self._shapes: dict[yaml.Node, tuple[int, int, int]] = {}  # each node: (nodes, depth, scalar bytes) expanded
        self._level = 0  # collections open around the node being composed
        self._decoded = 0  # go-yaml's decodeCount: every node, each alias's expansion included
        self._aliased = 0  # go-yaml's aliasCount: the nodes that came through an alias
        self._bytes = 0  # the scalars' text, aliases expanded

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            target = self.anchors.get(event.anchor)
            if target is not None:  # else the composer reports the undefined alias
                self._count_alias(event, target)
            return super().compose_node(parent, index)
        collection = isinstance(event, yaml.SequenceStartEvent | yaml.MappingStartEvent)
        if collection:
            self._level += 1
            if self._level > MAX_DEPTH:
                raise YAMLLimitError(f"yaml: line {event.start_mark.line + 1}: exceeded max depth of {MAX_DEPTH}")
        node = super().compose_node(parent, index)
        if collection:
            self._level -= 1
        self._decoded += 1
        self._check_aliasing()
        shape = self._shapes[node] = self._shape(node)
        if not collection:
            self._add_bytes(shape[2])
        return node

    def _count_alias(self, event: yaml.AliasEvent, target: yaml.Node) -> None:
        shape = self._shapes.get(target)
        if shape is None:  # still being composed: the alias is inside its own anchor
            raise YAMLLimitError(f"yaml: anchor '{event.anchor}' value contains itself")
        nodes, depth, size = shape
        self._decoded += 1 + nodes
        self._aliased += nodes
        self._check_aliasing()
        if self._level + depth > MAX_DEPTH:
            raise YAMLLimitError(f"yaml: line {event.start_mark.line + 1}: exceeded max depth of {MAX_DEPTH}")
        self._add_bytes(size)

    def _check_aliasing(self) -> None:
        if (self._aliased > 100 and self._decoded > 1000
                and self._aliased / self._decoded > _allowed_alias_ratio(self._decoded)):
            raise YAMLLimitError("yaml: document contains excessive aliasing")

    def _add_bytes(self, size: int) -> None:
        self._bytes += size
        if self._bytes > MAX_BODY_BYTES:
            raise YAMLLimitError(f"yaml: document expands past {MAX_BODY_BYTES} bytes")

    def _shape(self, node: yaml.Node) -> tuple[int, int, int]:
        if isinstance(node, yaml.MappingNode):
            children = [child for pair in node.value for child in pair]
        elif isinstance(node, yaml.SequenceNode):
            children = node.value
        else:
            return 1, 0, len(node.value)
        shapes = [self._shapes[child] for child in children]
        return (1 + sum(n for n, _, _ in shapes), 1 + max((d for _, d, _ in shapes), default=0),
                sum(b for _, _, b in shapes))


class KubeYAMLLoader(_LimitedComposer, CParser, SafeConstructor, Resolver):
    """libyaml's parser, the limited composer, the safe constructor without the timestamp resolver, and go-yaml's
    reading of binary and sets."""

    def __init__(self, stream: Any) -> None:
        CParser.__init__(self, stream)
        _LimitedComposer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)


KubeYAMLLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP]
    for first, resolvers in Resolver.yaml_implicit_resolvers.items()
}


def _scalar_text(loader: SafeConstructor, node: yaml.Node) -> str:
    return str(loader.construct_scalar(node))


def _binary_text(loader: SafeConstructor, node: yaml.Node) -> str:
    text = str(loader.construct_scalar(node))
    try:
        return base64.decodebytes(text.encode("ascii")).decode("utf-8", "replace")
    except (binascii.Error, UnicodeEncodeError) as e:
        raise yaml.constructor.ConstructorError(None, None, f"failed to decode base64 data: {e}",
                                                node.start_mark) from e


def _set_as_map(loader: SafeConstructor, node: yaml.Node) -> dict:
    return dict.fromkeys(loader.construct_mapping(node))


KubeYAMLLoader.add_constructor(_TIMESTAMP, _scalar_text)
KubeYAMLLoader.add_constructor("tag:yaml.org,2002:binary", _binary_text)
KubeYAMLLoader.add_constructor("tag:yaml.org,2002:set", _set_as_map)


def loads_yaml(body: bytes) -> Any:
    """The body as JSON data. Raises ``yaml.YAMLError`` for bad YAML, ValueError for what JSON cannot carry.

    A body that is JSON (kubectl sends its server-side applies so) is read as JSON: JSON is YAML, and the C decoder
    takes it some 200 times faster than composing its nodes; its numbers are also read as go-yaml reads them
    (``1.5e3`` a number, where PyYAML's YAML 1.1 resolver keeps such a float a string). Anything else, or JSON that
    the strict decoder refuses (NaN, past the depth limit), is read as YAML."""
    if body.lstrip()[:1] == b"{":
        try:
            return strict_json.loads(body)
        except ValueError:   # not JSON after all (a YAML flow mapping, say): YAML decides
            pass
    return _as_json(yaml.load(body, Loader=KubeYAMLLoader))


def _as_json(value: Any) -> Any:
    if isinstance(value, dict):
        return {k if isinstance(k, str) else _key_text(k): _as_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_as_json(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"json: unsupported value: {value}")
    if value is None or isinstance(value, str | int | float):
        return value
    raise ValueError(f"json: unsupported type: {type(value).__name__}")


def _key_text(key: Any) -> str:
    if key is None or isinstance(key, bool | int | float):
        return json.dumps(key)
    raise ValueError(f"json: unsupported map key: {key!r}")
