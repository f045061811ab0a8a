"""Kubernetes' own object schemas, as shipped by the ``kubernetes-validate`` package.

One loader for everything that needs the built-in schemas: the embedded API server's validation and
OpenAPI documents, and the MXJob CRD generator (which inlines the PodTemplateSpec schema). Definitions
are loaded once per (version, strictness) and shared read-only.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import re
from pathlib import Path
from typing import Any

#: The Kubernetes minor version whose schemas we serve and validate against. It matches the version the
#: embedded API server reports, so ``kubectl`` of that minor version sees no skew.
KUBE_VERSION = "1.32"

Definitions = dict[str, dict[str, Any]]


def _schema_root() -> Path:
    """The package's schema folder, found without importing the package: importing it loads ``jsonschema`` and
    more, a seventh of a second of CPU that the server's start does not need (issue 48)."""
    spec = importlib.util.find_spec("kubernetes_validate")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the kubernetes-validate package is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "kubernetes-json-schema"


@functools.cache
def schema_version(desired: str = KUBE_VERSION) -> str:
    """The newest schema directory version not newer than ``desired`` (e.g. "1.32.0")."""
    have = []
    for entry in _schema_root().iterdir():
        m = re.fullmatch(r"v(\d+)\.(\d+)\.(\d+)-local", entry.name)
        if m:
            have.append(tuple(int(x) for x in m.groups()))
    want = tuple(int(x) for x in desired.split(".")[:2])
    fitting = sorted(v for v in have if v[:2] <= want)
    if not fitting:
        raise RuntimeError(f"kubernetes-validate ships no schemas for Kubernetes {desired} or older")
    return ".".join(str(x) for x in fitting[-1])


@functools.cache
def definitions(strict: bool = False, desired: str = KUBE_VERSION) -> Definitions:
    """Every definition, keyed by its OpenAPI name (``io.k8s.api.core.v1.Pod``).

    ``strict`` schemas forbid unknown properties (``additionalProperties: false``); refs point at
    ``#/$defs/<name>``.
    """
    folder = f"v{schema_version(desired)}-local" + ("-strict" if strict else "")
    raw = _schema_root().joinpath(folder, "_definitions.json").read_text()
    return json.loads(raw)["$defs"]


@functools.cache
def gvk_index(desired: str = KUBE_VERSION) -> dict[tuple[str, str, str], str]:
    """(group, version, kind) → definition name, from the ``x-kubernetes-group-version-kind`` markers."""
    out: dict[tuple[str, str, str], str] = {}
    for name, schema in definitions(False, desired).items():
        for gvk in schema.get("x-kubernetes-group-version-kind") or ():
            out[(gvk.get("group", ""), gvk.get("version", ""), gvk.get("kind", ""))] = name
    return out


def definition_name(group: str, version: str, kind: str) -> str | None:
    return gvk_index().get((group, version, kind))


def ref_name(ref: str) -> str:
    """``#/$defs/io.k8s.api.core.v1.Pod`` (or any ``.../<name>``) → ``io.k8s.api.core.v1.Pod``."""
    return ref.rsplit("/", 1)[-1]


def reachable(roots: list[str], defs: Definitions) -> list[str]:
    """Names of ``roots`` and every definition they reference, transitively, in discovery order."""
    seen: dict[str, None] = {}
    stack = list(reversed(roots))
    while stack:
        name = stack.pop()
        if name in seen or name not in defs:
            continue
        seen[name] = None
        stack.extend(reversed(_refs(defs[name])))
    return list(seen)


def _refs(node: Any) -> list[str]:
    out: list[str] = []
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):  # a property may itself be named "$ref" (JSONSchemaProps)
            out.append(ref_name(ref))
        for v in node.values():
            out.extend(_refs(v))
    elif isinstance(node, list):
        for v in node:
            out.extend(_refs(v))
    return out
