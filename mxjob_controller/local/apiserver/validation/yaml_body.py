"""YAML request bodies decoded as kube-apiserver decodes them: YAML turned into JSON (``sigs.k8s.io/yaml``).

Guarantee: what :func:`loads_yaml` returns is JSON data (dicts with string keys, lists, strings, finite numbers,
booleans, None), so the store can always serve it. Where PyYAML's safe loader would build something else, the
value is what kube ends up with:

- timestamps (``2020-01-01``, ``!!timestamp``) stay the text written, as go-yaml hands them to ``interface{}``;
- ``!!binary`` is its decoded text, ``!!set`` a map of nulls, as go-yaml reads them;
- map keys that are not strings are written as JSON writes them (``1`` → ``"1"``, ``true`` → ``"true"``);
- ``.nan`` and ``.inf`` have no JSON form: ValueError, as Go's JSON encoder refuses them.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from typing import Any

import yaml

_TIMESTAMP = "tag:yaml.org,2002:timestamp"


class KubeYAMLLoader(yaml.SafeLoader):
    """The safe loader without the timestamp resolver, with go-yaml's reading of binary and sets."""


KubeYAMLLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _scalar_text(loader: yaml.SafeLoader, node: yaml.Node) -> str:
    return str(loader.construct_scalar(node))


def _binary_text(loader: yaml.SafeLoader, node: yaml.Node) -> str:
    text = str(loader.construct_scalar(node))
    try:
        return base64.decodebytes(text.encode("ascii")).decode("utf-8", "replace")
    except (binascii.Error, UnicodeEncodeError) as e:
        raise yaml.constructor.ConstructorError(None, None, f"failed to decode base64 data: {e}",
                                                node.start_mark) from e


def _set_as_map(loader: yaml.SafeLoader, node: yaml.Node) -> dict:
    return dict.fromkeys(loader.construct_mapping(node))


KubeYAMLLoader.add_constructor(_TIMESTAMP, _scalar_text)
KubeYAMLLoader.add_constructor("tag:yaml.org,2002:binary", _binary_text)
KubeYAMLLoader.add_constructor("tag:yaml.org,2002:set", _set_as_map)


def loads_yaml(body: bytes) -> Any:
    """The body as JSON data. Raises ``yaml.YAMLError`` for bad YAML, ValueError for what JSON cannot carry."""
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
