"""Kubernetes' own kinds: their definitions compiled once per process, with the rules attached.

The first use compiles what it needs (a pod pulls in about a hundred definitions: tens of milliseconds);
:func:`warm` does it ahead of time, so a server compiles nothing per request.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

from mxjob_controller.kube import k8s_schemas
from mxjob_controller.kube.field_errors import FieldError
from mxjob_controller.kube.schema.compiled import CompiledSchema
from mxjob_controller.kube.schema.compiler import BUILTIN, Compiler
from mxjob_controller.kube.schema.rules import load as load_rules
from mxjob_controller.kube.schema.rules import rules_for

#: Definitions whose missing fields the API server's ObjectMeta validation reports, in kube's words
#: (``uid must not be empty``): the schema's ``required`` would only say it twice.
REQUIRED_ELSEWHERE = frozenset({"io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference"})


@functools.cache
def compiler() -> Compiler:
    """The process-wide compiler of built-in definitions (rules loaded first, so nodes carry them)."""
    load_rules()
    return Compiler(BUILTIN, k8s_schemas.definitions(), rules_for, required_elsewhere=REQUIRED_ELSEWHERE)


@functools.cache
def definition_schema(name: str) -> CompiledSchema:
    """The compiled schema of a definition (``io.k8s.api.core.v1.PodTemplateSpec``); KeyError if unknown."""
    return CompiledSchema(compiler().definition(name))


@functools.cache
def object_schema(api_version: str, kind: str) -> CompiledSchema | None:
    """The compiled schema of a built-in kind (``v1``, ``Pod``), or None if Kubernetes has no such kind."""
    group, _, version = api_version.rpartition("/")
    name = k8s_schemas.definition_name(group, version, kind)
    return definition_schema(name) if name else None


def warm(kinds: Iterable[tuple[str, str]]) -> None:
    """Compile the schemas of ``(apiVersion, kind)`` pairs now rather than on first use."""
    for api_version, kind in kinds:
        object_schema(api_version, kind)


def validate_definition(name: str, value: Any, path: str = "") -> list[FieldError]:
    """Every problem with ``value`` as an object of definition ``name``, with paths under ``path``.

    Checks types, formats and required fields, and applies the rules of every nested definition (for a
    ``PodTemplateSpec``: container names, port names, env var names...). Unknown fields are not errors here
    (callers that care read ``definition_schema(name).apply(value).unknown``). ``value`` is not changed.
    """
    return definition_schema(name).apply(value, path).errors


def validate_object(obj: dict) -> list[FieldError]:
    """Every problem with a whole built-in object, found by its ``apiVersion`` and ``kind``.

    Object metadata rules that depend on the kind's scope and name format are the server's
    (``validation.meta``), not checked here. ValueError if the kind is not a built-in one.
    """
    schema = object_schema(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
    if schema is None:
        raise ValueError(f"no built-in kind {obj.get('apiVersion')}/{obj.get('kind')}")
    return schema.apply(obj).errors
