"""Custom resources: a CRD version's ``openAPIV3Schema`` compiled for pruning, defaulting and validation."""

from __future__ import annotations

from typing import Any

from mxjob_controller.kube.schema.builtin import compiler as builtin_compiler
from mxjob_controller.kube.schema.compiled import CompiledSchema
from mxjob_controller.kube.schema.compiler import OBJECT_META, STRUCTURAL, Compiler
from mxjob_controller.kube.schema.nodes import ObjectNode


def compile_structural(schema: dict[str, Any] | None) -> CompiledSchema:
    """Compile one CRD version's schema. Callers cache the result per CRD version (it is immutable).

    The root is a resource: ``apiVersion``, ``kind`` and ``metadata`` are never pruned, and ``metadata``
    is checked and pruned as ObjectMeta (kube-apiserver decodes it into the Go type), whatever the schema
    declares for it. Without a schema every field is kept.
    """
    compiler = Compiler(STRUCTURAL, object_meta=lambda: builtin_compiler().definition(OBJECT_META))
    root = compiler.compile(schema) if schema else None
    if not isinstance(root, ObjectNode):
        root = ObjectNode()
        root.preserve = True
    compiler.make_resource(root, require_type_meta=False)
    root.finish()
    return CompiledSchema(root, sort_unknown=True)
