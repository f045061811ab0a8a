"""Each replica's pod template checked against Kubernetes' own PodTemplateSpec schema.

A typo such as ``containerPort: "abc"`` is then reported when the job is validated, at its full path
(``spec.mxReplicaSpecs.Worker.template.spec.containers[0].ports[0].containerPort``), before any pod is
attempted. The check is the embedded API server's (``kube.schema``): types, formats, required fields
and the rules Go validation adds (container, port and env var names...), with kube's messages.
"""

from __future__ import annotations

from typing import Any

from mxjob_controller.kube.field_errors import FieldError
from mxjob_controller.kube.schema import validate_definition
from mxjob_controller.kube.schema.rules.pods import POD_TEMPLATE_SPEC


def pod_template_schema_errors(template: Any, path: str) -> list[FieldError]:
    """Schema problems of ``template`` (a PodTemplateSpec), paths under ``path``; ``template`` is not changed."""
    return validate_definition(POD_TEMPLATE_SPEC, template, path)
