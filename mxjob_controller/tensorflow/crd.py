"""The TFJob CustomResourceDefinition (``tfjobs.kubeflow.org``), generated like MXJob's from the shared pieces of
``kubeflow_api/crd.py``; ``hack/gen_crd.py`` writes it beside MXJob's.

Both shapes are in one structural schema, so the API server prunes neither: ``spec.runPolicy`` (training-operator
1.9) and the same fields inline in ``spec`` (tf-operator v1.0, the vendor's 2019 bodies: ``backoffLimit``,
``ttlSecondsAfterFinished``...), ``successPolicy`` and ``enableDynamicWorker``. ``tfReplicaSpecs`` is a map whose
keys are the validator's business (``Ps`` and ``PS`` alike), as MXJob's. One served version, ``v1``, with a status
subresource and the State/Age columns; ``managedBy`` immutable by the same CEL rule as MXJob's.
"""

from __future__ import annotations

from typing import Any

from mxjob_controller.kubeflow_api.constants import SUCCESS_POLICIES
from mxjob_controller.kubeflow_api.crd import (
    MANAGED_BY_IMMUTABLE,
    REPLICA_STATUSES_DESCRIPTION,
    CRDNames,
    job_crd,
    openapi_schema,
    replica_spec_schema,
    run_policy_places,
    status_schema,
)
from mxjob_controller.tensorflow import api

TFJOB_NAMES = CRDNames(api.KIND, api.LIST_KIND, api.PLURAL, api.SINGULAR, api.SHORT_NAMES, api.VERSIONS)


def spec_schema() -> dict[str, Any]:
    places = run_policy_places(api.DEFAULT_CLEAN_POD_POLICY)
    properties = {
        "tfReplicaSpecs": {
            "type": "object", "minProperties": 1,
            "additionalProperties": replica_spec_schema("Chief and Master take exactly 1.", extra={}),
            "description": "Replica type (Chief, Master, PS, Worker or Evaluator; any case, e.g. Ps) to its replica "
                           "spec. Every job needs a Chief, a Master or a Worker; not both Chief and Master."},
        "runPolicy": places.pop("runPolicy"),
        "successPolicy": {"description": '"" (worker 0 decides when there is no Chief/Master) or AllWorkers '
                                         "(every Worker must succeed).", "type": "string",
                          "enum": list(SUCCESS_POLICIES)},
        "enableDynamicWorker": {"description": "Workers may come and go: each gets a sparse TF_CONFIG, and a "
                                               "failed Worker does not fail the job.", "type": "boolean"},
        **places,
    }
    return {"type": "object", "required": ["tfReplicaSpecs"], "properties": properties,
            "x-kubernetes-validations": [dict(MANAGED_BY_IMMUTABLE)]}


def tfjob_crd() -> dict[str, Any]:
    """The TFJob CRD object (a fresh one per call)."""
    schema = openapi_schema("A distributed TensorFlow training job.", spec_schema(),
                            status_schema({"replicaStatuses": REPLICA_STATUSES_DESCRIPTION}))
    return job_crd(TFJOB_NAMES, schema)
