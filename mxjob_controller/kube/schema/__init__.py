"""Schema validation as kube-apiserver does it: built-in kinds and custom resources.

Public surface (everything else is internal):

- :func:`validate_definition` ``(name, value, path)``: every problem with a value of a Kubernetes
  definition, e.g. ``validate_definition("io.k8s.api.core.v1.PodTemplateSpec", tmpl,
  "spec.mxReplicaSpecs.Worker.template")``, including the checks Go validation makes (container, port
  and env var names...), with kube's field paths and messages.
- :func:`validate_object` ``(obj)``: the same for a whole built-in object, by ``apiVersion``/``kind``.
- :func:`object_schema` / :func:`definition_schema`: the compiled schema, whose ``apply(value, prune=,
  defaults=, rules=)`` also reports unknown fields and can prune them (what the API server uses).
- :func:`compile_structural` ``(openAPIV3Schema)``: a CRD version's schema, compiled once; its ``apply``
  prunes unknown fields, applies ``default``s and validates, as for structural schemas.

Every compiled schema is cached or held by its caller; nothing is compiled per request.
"""

from mxjob_controller.kube.schema.builtin import (
    definition_schema,
    object_schema,
    validate_definition,
    validate_object,
    warm,
)
from mxjob_controller.kube.schema.compiled import CompiledSchema, Result
from mxjob_controller.kube.schema.rules import rule
from mxjob_controller.kube.schema.structural import compile_structural

__all__ = [
    "CompiledSchema",
    "Result",
    "compile_structural",
    "definition_schema",
    "object_schema",
    "rule",
    "validate_definition",
    "validate_object",
    "warm",
]
